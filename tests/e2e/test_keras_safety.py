"""Keras models and what loading them runs (issue 58, docs/security.md#keras): every file is written by keras
itself (Keras 3; the JAX backend, as test_formats.py uses), and each harmful case is first shown to hurt the loader
it targets, with a side effect that only touches a marker file in the test's temporary folder.

- A Lambda layer's marshalled bytecode, saved `.keras` and `.h5`: `keras.models.load_model(safe_mode=False)` runs it
  (and so does any Keras before 3.11.3 for `.h5`, safe_mode or not: CVE-2025-9905); precdetect says `unsafe`,
  `serialized_function`, naming the layer.
- A config naming a function of a module outside Keras (CVE-2025-1550's shape, Keras before 3.9 imported it):
  judged as a pickle's global, `unsafe` for `os.system`, `unverified` for a name on no list. The installed Keras
  (3.15.1) refuses these, which the test checks; that older ones call them rests on the advisory.
- Benign models saved by keras (`.keras`, `.h5`, `.weights.h5`) are `safe`, and a `.keras` archive's weights are
  read as its `model.weights.h5` member, with float64 statistics equal to the model's own weights.
"""

import io
import json
import os
import unittest
import zipfile

import h5py
import numpy as np
import torch

from helpers import ScanTestCase, requires, scan, tensors_by_name

os.environ.setdefault("KERAS_BACKEND", "jax")
try:
    import keras
except ImportError:  # pragma: no cover - setup.sh installs keras
    keras = None

MARKER = "PRECDETECT_KERAS_MARKER"  # where the Lambda's code leaves its mark: a file in the test's folder


def marking_lambda():
    """A Lambda whose code creates the file named in $PRECDETECT_KERAS_MARKER: the side effect a real payload would
    replace with anything. Keras runs it whenever the layer is built on symbolic inputs, as loading does. Its code
    names only what the globals func_load gives it hold (`os`, the builtins): a name of this module would fail
    there, and Keras would swallow the failure."""
    return keras.layers.Lambda(lambda x: (open(os.environ["PRECDETECT_KERAS_MARKER"], "a").close(), x)[1],
                               name="marking")


def benign_model():
    inputs = keras.Input((8,))
    x = keras.layers.Dense(16, activation="relu", kernel_regularizer=keras.regularizers.L2(1e-3))(inputs)
    x = keras.layers.LayerNormalization()(x)
    x = keras.layers.Dropout(0.1)(x)
    outputs = keras.layers.Dense(4, activation="gelu")(x)
    model = keras.Model(inputs, outputs)
    rng = np.random.default_rng(58)
    for weight in model.weights:
        weight.assign(rng.standard_normal(weight.shape).astype(np.float32) * 3)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse", metrics=["mae"])
    return model


def saved_paths(layers):
    """(path, layer) as keras.saving names layers in model.weights.h5: by class, snake_case, numbered within the
    model (saving_lib's `_save_container_state`), never by the layer's own name."""
    from keras.src.utils.naming import to_snake_case
    used = {}
    for layer in layers:
        kind = to_snake_case(type(layer).__name__)
        used[kind] = used.get(kind, -1) + 1
        yield (kind if used[kind] == 0 else f"{kind}_{used[kind]}"), layer


def edited_keras(source, dest, edit):
    """A copy of the .keras archive `source` whose config.json `edit(config)` changed, members kept in order and
    stored, as keras writes them."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(dest, "w") as copy:
        for info in original.infolist():
            data = original.read(info)
            if info.filename == "config.json":
                config = json.loads(data)
                edit(config)
                data = json.dumps(config).encode()
            copy.writestr(info.filename, data)
    return dest


@requires(keras is not None, "keras")
class KerasSafety(ScanTestCase):
    def setUp(self):
        super().setUp()
        self.marker = self.tmp / "LAMBDA-RAN"
        os.environ[MARKER] = str(self.marker)

    def tearDown(self):
        os.environ.pop(MARKER, None)
        super().tearDown()

    def safety(self, path):
        code, document, _ = scan(path)
        self.assertEqual(code, 0, document)
        return document["models"][0]["safety"]

    def assertLoadingRuns(self, path):
        """keras.models.load_model(safe_mode=False) runs the Lambda's code; safe mode (Keras >= 3.11.3 for .h5)
        refuses it before it runs."""
        self.marker.unlink(missing_ok=True)
        keras.models.load_model(path, safe_mode=False)
        self.assertTrue(self.marker.exists(), f"loading {path.name} did not run the Lambda")
        self.marker.unlink()
        with self.assertRaises(ValueError):
            keras.models.load_model(path)
        self.assertFalse(self.marker.exists())

    def test_a_lambda_layer_is_unsafe_in_keras_and_h5_files(self):
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), marking_lambda()])
        for name, config in (("model.keras", "config.json"), ("model.h5", "model_config")):
            with self.subTest(name):
                path = self.tmp / name
                model.save(path)
                self.assertLoadingRuns(path)
                safety = self.safety(path)
                self.assertEqual(safety["verdict"], "unsafe", safety)
                [tampering] = safety["tampering"]
                self.assertEqual(tampering["kind"], "serialized_function")
                self.assertEqual(tampering["file"], f"{path}!{config}")
                self.assertEqual(tampering["detail"], "a Python lambda (`__lambda__`) in `marking` (Lambda), "
                                                      "at config.layers[2].config.function")
                self.assertTrue(safety["says"].startswith("unsafe: serialized_function ("), safety["says"])
                self.assertFalse(self.marker.exists())  # scanning ran nothing

    def test_a_function_named_from_a_module_outside_keras_is_judged_as_a_pickle_global(self):
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), keras.layers.Lambda(keras.ops.abs)])
        model.save(self.tmp / "plain.keras")
        self.assertEqual(self.safety(self.tmp / "plain.keras")["verdict"], "safe")  # keras.ops: Keras' own

        def naming(module, function):
            def edit(config):
                config["config"]["layers"][2]["config"]["function"] = {
                    "module": module, "class_name": "function", "config": function, "registered_name": None}
                config["config"]["layers"][2]["config"]["arguments"] = {"command": f"touch {self.marker}"}
            return edit

        for module, function, verdict, judged in (("os", "system", "unsafe", "dangerous"),
                                                   ("numpy", "sum", "unverified", "unknown")):
            with self.subTest(f"{module}.{function}"):
                path = edited_keras(self.tmp / "plain.keras", self.tmp / f"{module}.keras", naming(module, function))
                with self.assertRaises(TypeError):  # Keras >= 3.9 imports no module outside its own packages
                    keras.models.load_model(path, safe_mode=False)
                self.assertFalse(self.marker.exists())
                safety = self.safety(path)
                self.assertEqual(safety["verdict"], verdict, safety)
                [named] = safety["imports"]
                self.assertEqual((named["module"], named["name"], named["class"], named["called"]),
                                 (module, function, judged, True))
                self.assertEqual(named["file"], f"{path}!config.json")

    def test_a_custom_class_is_unverified_as_a_pickled_class_is(self):
        @keras.saving.register_keras_serializable(package="precdetect_test")
        class Doubler(keras.layers.Layer):
            def call(self, x):
                return x * 2

        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), Doubler()])
        model.save(self.tmp / "custom.keras")
        safety = self.safety(self.tmp / "custom.keras")
        self.assertEqual(safety["verdict"], "unverified", safety)
        self.assertEqual([(i["module"], i["name"], i["class"]) for i in safety["imports"]],
                         [(Doubler.__module__, "Doubler", "unknown")])

    def test_benign_models_saved_by_keras_are_safe(self):
        model = benign_model()
        paths = [self.tmp / "model.keras", self.tmp / "model.h5", self.tmp / "model.weights.h5"]
        model.save(paths[0])
        model.save(paths[1])
        model.save_weights(paths[2])
        for path in paths:
            with self.subTest(path.name):
                safety = self.safety(path)
                self.assertEqual(safety["verdict"], "safe", safety)
                self.assertEqual((safety["imports"], safety["tampering"], safety["unverified"]), ([], [], []))

    def test_a_keras_archive_weights_are_its_model_weights_h5(self):
        model = benign_model()
        model.save(self.tmp / "model.keras")
        model.save_weights(self.tmp / "model.weights.h5")
        with zipfile.ZipFile(self.tmp / "model.keras") as archive:
            self.assertEqual(archive.getinfo("model.weights.h5").compress_type, zipfile.ZIP_STORED)  # what keras writes
            with h5py.File(io.BytesIO(archive.read("model.weights.h5"))) as weights:
                stored = {}
                weights.visititems(lambda n, o: stored.update({n: o[()]}) if isinstance(o, h5py.Dataset) else None)
        code, document, _ = scan(self.tmp / "model.keras")
        self.assertEqual(code, 0, document)
        reported = document["models"][0]
        self.assertEqual(reported["format"], "keras")
        tensors = tensors_by_name(reported)
        self.assertEqual(set(tensors), set(stored))
        _, alone, _ = scan(self.tmp / "model.weights.h5")
        self.assertLessEqual(set(tensors_by_name(alone["models"][0])), set(tensors))  # named as *.weights.h5 are
        own = {f"layers/{path}/vars/{i}": weight.numpy()
               for path, layer in saved_paths(model.layers) for i, weight in enumerate(layer.weights)}
        self.assertEqual(len(own), 6)
        for name, values in own.items():
            np.testing.assert_array_equal(stored[name], values)
            self.assertTensorStats(tensors[name], torch.from_numpy(values.astype(np.float64)), name)
            self.assertEqual(tensors[name]["shape"], list(values.shape), name)
        optimizer = [name for name in tensors if name.startswith("optimizer/")]
        self.assertTrue(optimizer)
        self.assertTrue(all(tensors[name]["role"] == "optimizer" for name in optimizer), optimizer)


if __name__ == "__main__":
    unittest.main()

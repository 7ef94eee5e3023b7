"""`safe` over the whole input (issue 66): every file under an input is listed with one disposition, and a file a
loader could unpickle is judged wherever it lies (beside several models, in a sub-folder, in a folder of no
weights), whatever its name. Each harmful case is written by the real writer (pickle, torch.save, joblib,
transformers' Trainer), the test proves the real loader runs its payload (a marker file in the test's temp folder),
then that precdetect calls the input unsafe and --fail-if-unsafe exits 1, naming the file. The benign layouts the
libraries write (a Trainer's output folder with its checkpoints, the HF cache) keep their verdicts."""

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import torch
from safetensors.torch import save_file

from helpers import REPO, run, scan

INVENTORY_SCHEMA = json.loads((REPO / "tests" / "schemas" / "precdetect-inventory.schema.json").read_text())


class Payload:
    """Pickled, never unpickled here: loading it calls os.system, which touches `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def load_in_python(code):
    """Runs `code` in a fresh interpreter (the loader a user runs), so the payload's effect is the loader's."""
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=300)


# Each pickle beside the weights, with the real writer and the real loader that runs it.
WRITERS = {
    "evil.pkl": (lambda path, obj: path.write_bytes(pickle.dumps(obj)),
                 "import pickle; pickle.load(open({path!r}, 'rb'))"),
    "optimizer.pt": (lambda path, obj: torch.save({"state": {}, "param_groups": [], "hook": obj}, path),
                     "import torch; torch.load({path!r}, weights_only=False)"),
    "scaler.joblib": (lambda path, obj: __import__("joblib").dump({"scaler": obj}, path),
                      "import joblib; joblib.load({path!r})"),
    "training_args.bin": (lambda path, obj: torch.save(obj, path),
                          "import torch; torch.load({path!r}, weights_only=False)"),
}


class Layouts(unittest.TestCase):
    """The layouts that passed --fail-if-unsafe before issue 66."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.marker = self.tmp / "marker"

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def plant(self, path):
        """Writes the payload at `path` with its real writer; proves its real loader runs it; returns the path."""
        write, load = WRITERS[path.name]
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path, Payload(self.marker))
        load_in_python(load.format(path=str(path)))
        self.assertTrue(self.marker.exists(), f"{path.name}: the loader did not run the payload")
        self.marker.unlink()
        return path

    def assertUnsafeNaming(self, args, planted, code_without_gate=None):
        """--fail-if-unsafe exits 1, the gate's reason and the JSON name `planted`, and nothing ran."""
        code, document, stderr = scan("--fail-if-unsafe", *args)
        self.assertEqual(code, 1, stderr)
        failing = [m for m in document["models"] if m["gate_failures"]]
        self.assertTrue(failing, document)
        self.assertTrue(any(str(planted) in " ".join(m["gate_failures"]) for m in failing), failing)
        listed = [entry for m in document["models"] for entry in (m["inventory"] or {"files": []})["files"]
                  if entry["file"] == str(planted)]
        state = planted.name in ("optimizer.pt", "training_args.bin")  # the trainer's state, by its name
        self.assertEqual([(e["disposition"], e["verdict"]) for e in listed],
                         [("training_state" if state else "judged", "unsafe")], [m["inventory"] for m in document["models"]])
        self.assertFalse(self.marker.exists())
        return document

    def two_models(self, name):
        folder = self.tmp / name
        folder.mkdir()
        save_file({"w": torch.ones(4)}, folder / "a.safetensors")
        save_file({"w": torch.zeros(4)}, folder / "b.safetensors")
        return folder

    def test_a_pickle_beside_two_independent_models(self):
        for name in WRITERS:
            with self.subTest(name):
                folder = self.two_models(f"beside-{name}")
                planted = self.plant(folder / name)
                document = self.assertUnsafeNaming([folder], planted)
                # The models are still scanned, each as itself.
                self.assertEqual(sorted(Path(m["input"]).name for m in document["models"]),
                                 ["a.safetensors", "b.safetensors"])
                self.assertTrue(all(m["error"] is None for m in document["models"]))

    def test_optimizer_state_in_a_checkpoint_folder(self):
        out = self.tmp / "out"
        out.mkdir()
        save_file({"w": torch.ones(4)}, out / "model.safetensors")
        planted = self.plant(out / "checkpoint-500" / "optimizer.pt")
        self.assertUnsafeNaming([out], planted)
        self.assertUnsafeNaming(["--recursive", out], planted)

    def test_a_folder_of_no_weights_but_a_pickle(self):
        folder = self.tmp / "nothing"
        planted = self.plant(folder / "evil.pkl")
        code, document, _ = scan(folder)
        self.assertEqual(document["models"][0]["error"]["code"], "no_weights")
        self.assertEqual(document["models"][0]["safety"]["verdict"], "unsafe")
        self.assertUnsafeNaming([folder], planted)


    def test_a_trainer_output_folder_with_a_poisoned_checkpoint(self):
        out = trainer_output(self.tmp / "out")
        checkpoint = sorted(out.glob("checkpoint-*"))[0]
        (checkpoint / "optimizer.pt").unlink()
        planted = self.plant(checkpoint / "optimizer.pt")
        self.assertUnsafeNaming([out], planted)
        self.assertUnsafeNaming(["--recursive", out], planted)


def trainer_output(out):
    """What transformers' Trainer writes: a tiny Llama trained two steps, a checkpoint after each (checkpoint-1/,
    checkpoint-2/: weights, config, optimizer, scheduler, RNG state, trainer state, training arguments), then the
    final model saved in `out` itself."""
    script = f"""
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments
torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=2))
data = [{{"input_ids": torch.arange(8) % 32, "labels": torch.arange(8) % 32}} for _ in range(4)]
args = TrainingArguments(output_dir={str(out)!r}, max_steps=2, save_steps=1, per_device_train_batch_size=2,
                         report_to=[], use_cpu=True, logging_strategy="no")
trainer = Trainer(model=model, args=args, train_dataset=data)
trainer.train()
trainer.save_model({str(out)!r})
"""
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=600,
                   env=dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false"))
    return out


class Inventory(unittest.TestCase):
    """Every file under the input, with its disposition, size, verdict and reason, in the JSON and the table."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_each_file_has_one_disposition(self):
        model = self.tmp / "model"
        model.mkdir()
        save_file({"w": torch.ones(4)}, model / "model.safetensors")
        (model / "config.json").write_text(json.dumps({"model_type": "bert"}))
        (model / "tokenizer.json").write_text(json.dumps({"version": "1.0"}))
        (model / "README.md").write_text("# a model\n")
        (model / "sample.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 24)
        (model / "figure.png").write_bytes(pickle.dumps({"a": 1}))  # a pickle, whatever its name says
        (model / ".git" / "objects").mkdir(parents=True)
        (model / ".git" / "objects" / "x").write_bytes(pickle.dumps({"b": 2}))  # never walked
        (model / "notes").mkdir()
        (model / "notes" / "data.csv").write_text("a,b\n1,2\n")
        os.symlink("model.safetensors", model / "alias.safetensors.link")
        code, document, _ = scan(model)
        self.assertEqual(code, 0)
        [entry] = document["models"]
        files = {Path(f["file"]).relative_to(model).as_posix(): f for f in entry["inventory"]["files"]}
        self.assertEqual(set(files), {"model.safetensors", "config.json", "tokenizer.json", "README.md", "sample.png",
                                      "figure.png", ".git", "notes/data.csv", "alias.safetensors.link"})
        expect = {"model.safetensors": ("file", "weights", "safe"), "config.json": ("file", "loader_file", "safe"),
                  "tokenizer.json": ("file", "loader_file", "safe"), "README.md": ("file", "not_read", None),
                  "sample.png": ("file", "not_read", None), "figure.png": ("file", "judged", "safe"),
                  ".git": ("folder", "not_read", None), "notes/data.csv": ("file", "not_read", None),
                  "alias.safetensors.link": ("link", "judged", "safe")}
        for name, (kind, disposition, verdict) in expect.items():
            with self.subTest(name):
                self.assertEqual((files[name]["kind"], files[name]["disposition"], files[name]["verdict"]),
                                 (kind, disposition, verdict), files[name])
        self.assertEqual(files["model.safetensors"]["size"], (model / "model.safetensors").stat().st_size)
        self.assertEqual(files["alias.safetensors.link"]["link"], "model.safetensors")
        self.assertEqual(files["alias.safetensors.link"]["size"], (model / "model.safetensors").stat().st_size)
        self.assertIsNone(files[".git"]["size"])
        self.assertIn("not walked", files[".git"]["reason"])
        self.assertIn("pickle", files["figure.png"]["reason"])
        self.assertEqual(entry["inventory"]["counts"],
                         {"weights": 1, "loader_file": 2, "judged": 2, "not_read": 4})
        self.assertEqual(entry["inventory"]["not_read"],
                         {"store": 1, "document": 1, "image": 1, "plain_data": 1})
        self.assertEqual(entry["safety"]["verdict"], "safe")
        import jsonschema
        jsonschema.validate(entry["inventory"], INVENTORY_SCHEMA)
        table = run(model).stdout
        self.assertIn("files: 5 judged (1 weight file, 2 loader files, 2 on their own); 4 not read "
                      "(1 named folder, 1 document, 1 image, 1 data file)", table)
        markdown = run("--format", "markdown", model).stdout
        self.assertIn("files: 5 judged (1 weight file, 2 loader files, 2 on their own); 4 not read", markdown)

    def test_a_link_out_of_the_input_is_listed_and_unsafe(self):
        model = self.tmp / "model"
        model.mkdir()
        (self.tmp / "outside").mkdir()
        (self.tmp / "outside" / "secret.txt").write_text("secret")
        save_file({"w": torch.ones(4)}, model / "model.safetensors")
        os.symlink("../outside/secret.txt", model / "notes.txt")
        code, document, _ = scan(model)
        files = {Path(f["file"]).name: f for f in document["models"][0]["inventory"]["files"]}
        self.assertEqual((files["notes.txt"]["kind"], files["notes.txt"]["disposition"], files["notes.txt"]["verdict"]),
                         ("link", "not_read", "unsafe"))
        self.assertEqual(files["notes.txt"]["link"], "../outside/secret.txt")
        self.assertIsNone(files["notes.txt"]["size"])
        self.assertEqual(document["models"][0]["safety"]["verdict"], "unsafe")

    def test_benign_trainer_output_keeps_its_verdict(self):
        out = trainer_output(self.tmp / "out")
        for args in ([out], ["--recursive", out]):
            with self.subTest(args=args):
                code, document, stderr = scan("--fail-if-unsafe", *args)
                self.assertEqual(code, 0, stderr)
                for model in document["models"]:
                    # training_args.bin pickles TrainingArguments: unverified, as before issue 66, never unsafe
                    self.assertEqual(model["safety"]["verdict"], "unverified", model["safety"])
                    self.assertFalse([i for i in model["safety"]["imports"] if i["class"] == "dangerous"])
                    self.assertEqual(model["safety"]["tampering"], [])
                listed = [f["file"] for m in document["models"] for f in m["inventory"]["files"]]
                self.assertEqual(sorted(listed), sorted(str(p) for p in out.rglob("*") if p.is_file()))
                judged = {Path(f["file"]).name: f["disposition"] for m in document["models"]
                          for f in m["inventory"]["files"] if "checkpoint-1" in f["file"]}
                self.assertEqual(judged["optimizer.pt"], "training_state")



class Benign(unittest.TestCase):
    """The layouts the libraries write keep the verdict they had before issue 66 (safe), every file accounted for."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def assertSafeAndWhole(self, args, root, env=None):
        code, document, stderr = scan("--fail-if-unsafe", "--strict-safety", *args, env=env)
        self.assertEqual(code, 0, stderr)
        for model in document["models"]:
            self.assertEqual(model["safety"]["verdict"], "safe", (model["input"], model["safety"]))
        listed = sorted(Path(f["file"]).resolve() for m in document["models"] for f in m["inventory"]["files"])
        on_disk = sorted(p.resolve() for p in Path(root).rglob("*") if p.is_file() or p.is_symlink())
        self.assertEqual(listed, on_disk)
        return document

    def test_hugging_face_cache_in_its_default_place_and_elsewhere(self):
        from helpers import hub_snapshot
        for hub, env in ((self.tmp / "home" / ".cache" / "huggingface" / "hub",
                          {"HOME": str(self.tmp / "home"), "HF_HUB_CACHE": "", "HUGGINGFACE_HUB_CACHE": "",
                           "HF_HOME": "", "XDG_CACHE_HOME": ""}),
                         (self.tmp / "elsewhere" / "hub", {"HF_HUB_CACHE": str(self.tmp / "elsewhere" / "hub")})):
            with self.subTest(hub=hub):
                commit = "a" * 40
                snapshot = hub_snapshot(hub, "org/name", commit)
                blobs = snapshot.parents[1] / "blobs"
                blobs.mkdir()
                save_file({"w": torch.ones(4)}, blobs / ("b" * 64))
                (blobs / ("c" * 40)).write_text(json.dumps({"model_type": "bert"}))
                os.symlink("../../blobs/" + "b" * 64, snapshot / "model.safetensors")
                os.symlink("../../blobs/" + "c" * 40, snapshot / "config.json")
                (hub / ".locks" / "models--org--name").mkdir(parents=True)
                document = self.assertSafeAndWhole(["org/name"], snapshot, env=env)
                files = {Path(f["file"]).name: f for f in document["models"][0]["inventory"]["files"]}
                self.assertEqual((files["model.safetensors"]["kind"], files["model.safetensors"]["disposition"]),
                                 ("link", "weights"))
                # The whole cache: its bookkeeping is named, not walked, and its models are still safe.
                code, document, stderr = scan("--fail-if-unsafe", "--strict-safety", "--hf-cache", env=env)
                self.assertEqual(code, 0, stderr)
                self.assertEqual([m["safety"]["verdict"] for m in document["models"]], ["safe"])
                code, document, stderr = scan("--fail-if-unsafe", "--strict-safety", "--recursive", hub, env=env)
                self.assertEqual(code, 0, stderr)
                stores = [f["file"] for m in document["models"] for f in m["inventory"]["files"]
                          if f["kind"] == "folder"]
                self.assertEqual(sorted(Path(f).name for f in stores), [".locks", "blobs", "refs"])

    def test_a_diffusers_pipeline(self):
        from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel
        torch.manual_seed(0)
        unet = UNet2DModel(sample_size=8, in_channels=1, out_channels=1, layers_per_block=1,
                           block_out_channels=(8, 8), norm_num_groups=4,
                           down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"))
        pipeline = self.tmp / "pipeline"
        DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=10)).save_pretrained(pipeline)
        document = self.assertSafeAndWhole([pipeline], pipeline)
        files = {Path(f["file"]).relative_to(pipeline).as_posix(): f["disposition"]
                 for m in document["models"] for f in m["inventory"]["files"]}
        self.assertEqual(files["model_index.json"], "loader_file")
        self.assertEqual(files["scheduler/scheduler_config.json"], "loader_file")

    def test_a_sentence_transformers_folder(self):
        from sentence_transformers import SentenceTransformer, models
        from transformers import BertConfig, BertModel, BertTokenizerFast
        base = self.tmp / "bert"
        vocab = base / "vocab.txt"
        base.mkdir()
        vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]) + "\n")
        torch.manual_seed(0)
        BertModel(BertConfig(vocab_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                             intermediate_size=32)).save_pretrained(base)
        BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(base)
        encoder = models.Transformer(str(base))
        folder = self.tmp / "st"
        SentenceTransformer(modules=[encoder, models.Pooling(16), models.Dense(16, 4)]).save(str(folder))
        document = self.assertSafeAndWhole([folder], folder)
        files = {Path(f["file"]).relative_to(folder).as_posix(): f["disposition"]
                 for m in document["models"] for f in m["inventory"]["files"]}
        self.assertEqual(files["modules.json"], "loader_file")
        self.assertEqual(files["1_Pooling/config.json"], "loader_file")
        dense = [name for name in files if name.startswith("2_Dense/") and name.endswith((".safetensors", ".bin"))]
        self.assertEqual([files[name] for name in dense], ["judged"])  # a module's weights, judged with the folder


# joblib.dump's compressors (joblib/compressor.py) and pandas' to_pickle compressions.
JOBLIB_COMPRESSORS = ("gzip", "bz2", "lzma", "xz", "zlib")
PANDAS_COMPRESSIONS = ("gzip", "bz2", "xz", "zstd")


class Layers(unittest.TestCase):
    """A pickle behind a compression layer, in an archive member, or base64 in another format's config: judged by
    the pickle machine wherever it sits."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.marker = self.tmp / "marker"

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def assertHurts(self, load):
        load_in_python(load)
        self.assertTrue(self.marker.exists(), load)
        self.marker.unlink()

    def assertUnsafe(self, path, where=None):
        code, document, stderr = scan("--fail-if-unsafe", path)
        self.assertEqual(code, 1, stderr)
        safety = document["models"][0]["safety"]
        dangerous = [i for i in safety["imports"] if i["class"] == "dangerous"]
        self.assertEqual({f"{i['module']}.{i['name']}" for i in dangerous}, {"posix.system"}, safety)
        if where:
            self.assertTrue(any(where in i["file"] for i in dangerous), dangerous)
        self.assertFalse(self.marker.exists())
        return document

    def test_compressed_joblib_files(self):
        import joblib
        for compressor in JOBLIB_COMPRESSORS:
            with self.subTest(compressor):
                path = self.tmp / f"evil-{compressor}.joblib"
                joblib.dump({"step": 3, "hook": Payload(self.marker)}, path, compress=(compressor, 3))
                self.assertHurts(f"import joblib; joblib.load({str(path)!r})")
                name = {"bz2": "bzip2"}.get(compressor, compressor)
                self.assertUnsafe(path, where=f"evil-{compressor}.joblib!({name})")

    def test_benign_joblib_files_with_arrays_are_safe(self):
        import joblib
        import numpy as np
        arrays = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "ints": np.arange(5),
                  "names": np.array(["a", "bc"]), "objects": np.array([1, "x", None], dtype=object)}
        for compress in (0, *[(c, 3) for c in JOBLIB_COMPRESSORS]):
            with self.subTest(compress):
                path = self.tmp / f"state-{compress[0] if compress else 'plain'}.joblib"
                joblib.dump(arrays, path, compress=compress)
                loaded = joblib.load(path)
                self.assertEqual(loaded["w"].tolist(), arrays["w"].tolist())
                code, document, stderr = scan(path)
                [model] = document["models"]
                self.assertEqual(model["safety"]["verdict"], "safe", model["safety"])
                self.assertEqual(model["error"]["code"], "not_a_checkpoint")  # a joblib file holds no checkpoint

    def test_pandas_pickles_with_compression(self):
        import pandas as pd
        for compression in PANDAS_COMPRESSIONS:
            with self.subTest(compression):
                path = self.tmp / f"frame-{compression}.pkl"
                pd.to_pickle(Payload(self.marker), path, compression=compression)
                self.assertHurts(f"import pandas; pandas.read_pickle({str(path)!r}, compression={compression!r})")
                self.assertUnsafe(path)
        gz = self.tmp / "frame.pkl.gz"  # compression inferred from the name, as read_pickle infers it
        pd.to_pickle(Payload(self.marker), gz)
        self.assertHurts(f"import pandas; pandas.read_pickle({str(gz)!r})")
        self.assertUnsafe(gz, where="frame.pkl.gz!(gzip)")

    def test_pickles_in_archive_members_nested_and_compressed(self):
        import tarfile
        import zipfile
        evil = pickle.dumps(Payload(self.marker))
        inner = self.tmp / "inner.zip"
        with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("state.dat", evil)  # a pickle by its bytes, whatever its name
        tar = self.tmp / "bundle.tar.gz"
        with tarfile.open(tar, "w:gz") as archive:
            archive.add(inner, "models/inner.zip")
        code = (f"import tarfile, zipfile, io, pickle; t = tarfile.open({str(tar)!r});"
                "z = zipfile.ZipFile(io.BytesIO(t.extractfile('models/inner.zip').read()));"
                "pickle.loads(z.read('state.dat'))")
        self.assertHurts(code)
        document = self.assertUnsafe(tar, where="bundle.tar.gz!(gzip)!models/inner.zip!state.dat")
        self.assertEqual(document["models"][0]["error"]["code"], "not_a_checkpoint")

    def test_a_compression_bomb_is_a_named_error(self):
        import zlib
        path = self.tmp / "bomb.pkl.gz"
        stream = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip, ~1.1 GiB of zeros in ~5 MB
        with open(path, "wb") as out:
            for _ in range(1100):
                out.write(stream.compress(bytes(1 << 20)))
            out.write(stream.flush())
        code, document, _ = scan("--fail-if-unsafe", "--strict-safety", path)
        self.assertEqual(code, 1)
        safety = document["models"][0]["safety"]
        self.assertEqual(safety["verdict"], "unverified")
        self.assertTrue(any("bomb.pkl.gz!(gzip)" in u and "more than 1073741824 bytes" in u
                            for u in safety["unverified"]), safety["unverified"])

    def test_stable_baselines3_data_holds_base64_cloudpickles(self):
        from stable_baselines3 import PPO
        model = PPO("MlpPolicy", "CartPole-v1", n_steps=16, batch_size=16, seed=0, device="cpu")
        model.lr_schedule = Payload(self.marker)  # saved as SB3 saves any object JSON cannot hold
        path = self.tmp / "ppo.zip"
        model.save(path)
        self.assertHurts(f"from stable_baselines3 import PPO; PPO.load({str(path)!r}, device='cpu')")
        document = self.assertUnsafe(path, where="ppo.zip!data!base64@")

    def test_keras_torch_module_wrapper_holds_a_torch_save_archive(self):
        path = self.tmp / "wrapped.keras"
        script = f"""
import os, torch, keras
from keras.layers import TorchModuleWrapper
class Evil(torch.nn.Linear):
    def __reduce__(self):
        return os.system, ("touch {self.marker}",)
model = keras.Sequential([keras.Input((4,)), TorchModuleWrapper(Evil(4, 2), output_shape=(None, 2))])
model.save({str(path)!r})
"""
        env = dict(os.environ, KERAS_BACKEND="torch")
        subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=600, env=env)
        load = f"import keras; keras.models.load_model({str(path)!r}, safe_mode=False)"
        subprocess.run([sys.executable, "-c", load], capture_output=True, timeout=600, env=env)
        self.assertTrue(self.marker.exists())
        self.marker.unlink()
        self.assertUnsafe(path, where="wrapped.keras!config.json!base64@")


class Hdf5Reach(unittest.TestCase):
    """HDF5 files whose datasets reach other files: h5py reads them as the file's own."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.canary = self.tmp / "outside" / "canary.h5"
        self.canary.parent.mkdir()
        import h5py
        import numpy as np
        with h5py.File(self.canary, "w") as f:
            f["secret"] = np.full(4, 31337.0, np.float32)
        (self.tmp / "outside" / "canary.bin").write_bytes(np.full(4, 31337.0, np.float32).tobytes())
        self.model = self.tmp / "model"
        self.model.mkdir()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def assertEscapes(self, path, target):
        code, document, stderr = scan("--fail-if-unsafe", path)
        self.assertEqual(code, 1, stderr)
        model = document["models"][0]
        self.assertEqual(model["error"]["code"], "invalid_hdf5")  # the weights are not read whole
        escapes = [t for t in model["safety"]["tampering"] if t["kind"] == "path_escape"]
        self.assertTrue(escapes, model["safety"])
        self.assertIn(target, escapes[0]["detail"])
        self.assertNotIn("31337", json.dumps(document))

    def test_external_link_external_storage_and_virtual_dataset(self):
        import h5py
        import numpy as np
        cases = {}
        path = self.model / "linked.h5"
        with h5py.File(path, "w") as f:
            f["weight"] = np.ones(4, np.float32)
            f["leak"] = h5py.ExternalLink("../outside/canary.h5", "/secret")
        cases[path] = "canary.h5"
        path = self.model / "external.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("leak", shape=(4,), dtype=np.float32, external=[(str(self.tmp / "outside" / "canary.bin"), 0, 16)])
        cases[path] = "canary.bin"
        path = self.model / "virtual.h5"
        layout = h5py.VirtualLayout(shape=(4,), dtype=np.float32)
        layout[:] = h5py.VirtualSource(str(self.canary), "secret", shape=(4,))
        with h5py.File(path, "w") as f:
            f.create_virtual_dataset("leak", layout)
        cases[path] = "canary.h5"
        for path, target in cases.items():
            with self.subTest(path.name):
                read = subprocess.run([sys.executable, "-c", f"import h5py; print(h5py.File({str(path)!r})['leak'][0])"],
                                      capture_output=True, text=True, timeout=120, cwd=self.model)
                self.assertEqual(read.stdout.strip(), "31337.0", read.stderr)  # the harm: the canary's values
                self.assertEscapes(path, target)

    def test_external_storage_inside_the_model_is_named_and_not_read(self):
        import h5py
        import numpy as np
        (self.model / "data.raw").write_bytes(np.arange(4, dtype=np.float32).tobytes())
        path = self.model / "split.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("w", shape=(4,), dtype=np.float32, external=[("data.raw", 0, 16)])
        code, document, _ = scan(self.model)
        model = document["models"][0]
        self.assertEqual(model["error"]["code"], "invalid_hdf5")
        self.assertEqual(model["safety"]["verdict"], "unverified")
        self.assertTrue(any("data.raw" in u for u in model["safety"]["unverified"]), model["safety"])


if __name__ == "__main__":
    unittest.main()

"""What popular frameworks write (issue 49): their training records read, and their pickles judged as precisely as
CPython runs them. Each file is written by the framework's own package from PyPI, run here on the CPU:

- Ultralytics trains a YOLO model for one epoch (its `train_args`), and saves a fused model with its own
  `Model.save` (whose pickle references methods the way pickle writes them, through getattr). A GPU run cannot
  be made here: its `train_args` (device "0", amp "bf16", no device) are a CPU run's, edited with torch.
- mmengine's Runner trains with an OptimWrapper and saves a checkpoint with an AmpOptimWrapper config (building
  the AMP wrapper itself needs a GPU); mmcv 1.x does not install here, so its layout (`meta.config` holding the
  config text, `fp16 = dict(...)`) is written with mmengine's own Config text.
- ESPnet's config.yaml is its argument parser's namespace dumped by its own dumper, as espnet2/tasks/abs_task.py
  does beside the model (ESPnet's dependencies do not all install here: setup puts the package and what its
  parser imports in .venv/espnet, and the model's weights are a state dict saved as ESPnet saves it)."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

import torch

from helpers import REPO, ScanTestCase, requires, scan

ESPNET = REPO / ".venv" / "espnet"


def python(script, cwd, env=None, prelude=""):
    """Runs `prelude` then `script` in a fresh interpreter, in `cwd` (the frameworks keep global state and write
    beside themselves)."""
    full_env = dict(os.environ, YOLO_OFFLINE="1", YOLO_CONFIG_DIR=str(cwd), **(env or {}))
    source = textwrap.dedent(prelude) + textwrap.dedent(script)
    result = subprocess.run([sys.executable, "-c", source], cwd=cwd, env=full_env,
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"the framework failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def verdict(path):
    code, document, stderr = scan(path)
    model = document["models"][0]
    assert code == 0 and model["error"] is None, stderr
    return model


def record_fields(model):
    [record] = model["verdict"]["records"]
    return record["kind"], record["label"], {field["key"]: field["value"] for field in record["fields"]}


def edited(source, target, **train_args):
    """A copy of an Ultralytics checkpoint whose train_args say what a run elsewhere (on a GPU) would have."""
    checkpoint = torch.load(source, weights_only=False)
    checkpoint["train_args"].update(train_args)
    torch.save(checkpoint, target)
    return target


@requires(__import__("importlib").util.find_spec("ultralytics"), "ultralytics")
class Ultralytics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="precdetect-ultralytics-")
        cls.tmp = Path(cls.scratch.name)
        python("""
            import numpy as np, os
            from PIL import Image
            from ultralytics import YOLO
            for split in ("train", "val"):
                os.makedirs(f"data/images/{split}"); os.makedirs(f"data/labels/{split}")
                for i in range(4):
                    pixels = np.random.default_rng(i).integers(0, 255, (64, 64, 3), dtype=np.uint8)
                    Image.fromarray(pixels).save(f"data/images/{split}/{i}.png")
                    open(f"data/labels/{split}/{i}.txt", "w").write("0 0.5 0.5 0.4 0.4\\n")
            open("data.yaml", "w").write(f"path: {os.path.abspath('data')}\\ntrain: images/train\\nval: images/val\\n"
                                         "names:\\n  0: thing\\n")
            for amp in (True, False):
                YOLO("yolo11n.yaml").train(data="data.yaml", epochs=1, imgsz=64, batch=4, device="cpu", workers=0,
                                           plots=False, val=False, amp=amp, project=os.path.abspath("runs"),
                                           name=f"amp-{amp}", exist_ok=True, verbose=False)
            model = YOLO("yolo11n-seg.yaml")
            model.fuse()  # Conv.forward = Conv.forward_fuse: a bound method in the module's __dict__
            model.save("fused-seg.pt")
        """, cls.tmp)
        cls.trained = cls.tmp / "runs" / "amp-True" / "weights" / "last.pt"

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    def test_amp_on_a_cpu_trained_in_fp32(self):
        model = verdict(self.trained)
        self.assertEqual(record_fields(model), ("ultralytics_arguments", "fp32",
                                                {"train_args.amp": "True", "train_args.device": "'cpu'"}))
        self.assertEqual((model["verdict"]["label"], model["verdict"]["decided_by"]), ("fp32", "records"))
        # Ultralytics saves every model in half precision: that says nothing against the record.
        self.assertEqual(model["verdict"]["conflicts"], [])
        self.assertEqual(set(model["summary"]["dtypes"]) & {"F16"}, {"F16"})

    def test_amp_off_is_fp32(self):
        model = verdict(self.tmp / "runs" / "amp-False" / "weights" / "last.pt")
        self.assertEqual(record_fields(model)[1:], ("fp32", {"train_args.amp": "False", "train_args.device": "'cpu'"}))

    def test_amp_on_a_gpu_is_fp16_and_amp_bf16_is_bf16(self):
        for device, amp, label in (("0", True, "fp16"), ("0,1", True, "fp16"), ("cuda:0", True, "fp16"),
                                   ("0", "bf16", "bf16"), ("mps", True, "fp32"), ("0", "fp32", "fp32")):
            with self.subTest(device=device, amp=amp):
                path = edited(self.trained, self.tmp / "gpu.pt", device=device, amp=amp)
                self.assertEqual(record_fields(verdict(path))[:2], ("ultralytics_arguments", label))

    def test_a_device_the_run_chose_itself_is_a_warning_not_a_guess(self):
        model = verdict(edited(self.trained, self.tmp / "auto.pt", device=None))
        self.assertEqual(model["verdict"]["records"], [])
        [warning] = [w for w in model["warnings"] if w["code"] == "record_unreadable"]
        self.assertIn("train_args.amp=True, device=None names no precision", warning["message"])

    def test_a_fused_model_references_methods_and_is_unverified_never_unsafe(self):
        safety = verdict(self.tmp / "fused-seg.pt")["safety"]
        self.assertEqual(safety["verdict"], "unverified", safety["says"])
        self.assertFalse([i for i in safety["imports"] if i["class"] == "dangerous"])
        self.assertFalse([i for i in safety["imports"] if i["name"] == "getattr"])
        methods = {f"{i['module']}.{i['name']}": i for i in safety["imports"] if i["spelling"]}
        forward_fuse = methods["ultralytics.nn.modules.conv.Conv.forward_fuse"]
        self.assertEqual(forward_fuse["class"], "unknown")
        self.assertEqual(forward_fuse["spelling"],
                         "__builtin__.getattr(<ultralytics.nn.modules.conv.Conv object>, 'forward_fuse')")


@requires(__import__("importlib").util.find_spec("mmengine"), "mmengine")
class OpenMMLab(ScanTestCase):
    RUNNER = """
        import torch, torch.nn as nn
        from mmengine.config import Config
        from mmengine.model import BaseModel
        from mmengine.registry import DATASETS, MODELS
        from mmengine.runner import Runner

        @MODELS.register_module()
        class TinyNet(BaseModel):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)
            def forward(self, inputs, data_samples=None, mode="tensor"):
                out = self.fc(inputs)
                return {"loss": out.sum()} if mode == "loss" else out

        @DATASETS.register_module()
        class TinyData(torch.utils.data.Dataset):
            def __len__(self):
                return 8
            def __getitem__(self, i):
                return {"inputs": torch.full((4,), float(i))}

        def runner(name, optim_wrapper):
            return Runner.from_cfg(Config(dict(
                model=dict(type="TinyNet"), work_dir=name, optim_wrapper=optim_wrapper, default_scope="mmengine",
                train_dataloader=dict(dataset=dict(type="TinyData"), batch_size=4, collate_fn=dict(type="default_collate"),
                                      sampler=dict(type="DefaultSampler", shuffle=False)),
                train_cfg=dict(by_epoch=True, max_epochs=1), log_level="WARNING")))
    """

    def test_the_runner_config_in_meta_names_the_optim_wrapper(self):
        python("""
            sgd = dict(type="SGD", lr=0.01)
            runner("fp32", dict(type="OptimWrapper", optimizer=sgd)).train()
            for name, dtype in (("bf16", "bfloat16"), ("fp16", None)):
                wrapper = dict(type="AmpOptimWrapper", optimizer=sgd, **({"dtype": dtype} if dtype else {}))
                runner(name, wrapper).save_checkpoint(name, "ckpt.pth", save_optimizer=False,
                                                      save_param_scheduler=False)
        """, self.tmp, prelude=self.RUNNER)
        expected = {"fp32/epoch_1.pth": ("fp32", {"meta.cfg.optim_wrapper.type": "OptimWrapper"}),
                    "bf16/ckpt.pth": ("bf16", {"meta.cfg.optim_wrapper.type": "AmpOptimWrapper",
                                               "meta.cfg.optim_wrapper.dtype": "bfloat16"}),
                    "fp16/ckpt.pth": ("fp16", {"meta.cfg.optim_wrapper.type": "AmpOptimWrapper",
                                               "meta.cfg.optim_wrapper.dtype": "None"})}
        for path, (label, fields) in expected.items():
            with self.subTest(path):
                self.assertEqual(record_fields(verdict(self.tmp / path)), ("openmmlab_config", label, fields))

    def test_mmcv_1_configs_say_fp16_by_their_fp16_dict(self):
        python("""
            import torch
            from mmengine.config import Config
            def save(name, **settings):
                config = Config(dict(optimizer_config=dict(grad_clip=None), **settings)).pretty_text
                torch.save({"meta": {"config": config, "epoch": 12}, "state_dict": {"w": torch.ones(4)}}, name)
            save("fp16.pth", fp16=dict(loss_scale=512.0))
            save("fp32.pth")
        """, self.tmp)
        self.assertEqual(record_fields(verdict(self.tmp / "fp16.pth")),
                         ("openmmlab_config", "fp16", {"meta.config.fp16": "dict(loss_scale=512.0)"}))
        self.assertEqual(record_fields(verdict(self.tmp / "fp32.pth")),
                         ("openmmlab_config", "fp32", {"meta.config.fp16": "(absent)"}))


@requires((ESPNET / "espnet2").is_dir(), "ESPnet's parser")
class ESPnet(ScanTestCase):
    def espnet_folders(self, cases):
        """exp/NAME for each NAME: arguments in `cases`: config.yaml as ESPnet's ASR task writes it for those
        arguments, beside the model's state dict. One interpreter writes them all (importing ESPnet's ASR task
        takes 12 s)."""
        folders = {name: self.tmp / "exp" / name for name in cases}
        for folder in folders.values():
            folder.mkdir(parents=True)
            torch.save({"encoder.weight": torch.randn(8, 8), "decoder.weight": torch.randn(8, 8)},
                       folder / "valid.acc.ave.pth")
        python(f"""
            from espnet2.tasks.asr import ASRTask
            from espnet2.utils.yaml_no_alias_safe_dump import yaml_no_alias_safe_dump
            for folder, arguments in {[(str(folders[name]), arguments) for name, arguments in cases.items()]!r}:
                args = ASRTask.get_parser().parse_args(arguments + ["--output_dir", folder])
                with open(f"{{folder}}/config.yaml", "w", encoding="utf-8") as f:
                    yaml_no_alias_safe_dump(vars(args), f, indent=4, sort_keys=False)
        """, self.tmp, env={"PYTHONPATH": str(ESPNET)})
        return folders

    def test_use_amp_on_gpus_is_half_precision_and_off_is_fp32(self):
        cases = {"amp-gpu": (["--use_amp", "true", "--ngpu", "1"], "fp16|bf16"),
                 "amp-cpu": (["--use_amp", "true", "--ngpu", "0"], "fp32"),
                 "no-amp": (["--use_amp", "false", "--ngpu", "4"], "fp32")}
        folders = self.espnet_folders({name: arguments for name, (arguments, _) in cases.items()})
        for name, (arguments, label) in cases.items():
            with self.subTest(name):
                kind, recorded, fields = record_fields(verdict(folders[name]))
                self.assertEqual((kind, recorded), ("espnet_config", label))
                self.assertEqual(fields, {"config.yaml: use_amp": arguments[1], "config.yaml: ngpu": arguments[3]})

    def test_another_frameworks_config_yaml_is_no_record(self):
        folder = self.tmp / "model"
        folder.mkdir()
        (folder / "config.yaml").write_text("precision: 16\nmodel:\n  use_amp: true\n")
        torch.save({"w": torch.randn(4, 4)}, folder / "model.pt")
        self.assertEqual(verdict(folder)["verdict"]["records"], [])


if __name__ == "__main__":
    unittest.main()

"""Training records (issue 22): the precision a training framework wrote down, read as evidence that outranks the
weight ranges. The records are written by the real producers where they install from PyPI (transformers'
TrainingArguments, torch.amp.GradScaler, Lightning's own checkpoints) and, for fairseq, Megatron-LM and DeepSpeed
(which do not install here), as their documented structures: the dicts and argparse Namespace their save
functions build (../shared/notes/training-records.md cites the code)."""

import argparse
import os
import tarfile
import unittest
import warnings

import torch
from safetensors.torch import save_file

from helpers import CORPUS, ScanTestCase, run, scan, warning_codes


def small_weights():
    """Weights in the range of fp16-pretrained models: the range rules say fp16|fp32."""
    generator = torch.Generator().manual_seed(1)
    return {"encoder.weight": torch.randn(16, 16, generator=generator), "encoder.bias": torch.zeros(16)}


def wide_weights(dtype=torch.float32):
    """Weights past 1e2 but inside fp16's range: the range rules say bf16|fp32."""
    weights = small_weights()
    weights["final_layer_norm.weight"] = torch.full((16,), 300.0)
    return {name: tensor.to(dtype) for name, tensor in weights.items()}


def training_arguments(**flags):
    """transformers' own TrainingArguments, as the Trainer builds it."""
    from transformers import TrainingArguments  # imported here: seconds, and only these tests need it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TrainingArguments(output_dir="unused", report_to=[], **flags)


class Payload:
    """Runs a shell command if it is ever unpickled by something that calls what a pickle names."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


class RecordTestCase(ScanTestCase):
    def verdict_of(self, path):
        code, document, stderr = scan(path)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        self.assertIsNone(model["error"])
        return model["verdict"], model

    def model_folder(self, weights, **files):
        """A Trainer-style output folder: model.safetensors, and each keyword a file torch.save writes."""
        folder = self.tmp / "model"
        folder.mkdir()
        save_file(weights, folder / "model.safetensors")
        for name, value in files.items():
            torch.save(value, folder / name.replace("__", "."))
        return folder

    def assertDecided(self, verdict, label, confidence):
        self.assertEqual(verdict["decided_by"], "records")
        self.assertEqual(verdict["label"], label)
        self.assertEqual(verdict["candidates"], [label])
        self.assertAlmostEqual(verdict["confidence"], confidence)
        self.assertEqual(verdict["conflicts"], [])

    def fields(self, record):
        return {field["key"]: field["value"] for field in record["fields"]}


class HuggingFaceTrainer(RecordTestCase):
    def test_training_arguments_beside_safetensors_give_the_recorded_precision(self):
        for flags, weights, label, confidence, expected in [
            ({"bf16": True, "use_cpu": True}, wide_weights(), "bf16", 0.95, {"bf16": "True", "fp16": "False"}),
            ({"fp16": True}, small_weights(), "fp16", 0.95, {"fp16": "True", "bf16": "False"}),
            ({}, wide_weights(), "fp32", 0.9, {"fp16": "False", "bf16": "False", "mixed_precision": "'no'"}),
        ]:
            with self.subTest(label=label):
                folder = self.model_folder(weights, training_args__bin=training_arguments(**flags))
                verdict, model = self.verdict_of(folder)
                self.assertDecided(verdict, label, confidence)
                (record,) = verdict["records"]
                self.assertEqual(record["kind"], "trainer_arguments")
                self.assertEqual(record["files"], [str(folder / "training_args.bin")])
                self.assertLessEqual(expected.items(), self.fields(record).items())
                self.assertIn("fine-tune", record["describes"])
                self.assertIn("not_executed", warning_codes(model))  # TrainingArguments is never constructed
                table = run(folder).stdout
                self.assertIn(f"{label} ({confidence:.2f}) from training_args.bin: ", table)
                for path in folder.iterdir():
                    path.unlink()
                folder.rmdir()

    def test_a_deepspeed_run_records_its_config_in_the_arguments_too(self):
        # TrainingArguments.__post_init__ keeps HfTrainerDeepSpeedConfig(self.deepspeed) as hf_deepspeed_config.
        # Building it needs deepspeed installed; the real class with the state its __init__ leaves (config, _dtype,
        # mismatches: transformers/integrations/deepspeed.py) pickles exactly as the Trainer's would.
        from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

        deepspeed = object.__new__(HfTrainerDeepSpeedConfig)
        deepspeed.__dict__.update(config={"bf16": {"enabled": True}, "zero_optimization": {"stage": 2}},
                                  _dtype=torch.bfloat16, mismatches=[])
        arguments = training_arguments(bf16=True, use_cpu=True)
        arguments.hf_deepspeed_config = deepspeed
        verdict, _ = self.verdict_of(self.model_folder(wide_weights(), training_args__bin=arguments))
        self.assertDecided(verdict, "bf16", 0.95)
        kinds = {record["kind"]: self.fields(record) for record in verdict["records"]}
        self.assertEqual(kinds["deepspeed_config"], {"hf_deepspeed_config.config.bf16.enabled": "True"})

    def test_a_grad_scaler_state_in_a_checkpoint_folder_is_fp16(self):
        scaler = torch.amp.GradScaler("cpu")
        folder = self.model_folder(small_weights(), scaler__pt=scaler.state_dict())
        verdict, _ = self.verdict_of(folder)
        self.assertDecided(verdict, "fp16", 0.95)
        self.assertEqual(verdict["records"][0]["kind"], "grad_scaler")
        self.assertEqual(self.fields(verdict["records"][0]), {"scale": "65536.0"})

    def test_a_disabled_scaler_proves_nothing(self):
        folder = self.model_folder(small_weights(), scaler__pt=torch.amp.GradScaler("cpu", enabled=False).state_dict())
        verdict, _ = self.verdict_of(folder)
        self.assertEqual(verdict["decided_by"], "ranges")
        self.assertEqual(verdict["records"], [])

    def test_records_that_disagree_say_unknown_and_show_both(self):
        folder = self.model_folder(wide_weights(), training_args__bin=training_arguments(bf16=True, use_cpu=True),
                                   scaler__pt=torch.amp.GradScaler("cpu").state_dict())
        verdict, _ = self.verdict_of(folder)
        self.assertEqual(verdict["label"], "unknown")
        self.assertEqual(verdict["candidates"], ["fp16", "bf16"])
        self.assertEqual(verdict["confidence"], 0)
        self.assertEqual([c["kind"] for c in verdict["conflicts"]], ["records_disagree"])
        self.assertIn("training_args.bin", verdict["conflicts"][0]["detail"])
        self.assertIn("scaler.pt", verdict["conflicts"][0]["detail"])

    def test_a_record_the_weights_contradict_lowers_the_confidence_and_shows_both(self):
        weights = wide_weights()
        weights["final_layer_norm.weight"][0] = 1e5  # above fp16's largest value: never lived in fp16
        folder = self.model_folder(weights, training_args__bin=training_arguments(fp16=True))
        verdict, _ = self.verdict_of(folder)
        self.assertEqual(verdict["label"], "fp16")
        self.assertEqual(verdict["candidates"], ["fp16", "bf16", "fp32"])
        self.assertEqual(verdict["confidence"], 0.5)
        (conflict,) = verdict["conflicts"]
        self.assertEqual(conflict["kind"], "ranges_disagree")
        self.assertIn("abs-max-above-fp16-max", conflict["detail"])
        self.assertIn("abs_max 1.000e+05", conflict["detail"])
        self.assertTrue(verdict["fp16_risk"])  # the risk stands whatever the record says
        self.assertTrue(any(rule["fired"] for rule in verdict["evidence"]))  # the range evidence is still listed

    def test_an_fp32_record_for_weights_stored_in_bf16_is_a_conflict(self):
        folder = self.model_folder(wide_weights(torch.bfloat16), training_args__bin=training_arguments())
        verdict, _ = self.verdict_of(folder)
        self.assertEqual(verdict["label"], "fp32")
        self.assertEqual(verdict["candidates"], ["fp32", "bf16"])
        self.assertEqual(verdict["confidence"], 0.5)
        self.assertEqual([c["kind"] for c in verdict["conflicts"]], ["stored_in_half"])

    def test_a_damaged_record_is_a_warning_and_the_weights_still_decide(self):
        folder = self.model_folder(wide_weights(), training_args__bin=training_arguments(bf16=True, use_cpu=True))
        data = (folder / "training_args.bin").read_bytes()
        (folder / "training_args.bin").write_bytes(data[: len(data) // 2])
        verdict, model = self.verdict_of(folder)
        self.assertEqual(verdict["decided_by"], "ranges")
        self.assertEqual(verdict["candidates"], ["bf16", "fp32"])
        self.assertIn("record_unreadable", warning_codes(model))

    def test_a_folder_of_several_models_gives_its_training_state_to_none(self):
        folder = self.model_folder(wide_weights(), training_args__bin=training_arguments(bf16=True, use_cpu=True))
        save_file(small_weights(), folder / "other.safetensors")
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        self.assertEqual(len(document["models"]), 2)
        for model in document["models"]:
            self.assertEqual(model["verdict"]["records"], [], model["input"])


class RecordsInsideACheckpoint(RecordTestCase):
    def save(self, checkpoint, name="checkpoint_best.pt"):
        torch.save(checkpoint, self.tmp / name)
        return self.tmp / name

    def test_fairseq_args_and_loss_scale(self):
        # fairseq <= 0.10 save_state: the argparse Namespace, and FP16Optimizer's loss scale in the optimizer state.
        path = self.save({"args": argparse.Namespace(arch="transformer", fp16=True, memory_efficient_fp16=False,
                                                     bf16=False, memory_efficient_bf16=False),
                          "model": small_weights(),
                          "optimizer_history": [{"criterion_name": "CrossEntropyCriterion",
                                                 "optimizer_name": "FP16Optimizer", "num_updates": 10}],
                          "last_optimizer_state": {"state": {}, "loss_scale": 128.0}})
        verdict, _ = self.verdict_of(path)
        self.assertDecided(verdict, "fp16", 0.95)
        kinds = {record["kind"]: self.fields(record) for record in verdict["records"]}
        self.assertEqual(kinds["run_arguments"]["args.fp16"], "True")
        self.assertEqual(kinds["loss_scale"], {"last_optimizer_state.loss_scale": "128.0"})

    def test_fairseq_config_dict(self):
        # fairseq >= 0.12: "args" None, "cfg" a plain dict from OmegaConf.to_container.
        path = self.save({"args": None, "model": wide_weights(),
                          "cfg": {"common": {"fp16": False, "bf16": True, "memory_efficient_bf16": False,
                                             "amp": False}, "model": {"arch": "transformer"}}})
        verdict, _ = self.verdict_of(path)
        self.assertDecided(verdict, "bf16", 0.95)
        self.assertEqual(verdict["records"][0]["kind"], "fairseq_config")
        self.assertEqual(self.fields(verdict["records"][0])["cfg.common.bf16"], "True")

    def test_megatron_args_for_each_precision(self):
        for flags, label in [({"fp16": False, "bf16": True, "params_dtype": torch.bfloat16}, "bf16"),
                             ({"fp16": True, "bf16": False, "params_dtype": torch.float16}, "fp16"),
                             ({"fp16": False, "bf16": False, "params_dtype": torch.float32}, "fp32")]:
            with self.subTest(label=label):
                weights = small_weights() if label == "fp16" else wide_weights()
                path = self.save({"args": argparse.Namespace(num_layers=2, **flags), "checkpoint_version": 3.0,
                                  "iteration": 10, "model": {"language_model": weights}},
                                 name=f"model_optim_rng_{label}.pt")
                verdict, _ = self.verdict_of(path)
                self.assertDecided(verdict, label, 0.95 if label != "fp32" else 0.9)
                self.assertEqual(self.fields(verdict["records"][0])["args.params_dtype"],
                                 str(flags["params_dtype"]))

    def test_megatron_rank_files_repeat_one_record_merged(self):
        folder = self.tmp / "iter_0000010"
        for rank in range(2):
            (folder / f"mp_rank_0{rank}").mkdir(parents=True)
            torch.save({"args": argparse.Namespace(fp16=False, bf16=True, params_dtype=torch.bfloat16),
                        "checkpoint_version": 3.0, "model": {"language_model": wide_weights()}},
                       folder / f"mp_rank_0{rank}" / "model_optim_rng.pt")
        verdict, _ = self.verdict_of(folder)
        self.assertDecided(verdict, "bf16", 0.95)
        (record,) = verdict["records"]
        self.assertEqual(len(record["files"]), 2)

    def test_deepspeed_config_and_bf16_shard_names(self):
        folder = self.tmp / "global_step10"
        folder.mkdir()
        torch.save({"module": wide_weights(), "ds_config": {"train_batch_size": 8, "bf16": {"enabled": True},
                                                           "zero_optimization": {"stage": 2}},
                    "ds_version": "0.16.5", "optimizer": None}, folder / "mp_rank_00_model_states.pt")
        torch.save({"optimizer_state_dict": {"zero_stage": 2}}, folder / "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt")
        verdict, _ = self.verdict_of(folder)
        self.assertDecided(verdict, "bf16", 0.95)
        self.assertEqual(sorted(r["kind"] for r in verdict["records"]), ["deepspeed_config", "deepspeed_shard_name"])

    def test_a_deepspeed_auto_value_is_unreadable_not_guessed(self):
        path = self.save({"module": wide_weights(), "ds_config": {"fp16": {"enabled": "auto"}}, "ds_version": "0.16.5"},
                         name="mp_rank_00_model_states.pt")
        verdict, model = self.verdict_of(path)
        self.assertEqual(verdict["decided_by"], "ranges")
        self.assertIn("record_unreadable", warning_codes(model))
        self.assertTrue(any("'auto'" in w["message"] for w in model["warnings"]))

    def test_timm_args_and_amp_scaler(self):
        path = self.save({"epoch": 3, "arch": "resnet18", "version": 2, "state_dict": small_weights(),
                          "args": argparse.Namespace(model="resnet18", amp=True, amp_dtype="float16", model_dtype=None),
                          "amp_scaler": torch.amp.GradScaler("cpu").state_dict()}, name="checkpoint-3.pth.tar")
        verdict, _ = self.verdict_of(path)
        self.assertDecided(verdict, "fp16", 0.95)
        self.assertEqual(sorted(r["kind"] for r in verdict["records"]), ["grad_scaler", "run_arguments"])

    def test_apex_amp_loss_scale(self):
        # timm's ApexScaler and NVIDIA's examples save amp.state_dict() under "amp": {"loss_scaler0": {...}}.
        path = self.save({"state_dict": small_weights(), "amp": {"loss_scaler0": {"loss_scale": 65536.0,
                                                                                   "unskipped": 12}}})
        verdict, _ = self.verdict_of(path)
        self.assertDecided(verdict, "fp16", 0.95)
        self.assertEqual(self.fields(verdict["records"][0]), {"amp.loss_scaler0.loss_scale": "65536.0"})

    def test_unknown_record_layouts_are_warnings(self):
        # fairseq from 2020-10 to 2021-03 pickled its cfg as an OmegaConf DictConfig, whose values sit in node
        # objects precdetect does not read: the real omegaconf writes it here.
        from omegaconf import OmegaConf

        config = OmegaConf.create({"common": {"fp16": True, "bf16": False}})
        path = self.save({"args": argparse.Namespace(lr=0.1, arch="transformer"), "cfg": config,
                          "model": wide_weights()})
        verdict, model = self.verdict_of(path)
        self.assertEqual(verdict["decided_by"], "ranges")
        unreadable = [w["message"] for w in model["warnings"] if w["code"] == "record_unreadable"]
        self.assertEqual(len(unreadable), 2, unreadable)
        self.assertTrue(any("args holds no precision field" in m for m in unreadable))
        self.assertTrue(any("omegaconf.dictconfig.DictConfig" in m for m in unreadable))

    def test_a_payload_beside_the_record_runs_nothing(self):
        marker = self.tmp / "executed"
        for name, checkpoint in [("inside.pt", {"args": argparse.Namespace(bf16=True, fp16=False),
                                                "model": wide_weights(), "hook": Payload(marker)}),
                                 ("training_args.bin", {"args": training_arguments(bf16=True, use_cpu=True),
                                                        "hook": Payload(marker)})]:
            with self.subTest(name=name):
                folder = self.tmp / name.replace(".", "_")
                folder.mkdir()
                if name == "training_args.bin":
                    save_file(wide_weights(), folder / "model.safetensors")
                torch.save(checkpoint, folder / name)
                verdict, model = self.verdict_of(folder)
                self.assertFalse(marker.exists())
                self.assertDecided(verdict, "bf16", 0.95)
                not_executed = [w for w in model["warnings"] if w["code"] == "not_executed"]
                self.assertTrue(any("posix.system" in w["message"] for w in not_executed), not_executed)


class TrainScriptConfig(RecordTestCase):
    """nanoGPT's and llama2.c's train.py save their settings as `config` beside `model_args`."""

    SETTINGS = {"out_dir": "out", "batch_size": 12, "learning_rate": 6e-4, "compile": False}

    def test_the_autocast_dtype_on_cuda_and_fp32_elsewhere(self):
        for device, dtype, label in [("cuda", "bfloat16", "bf16"), ("cuda", "float16", "fp16"), ("cpu", "float16", "fp32")]:
            with self.subTest(device=device, dtype=dtype):
                weights = small_weights() if label == "fp16" else wide_weights()
                path = self.save({"model": weights, "optimizer": {}, "model_args": {"n_layer": 2}, "iter_num": 5,
                                  "config": dict(self.SETTINGS, device=device, dtype=dtype)}, f"{device}-{dtype}.pt")
                verdict, _ = self.verdict_of(path)
                self.assertDecided(verdict, label, 0.9 if label == "fp32" else 0.95)
                self.assertEqual(self.fields(verdict["records"][0]),
                                 {"config.dtype": f"'{dtype}'", "config.device": f"'{device}'"})

    def save(self, checkpoint, name):
        torch.save(checkpoint, self.tmp / name)
        return self.tmp / name

    @unittest.skipUnless(CORPUS.is_dir(), "needs ../shared/corpus")
    def test_a_real_llama2c_checkpoint_records_fp16(self):
        # ../shared/corpus/MANIFEST.md: a llama2.c run with device='cuda', dtype='float16' (fp16 autocast, F32 stored).
        verdict, _ = self.verdict_of(CORPUS / "saltyduckegg__llama2xs.c__ckpt" / "ckpt.pt")
        self.assertDecided(verdict, "fp16", 0.95)
        self.assertEqual(verdict["records"][0]["kind"], "train_config")


class NeMoArchive(RecordTestCase):
    """A .nemo file as NeMo's SaveRestoreConnector writes it (tarfile "w:", the folder added as "."): the weights
    a torch.save zip in model_weights.ckpt, the trainer precision copied into model_config.yaml. NeMo itself (the
    nemo_toolkit wheel and its dependencies) is too heavy for the test venv, so tarfile builds that layout."""

    def nemo(self, precision, weights, mode="w:"):
        folder = self.tmp / "parts"
        folder.mkdir(exist_ok=True)
        torch.save(weights, folder / "model_weights.ckpt")
        (folder / "model_config.yaml").write_text(
            f"micro_batch_size: 4\nprecision: {precision}\nmegatron_amp_O2: true\ntokenizer:\n  precision: 32\n")
        path = self.tmp / f"gpt-{precision}.nemo"
        with tarfile.open(path, mode) as archive:
            archive.add(folder, arcname=".")
        return path

    def test_the_archive_weights_and_its_recorded_precision(self):
        weights = wide_weights()
        for precision, label in [("bf16-mixed", "bf16"), ("32", "fp32")]:
            for io in ("mmap", "pread"):
                with self.subTest(precision=precision, io=io):
                    code, document, stderr = scan("--io", io, self.nemo(precision, weights))
                    self.assertEqual(code, 0, stderr)
                    model = document["models"][0]
                    self.assertEqual(model["format"], "nemo")
                    self.assertDecided(model["verdict"], label, 0.95 if label == "bf16" else 0.9)
                    self.assertEqual(self.fields(model["verdict"]["records"][0]),
                                     {"model_config.yaml: precision": precision})
                    reported = {t["name"]: t for t in model["tensors"]}
                    for name, tensor in weights.items():
                        self.assertEqual(reported[name]["abs_max"], tensor.abs().max().item(), name)

    def test_a_gzip_compressed_archive_is_a_named_error(self):
        path = self.nemo("bf16-mixed", small_weights(), mode="w:gz")
        code, document, _ = scan(path)
        self.assertEqual(code, 2)
        error = document["models"][0]["error"]
        # A file compressed whole: no checkpoint of weights, what it holds judged for safety (its tar and the torch
        # zip inside, which imports nothing dangerous).
        self.assertEqual(error["code"], "not_a_checkpoint")
        self.assertIn("a gzip stream, no checkpoint of weights", error["message"])
        self.assertEqual(document["models"][0]["safety"]["verdict"], "safe")


class Lightning(RecordTestCase):
    def checkpoint(self, precision_plugin, precision_name):
        import lightning as L  # seconds to import; only these tests need it

        class Module(L.LightningModule):
            def __init__(self, precision):
                super().__init__()
                self.save_hyperparameters()  # the habit that puts the precision into the checkpoint
                self.layer = torch.nn.Linear(16, 16)

            def training_step(self, batch, index):
                return self.layer(batch).pow(2).mean()

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.01)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer = L.Trainer(accelerator="cpu", max_steps=1, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False, **precision_plugin)
            trainer.fit(Module(precision_name), torch.utils.data.DataLoader(torch.randn(8, 16), batch_size=4))
        path = self.tmp / f"{precision_name}.ckpt"
        trainer.save_checkpoint(path)
        return path

    def test_16_mixed_saves_its_scaler_and_bf16_mixed_only_what_the_module_saved(self):
        from lightning.pytorch.plugins.precision import MixedPrecision

        # Lightning refuses "16-mixed" on the CPU by name; its own plugin with a CPU GradScaler is the same run.
        plugin = MixedPrecision("16-mixed", "cpu", scaler=torch.amp.GradScaler("cpu"))
        verdict, _ = self.verdict_of(self.checkpoint({"plugins": [plugin]}, "16-mixed"))
        self.assertDecided(verdict, "fp16", 0.95)
        kinds = {record["kind"]: self.fields(record) for record in verdict["records"]}
        self.assertIn("MixedPrecision.scale", kinds["grad_scaler"])
        self.assertEqual(kinds["hyperparameters"], {"hyper_parameters.precision": "'16-mixed'"})

        verdict, _ = self.verdict_of(self.checkpoint({"precision": "bf16-mixed"}, "bf16-mixed"))
        self.assertEqual(verdict["label"], "bf16")
        self.assertEqual([record["kind"] for record in verdict["records"]], ["hyperparameters"])
        # Linear(16, 16) weights look fp16-sized: the ranges disagree, and both are shown.
        self.assertEqual([c["kind"] for c in verdict["conflicts"]], ["ranges_disagree"])


if __name__ == "__main__":
    unittest.main()

"""GPTQ's packed integers (2, 3, 4, 8 bits; v1 and v2 zero points; sequential and act-order g_idx; config.json's
quantization_config or quantize_config.json alone): codes packed in int32 words beside per-group scales and zero
points, analyzed as their kernels compute them (scale x (code - zero point), rounded once to the scales' dtype). No
GPTQ writer runs on this CPU (gptqmodel and AutoGPTQ build CUDA extensions), so the test packs codes as AutoGPTQ's
QuantLinear.pack does (qlinear_cuda_old.py: codes LSB first along the inputs, 3-bit ones straddling words; zero
points minus one in v1), and the reference is its dequantization from the unpacked integers, in torch at the scales'
dtype: scales[g_idx] * (q - zeros[g_idx]), its statistics then taken in float64. A v1 file read as v2 differs, the
cache follows the scales' shard and the zero-point convention, and without its bits the codes are counted, not
guessed."""

import json
import unittest

import numpy
import torch
from safetensors.torch import load_file, save_file

from helpers import ScanTestCase, check_stats, reference_tensor_stats, scan, tensors_by_name


def packed_lsb_first(codes, bits):
    """Rows of unsigned codes packed along the last axis as one bit stream per row, LSB first, into int32 words."""
    rows, count = codes.shape
    bit_positions = numpy.arange(count) * bits
    words = numpy.zeros((rows, (count * bits + 31) // 32), dtype=numpy.uint64)
    for k in range(count):
        word, shift = divmod(int(bit_positions[k]), 32)
        value = codes[:, k].astype(numpy.uint64) << numpy.uint64(shift)
        words[:, word] |= value & numpy.uint64(0xFFFFFFFF)
        if shift + bits > 32:
            words[:, word + 1] |= value >> numpy.uint64(32)
    return torch.from_numpy(words.astype(numpy.uint32).view(numpy.int32))


class Gptq(ScanTestCase):
    LAYERS = ("model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj")

    def write(self, folder, bits, group, version="gptq", act_order=False, config_file="config.json",
              scale_dtype=torch.float16, outputs=48):
        """GPTQ tensors of two layers ([out, in] = [outputs, 256]) packed as AutoGPTQ packs them; the references."""
        generator = numpy.random.default_rng(bits)
        inputs = 256
        groups = inputs // group
        tensors, references = {}, {}
        for index, name in enumerate(self.LAYERS):
            q = generator.integers(0, 2**bits, size=(inputs, outputs))
            zeros = generator.integers(0, 2**bits, size=(groups, outputs))
            scales = torch.from_numpy(generator.uniform(1e-3, 2e-2, size=(groups, outputs)) * (index + 1))
            scales = scales.to(scale_dtype)
            g_idx = numpy.arange(inputs) // group
            if act_order:
                g_idx = generator.permutation(g_idx)
            # v1 stores the zero point minus one, which its kernels add back: a zero point of 0 wraps round to
            # 2^bits there (AutoGPTQ's asymmetric bug that v2 fixes), and the kernels compute with that.
            stored_zeros = (zeros - 1) & (2**bits - 1) if version == "gptq" else zeros
            tensors[f"{name}.qweight"] = packed_lsb_first(q.T, bits).T.contiguous()
            tensors[f"{name}.qzeros"] = packed_lsb_first(stored_zeros, bits)
            zeros = stored_zeros + 1 if version == "gptq" else zeros
            tensors[f"{name}.scales"] = scales
            tensors[f"{name}.g_idx"] = torch.from_numpy(g_idx.astype(numpy.int32))
            tensors[f"{name}.bias"] = torch.zeros(outputs, dtype=scale_dtype)
            difference = torch.from_numpy(q - zeros[g_idx]).to(scale_dtype)
            references[f"{name}.qweight"] = (scales[torch.from_numpy(g_idx)] * difference).T
        folder.mkdir()
        save_file(tensors, folder / "model.safetensors")
        settings = {"bits": bits, "group_size": group, "desc_act": act_order, "sym": False,
                    "checkpoint_format": version}
        if config_file == "config.json":
            settings["quant_method"] = "gptq"
            (folder / "config.json").write_text(json.dumps({"model_type": "llama", "quantization_config": settings}))
        else:
            (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
            (folder / "quantize_config.json").write_text(json.dumps(settings))
        return references

    def scan_and_check(self, folder, references, bits):
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        for name, reference in references.items():
            module = name[: -len(".qweight")]
            self.assertEqual(reported[name]["scaled_by"]["bits"], bits)
            self.assertEqual(reported[name]["scaled_by"]["zero_points"], f"{module}.qzeros")
            self.assertEqual(reported[name]["scaled_by"]["group_index"], f"{module}.g_idx")
            for part in ("scales", "qzeros", "g_idx"):
                self.assertEqual(reported[f"{module}.{part}"]["role"], "scale")
            check_stats(self, reported, name, reference)
        return document

    def test_codes_of_every_width_are_analyzed_as_gptq_dequantizes_them(self):
        for bits in (2, 3, 4, 8):
            with self.subTest(bits=bits):
                folder = self.tmp / f"gptq-{bits}"
                # 8-bit codes in 520 rows: more than one tile of rows (256 at 8 bits), the last one short.
                outputs = 520 if bits == 8 else 48
                self.scan_and_check(folder, self.write(folder, bits, group=64, outputs=outputs), bits)

    def test_v2_zero_points_act_order_quantize_config_and_bfloat16_scales(self):
        cases = {"v2": dict(version="gptq_v2"), "act-order": dict(act_order=True),
                 "quantize_config": dict(config_file="quantize_config.json"),
                 "bf16-whole-rows": dict(scale_dtype=torch.bfloat16, group=256)}
        for label, options in cases.items():
            with self.subTest(case=label):
                folder = self.tmp / f"gptq-{label}"
                group = options.pop("group", 128)
                self.scan_and_check(folder, self.write(folder, 4, group=group, **options), 4)

    def test_a_v1_file_read_as_v2_differs(self):
        # The zero-point convention matters (vLLM PR #38966): the same words read with the other convention give
        # other values, so the scan follows checkpoint_format rather than one fixed rule.
        folder = self.tmp / "gptq-v1-as-v2"
        references = self.write(folder, 4, group=64, version="gptq")
        config = json.loads((folder / "config.json").read_text())
        config["quantization_config"]["checkpoint_format"] = "gptq_v2"
        (folder / "config.json").write_text(json.dumps(config))
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        name = next(iter(references))
        self.assertNotEqual(reported[name]["norm"], reference_tensor_stats(references[name])["norm"])

    def test_the_cache_follows_the_scales_shard_and_the_zero_point_convention(self):
        # A scaled weight's statistics come from more than its own file: the scales may lie in another shard, and
        # config.json says how the zero points read. A change to either is a cache miss, never a stale answer.
        folder = self.tmp / "gptq-sharded"
        references = self.write(folder, 4, group=64)
        tensors = load_file(folder / "model.safetensors")
        (folder / "model.safetensors").unlink()
        scales = {name: tensors.pop(name) for name in list(tensors) if name.endswith(".scales")}
        save_file(tensors, folder / "model-00001-of-00002.safetensors")
        save_file(scales, folder / "model-00002-of-00002.safetensors")
        cache = self.tmp / "cache.sqlite"

        def scanned():
            code, document, stderr = scan("--cache", cache, folder)
            self.assertEqual(code, 0, stderr)
            return tensors_by_name(document["models"][0])

        for name, reference in references.items():
            check_stats(self, scanned(), name, reference)
        save_file({name: value * 2 for name, value in scales.items()}, folder / "model-00002-of-00002.safetensors")
        reported = scanned()
        for name, reference in references.items():
            check_stats(self, reported, name, reference * 2)  # a power of two commutes with the rounding
        config = json.loads((folder / "config.json").read_text())
        config["quantization_config"]["checkpoint_format"] = "gptq_v2"
        (folder / "config.json").write_text(json.dumps(config))
        _, uncached, _ = scan(folder)
        self.assertEqual(scanned(), tensors_by_name(uncached["models"][0]))

    def test_without_its_bits_the_codes_are_counted_not_guessed(self):
        folder = self.tmp / "gptq-no-config"
        self.write(folder, 4, group=64)
        (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        self.assertNotIn("scaled_by", reported[f"{self.LAYERS[0]}.qweight"])
        self.assertFalse(reported[f"{self.LAYERS[0]}.qweight"]["analyzed"])


if __name__ == "__main__":
    unittest.main()

"""Integer-quantized safetensors (issue 50): codes packed in int32 words beside per-group scales and zero points,
analyzed as the values their kernels compute (scale x (code - zero point), rounded once to the scales' dtype). Each
reference is the dequantization of the package that defines the layout, its statistics then taken in float64.

- compressed-tensors' pack-quantized (int4 per group, symmetric and asymmetric; int8 per group; int3 per channel,
  whose codes straddle words): written by compressed-tensors 0.20.0 itself (apply_quantization_config, its
  calculate_qparams for scales and zero points, ModelCompressor.compress_model, save_pretrained), its
  PackedQuantizationCompressor.decompress the reference.
- AWQ's GEMM layout: no AWQ writer runs here (AutoAWQ is archived and needs CUDA kernels), so the test packs codes as
  AutoAWQ's WQLinear_GEMM.from_linear does (awq/modules/linear/gemm.py: order_map [0, 2, 4, 6, 1, 3, 5, 7]); the
  reference reads that file with another package's code: compressed-tensors' AutoAWQConverter (its own unpacking
  and reverse order), then its decompress.
- GPTQ (2, 3, 4, 8 bits; v1 and v2 zero points; sequential and act-order g_idx; config.json's
  quantization_config or quantize_config.json alone): no GPTQ writer runs on this CPU (gptqmodel and AutoGPTQ build
  CUDA extensions), so the test packs codes as AutoGPTQ's QuantLinear.pack does (qlinear_cuda_old.py: codes LSB
  first along the inputs, 3-bit ones straddling words; zero points minus one in v1), and the reference is its
  dequantization from the unpacked integers, in torch at the scales' dtype: scales[g_idx] * (q - zeros[g_idx]).
- bitsandbytes 4-bit (nf4 with nested quantization, fp4 without; bf16 and fp16) and 8-bit (LLM.int8): quantized by
  bitsandbytes 0.50.2 on this CPU through transformers' from_pretrained(quantization_config=BitsAndBytesConfig) and
  written by save_pretrained; bitsandbytes' dequantize_4bit and int8_vectorwise_dequant the reference."""

import json
import unittest

import numpy
import torch
from safetensors.torch import load_file, save_file

from helpers import (ScanTestCase, compressed_checkpoint, reference_tensor_stats, scan, small_llama, tensors_by_name,
                     warning_codes)


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


def check_stats(case, reported, name, reference):
    expected = reference_tensor_stats(reference)
    case.assertEqual(reported[name]["numel"], reference.numel(), name)
    for key in ("abs_min", "abs_max", "zeros"):
        case.assertEqual(reported[name][key], expected[key], (name, key))
    case.assertAlmostEqual(reported[name]["norm"], expected["norm"], delta=expected["norm"] * 1e-9)


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


class Awq(ScanTestCase):
    def test_gemm_codes_in_awq_order_are_analyzed_as_they_dequantize(self):
        from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor
        from compressed_tensors.entrypoints.convert.converters.autoawq import AutoAWQConverter
        from compressed_tensors.quantization import preset_name_to_scheme

        generator = numpy.random.default_rng(4)
        inputs, outputs, group = 256, 4104, 128  # more rows than one tile (4096 at 4 bits), the last tile short
        order_map = [0, 2, 4, 6, 1, 3, 5, 7]  # AutoAWQ's WQLinear_GEMM.from_linear
        tensors = {}
        for index in range(2):
            name = f"model.layers.{index}.mlp.up_proj"
            q = generator.integers(0, 16, size=(inputs, outputs)).astype(numpy.int64)
            zeros = generator.integers(0, 16, size=(inputs // group, outputs)).astype(numpy.int64)

            def pack(values):
                words = numpy.zeros((values.shape[0], values.shape[1] // 8), dtype=numpy.int64)
                for column in range(words.shape[1]):
                    for i in range(8):
                        words[:, column] |= values[:, column * 8 + order_map[i]] << (i * 4)
                return torch.from_numpy(words.astype(numpy.uint32).view(numpy.int32))

            tensors[f"{name}.qweight"] = pack(q)
            tensors[f"{name}.qzeros"] = pack(zeros)
            tensors[f"{name}.scales"] = torch.from_numpy(
                generator.uniform(1e-3, 1e-2, size=(inputs // group, outputs)) * 10**index).to(torch.float16)
        folder = self.tmp / "awq"
        folder.mkdir()
        save_file(tensors, folder / "model.safetensors")
        config = {"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True, "version": "gemm"}
        (folder / "config.json").write_text(json.dumps({"model_type": "llama", "quantization_config": config}))

        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        converted = AutoAWQConverter.from_autoawq_config(config).process(dict(tensors))
        scheme = preset_name_to_scheme("W4A16_ASYM", ["Linear"])
        for index in range(2):
            module = f"model.layers.{index}.mlp.up_proj"
            parts = {key: converted[f"{module}.{key}"] for key in
                     ("weight_packed", "weight_scale", "weight_shape", "weight_zero_point")}
            reference = PackedQuantizationCompressor.decompress(parts, scheme)["weight"]
            self.assertEqual(reported[f"{module}.qweight"]["scaled_by"]["zero_points"], f"{module}.qzeros")
            check_stats(self, reported, f"{module}.qweight", reference)


class BitsAndBytes(ScanTestCase):
    def quantize(self, folder, config, dtype):
        from transformers import AutoModelForCausalLM

        plain = self.tmp / "plain"
        if not plain.exists():
            small_llama().save_pretrained(plain)
        model = AutoModelForCausalLM.from_pretrained(plain, quantization_config=config, device_map="cpu", dtype=dtype)
        model.save_pretrained(folder)

    def references(self, folder):
        """Each quantized weight's values as bitsandbytes dequantizes them, by name."""
        import bitsandbytes.functional as F
        from safetensors import safe_open

        references = {}
        with safe_open(folder / "model.safetensors", "pt") as stored:
            names = list(stored.keys())
            for name in names:
                if name.endswith(".SCB"):
                    weight = name[: -len("SCB")] + "weight"
                    references[weight] = F.int8_vectorwise_dequant(stored.get_tensor(weight), stored.get_tensor(name))
                if ".quant_state.bitsandbytes__" in name:
                    weight = name.split(".quant_state.")[0]
                    parts = {key[len(weight) + 1:]: stored.get_tensor(key) for key in names
                             if key.startswith(weight + ".")}
                    state = F.QuantState.from_dict(parts, device=torch.device("cpu"))
                    references[weight] = F.dequantize_4bit(stored.get_tensor(weight), state)
        return references

    def test_4bit_and_8bit_weights_are_analyzed_as_bitsandbytes_dequantizes_them(self):
        from transformers import BitsAndBytesConfig

        cases = {
            "nf4-nested-bf16": (BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                   bnb_4bit_use_double_quant=True,
                                                   bnb_4bit_compute_dtype=torch.bfloat16), torch.bfloat16),
            "fp4-f16": (BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="fp4"), torch.float16),
            "int8": (BitsAndBytesConfig(load_in_8bit=True), torch.float16),
        }
        for label, (config, dtype) in cases.items():
            with self.subTest(case=label):
                folder = self.tmp / label
                self.quantize(folder, config, dtype)
                references = self.references(folder)
                self.assertEqual(len(references), 14)  # 7 linear layers per block, 2 blocks
                code, document, stderr = scan(folder)
                self.assertEqual(code, 0, stderr)
                reported = tensors_by_name(document["models"][0])
                for name, reference in references.items():
                    self.assertEqual(reported[name]["scaled_by"]["bits"], 8 if label == "int8" else 4)
                    check_stats(self, reported, name, reference)
                roles = {name: tensor["role"] for name, tensor in reported.items()}
                self.assertTrue(all(roles[name] == "scale" for name in roles
                                    if name.endswith((".SCB", ".absmax", ".quant_map", ".nested_absmax"))))
                # nf4's and fp4's code maps hold 0 as a value: no scale of theirs is zero
                self.assertNotIn("scales_zero", warning_codes(document["models"][0]))


class CompressedTensorsPackQuantized(ScanTestCase):
    def check(self, folder, scheme_of):
        """Every packed weight against decompress with its module's scheme (`scheme_of(module name)`)."""
        from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor
        from safetensors import safe_open

        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        checked = 0
        with safe_open(folder / "model.safetensors", "pt") as stored:
            for name in stored.keys():
                if not name.endswith(".weight_packed"):
                    continue
                module = name[: -len(".weight_packed")]
                parts = {key: stored.get_tensor(f"{module}.{key}") for key in
                         ("weight_packed", "weight_scale", "weight_shape", "weight_zero_point")
                         if f"{module}.{key}" in stored.keys()}
                scheme = scheme_of(module)
                reference = PackedQuantizationCompressor.decompress(parts, scheme)["weight"]
                self.assertEqual(reported[name]["scaled_by"]["tensor"], f"{module}.weight_scale")
                self.assertEqual(reported[name]["scaled_by"]["bits"], scheme.weights.num_bits)
                check_stats(self, reported, name, reference)
                self.assertEqual(reported[f"{module}.weight_scale"]["role"], "scale")
                checked += 1
        self.assertEqual(checked, 14)  # 7 linear layers per block, 2 blocks
        return document

    def test_int4_int8_and_int3_codes_are_analyzed_as_compressed_tensors_decompresses_them(self):
        from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme, preset_name_to_scheme

        schemes = {name: preset_name_to_scheme(name, ["Linear"]) for name in ("W4A16", "W4A16_ASYM", "W8A16")}
        schemes["int3-channel-asym"] = QuantizationScheme(
            targets=["Linear"], weights=QuantizationArgs(num_bits=3, type="int", strategy="channel", symmetric=False))
        for name, scheme in schemes.items():
            with self.subTest(scheme=name):
                folder = self.tmp / name
                self.assertEqual(compressed_checkpoint(folder, scheme), "pack-quantized")
                document = self.check(folder, lambda module, scheme=scheme: scheme)
                self.assertIn("scaled_weights", [w["code"] for w in document["models"][0]["warnings"]])

    def test_config_groups_of_other_bits_are_told_apart_by_their_shapes(self):
        # llm-compressor's mixed recipes: 8-bit attention, 4-bit MLP, by patterns of module names the tensors do not
        # record. Each weight takes the group whose bits and group size fit its packed words and scales.
        from compressed_tensors.quantization import preset_name_to_scheme

        groups = {"attention": preset_name_to_scheme("W8A16", ["re:.*self_attn.*"]),
                  "mlp": preset_name_to_scheme("W4A16_ASYM", ["re:.*mlp.*"])}
        folder = self.tmp / "mixed"
        self.assertEqual(compressed_checkpoint(folder, groups, hidden=256, intermediate=512), "pack-quantized")
        self.check(folder, lambda module: groups["attention" if "self_attn" in module else "mlp"])

    def test_config_groups_their_shapes_cannot_tell_apart_are_counted_not_guessed(self):
        # Per-channel scales fit any width: 8-bit and 4-bit groups per channel leave a weight's reading open.
        from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme

        groups = {f"int{bits}": QuantizationScheme(targets=[pattern], weights=QuantizationArgs(
                      num_bits=bits, type="int", strategy="channel", symmetric=True))
                  for bits, pattern in ((8, "re:.*self_attn.*"), (4, "re:.*mlp.*"))}
        folder = self.tmp / "mixed-channels"
        self.assertEqual(compressed_checkpoint(folder, groups), "pack-quantized")
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        reported = tensors_by_name(document["models"][0])
        packed = [name for name in reported if name.endswith(".weight_packed")]
        self.assertEqual(len(packed), 14)
        for name in packed:
            self.assertNotIn("scaled_by", reported[name])
            self.assertFalse(reported[name]["analyzed"])
            self.assertEqual(reported[name.replace("_packed", "_scale")]["role"], "scale")


if __name__ == "__main__":
    unittest.main()

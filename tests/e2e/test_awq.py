"""AWQ's GEMM layout (4-bit codes eight to an int32 word in AWQ's nibble order: `qweight`, `qzeros`, float16
`scales` per group of 128 inputs), analyzed as its kernels compute it: scale x (code - zero point), rounded once to
the scales' dtype. No AWQ writer runs here (AutoAWQ is archived and needs CUDA kernels), so the test packs codes as
AutoAWQ's WQLinear_GEMM.from_linear does (awq/modules/linear/gemm.py: order_map [0, 2, 4, 6, 1, 3, 5, 7]); the
reference reads that file with another package's code: compressed-tensors' AutoAWQConverter (its own unpacking and
reverse order), then its PackedQuantizationCompressor.decompress, its statistics then taken in float64."""

import json
import unittest

import numpy
import torch
from safetensors.torch import save_file

from helpers import ScanTestCase, check_stats, scan, tensors_by_name


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


if __name__ == "__main__":
    unittest.main()

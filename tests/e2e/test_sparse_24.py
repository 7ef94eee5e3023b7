"""compressed-tensors' 2:4-sparse weights (issue 70), written by compressed-tensors 0.12.2's own
Sparse24BitMaskCompressor (sparse_24_writer.py, in an interpreter of its own with .venv/ct-sparse: later releases
dropped it) on a pruned two-block Llama, in bfloat16 and as FP8_DYNAMIC fp8 codes with per-row scales: each weight is
its dense tensor, as compressed-tensors' sparse24_bitmask_decompress (and dequantize) computes it, in float64 against
that reference, with the values stored and the zeros between them in `sparsity`; the values, bitmask, shape and
scale tensors are never weights."""

import os
import subprocess
import sys
import unittest

from helpers import REPO, ScanTestCase, scan, tensors_by_name

CT_SPARSE = REPO / ".venv" / "ct-sparse"


def written(case, kind):
    """The checkpoint sparse_24_writer.py writes for `kind`, and its references by weight name."""
    from safetensors.torch import load_file

    folder = case.tmp / kind
    env = dict(os.environ, PYTHONPATH=str(CT_SPARSE))
    result = subprocess.run([sys.executable, str(REPO / "tests" / "e2e" / "sparse_24_writer.py"), str(folder), kind],
                            capture_output=True, text=True, env=env, timeout=600)
    case.assertEqual(result.returncode, 0, result.stderr)
    return folder, load_file(case.tmp / f"{kind}-references.safetensors")


class Sparse24Bitmask(ScanTestCase):
    def check(self, kind, dtype):
        folder, references = written(self, kind)
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        reported = tensors_by_name(model)
        self.assertEqual(len(references), 14)
        for name, reference in references.items():
            with self.subTest(weight=name):
                self.assertTensorStats(reported[name], reference, name)
                self.assertEqual(reported[name]["dtype"], dtype)
                self.assertEqual(reported[name]["role"], "model")
                sparsity = reported[name]["sparsity"]
                self.assertEqual(sparsity["stored"], reference.numel() // 2)
                self.assertEqual(sparsity["logical"], reference.numel())
                self.assertEqual(sparsity["zeros_fraction"], int((reference == 0).sum()) / reference.numel())
                self.assertGreaterEqual(sparsity["zeros_fraction"], 0.5)
                module = name[: -len(".weight")]
                for part in ("bitmask", "shape") + (("weight_scale",) if kind == "fp8" else ()):
                    self.assertEqual(reported[f"{module}.{part}"]["role"], "scale", part)
        # every weight's values, the zeros between them included: the dense model's parameters
        dense = sum(reference.numel() for reference in references.values())
        others = sum(t["numel"] for n, t in reported.items() if t["role"] == "model" and n not in references)
        self.assertEqual(model["summary"]["parameters"], dense + others)
        self.assertNotIn("quantized_not_read", [w["code"] for w in model["warnings"]])

    def test_bfloat16_values_are_read_dense(self):
        self.check("bf16", "BF16")

    def test_fp8_values_are_read_dense_times_their_scales(self):
        self.check("fp8", "F8_E4M3")


if __name__ == "__main__":
    unittest.main()

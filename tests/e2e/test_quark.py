"""AMD Quark's exports (issue 70), written by amd-quark 0.13 itself (quark_writer.py, in an interpreter of its own
with .venv/quark) on a two-block Llama: its nvfp4 weights (uint8 fp4 codes, e4m3 `weight_scale` per 16 and the
second-level `weight_scale_2`, with `input_scale_2`) are named, not read: the codes never analyzed as the bytes they
are stored as, and none of their scales a weight."""

import os
import subprocess
import sys
import unittest

from helpers import REPO, ScanTestCase, scan, tensors_by_name, warning_codes

QUARK = REPO / ".venv" / "quark"


class QuarkExports(ScanTestCase):
    def test_nvfp4_is_named_and_its_scales_are_no_weights(self):
        folder = self.tmp / "nvfp4"
        result = subprocess.run([sys.executable, str(REPO / "tests" / "e2e" / "quark_writer.py"), str(folder), "nvfp4"],
                                capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(QUARK)), timeout=600)
        self.assertEqual(result.returncode, 0, result.stderr)
        code, document, stderr = scan(folder)
        self.assertEqual(code, 0, stderr)
        model = document["models"][0]
        reported = tensors_by_name(model)
        self.assertIn("quantized_not_read", warning_codes(model))
        weights = [name for name, tensor in reported.items() if f"{name}_scale_2" in reported]
        self.assertEqual(len(weights), 14)
        for name in weights:
            with self.subTest(weight=name):
                self.assertFalse(reported[name]["analyzed"])
                module = name[: -len(".weight")]
                for part in ("weight_scale", "weight_scale_2", "input_scale_2"):
                    self.assertEqual(reported[f"{module}.{part}"]["role"], "scale", part)
        analyzed = [name for name, tensor in reported.items() if tensor["role"] == "model" and tensor["analyzed"]]
        self.assertTrue(all(name.endswith(("norm.weight", "embed_tokens.weight", "lm_head.weight")) for name in analyzed),
                        analyzed)


if __name__ == "__main__":
    unittest.main()

"""Golden files: the table, -v table, CSV and Markdown of the bundled examples and of a BatchNorm checkpoint written
here, byte for byte, so that any change to what a user reads is a reviewed diff. Regenerate after an intended
change with scripts/update_golden.sh (PRECDETECT_UPDATE_GOLDEN=1), which also rewrites README's output block."""

import os
import shutil
import unittest
from pathlib import Path

import torch

from helpers import REPO, ScanTestCase, run

GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("PRECDETECT_UPDATE_GOLDEN") == "1"
EXAMPLES = ("examples/fp16-like", "examples/bf16-like")

# name -> the arguments; inputs are relative to the folder the scan runs in
CASES = {
    "examples.table.txt": [*EXAMPLES],
    "examples-verbose.table.txt": ["-v", "examples/bf16-like"],
    "examples.csv": ["--format", "csv", *EXAMPLES],
    "examples.md": ["--format", "markdown", "-v", *EXAMPLES],
    "batchnorm-verbose.table.txt": ["-v", "cnn/model.pth"],
}


def batchnorm_checkpoint(folder):
    """A small CNN whose BatchNorm running_var is past fp16's max (a buffer: not evidence, but an fp16 risk)."""
    torch.manual_seed(21)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        net[1].running_var.copy_(torch.tensor([1.5, 2.0, 7.0e4, 3.0]))
    (folder / "cnn").mkdir()
    torch.save(net.state_dict(), folder / "cnn" / "model.pth")


class Golden(ScanTestCase):
    def setUp(self):
        super().setUp()
        shutil.copytree(REPO / "examples", self.tmp / "examples")
        batchnorm_checkpoint(self.tmp)

    def test_every_output_matches_its_golden_file(self):
        for name, args in CASES.items():
            with self.subTest(name):
                result = run(*args, cwd=self.tmp, env={"NO_COLOR": "1"})
                self.assertEqual(result.returncode, 0, result.stderr)
                golden = GOLDEN / name
                if UPDATE:
                    golden.write_bytes(result.stdout.encode())
                # bytes, not text: the CSV's lines end in CRLF (RFC 4180), and that is part of the output
                self.assertEqual(result.stdout.encode(), golden.read_bytes(),
                                 f"{name}: run scripts/update_golden.sh if intended")

    def test_readme_shows_the_golden_table(self):
        block = "```\n$ build/precdetect examples/fp16-like examples/bf16-like\n"
        readme = (REPO / "README.md").read_text()
        start = readme.index(block) + len(block)
        end = readme.index("```", start)
        table = (GOLDEN / "examples.table.txt").read_text()
        if UPDATE:
            (REPO / "README.md").write_text(readme[:start] + table + readme[end:])
            readme = (REPO / "README.md").read_text()
            end = start + len(table)
        self.assertEqual(readme[start:end], table, "README's output block: run scripts/update_golden.sh")


if __name__ == "__main__":
    unittest.main()

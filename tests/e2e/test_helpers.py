"""The suite's own rule for missing tools (helpers.requires / require, issue 68): under ctest a test whose tool is
missing fails, run by hand it skips, and a test whose tool is there runs. Each case runs a small suite in a child
process with PRECDETECT_STRICT_SKIPS set or not, as ctest or a developer would."""

import os
import subprocess
import sys
import unittest

CHILD = """
import unittest
from helpers import require, requires

@requires(False, "a missing tool")
class MissingForTheClass(unittest.TestCase):
    def test_a(self):
        pass

class Methods(unittest.TestCase):
    @requires(False, "a missing tool")
    def test_missing(self):
        pass

    @requires(True, "a tool that is there")
    def test_present(self):
        pass

    def test_missing_inside(self):
        require(self, False, "a missing tool")

loader = unittest.defaultTestLoader
suite = unittest.TestSuite([loader.loadTestsFromTestCase(MissingForTheClass), loader.loadTestsFromTestCase(Methods)])
result = unittest.TextTestRunner(verbosity=0).run(suite)
print("RESULT", result.testsRun, len(result.errors), len(result.failures), len(result.skipped))
"""


def outcome(strict):
    env = {k: v for k, v in os.environ.items() if k != "PRECDETECT_STRICT_SKIPS"}
    if strict:
        env["PRECDETECT_STRICT_SKIPS"] = "1"
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    line = [part for part in done.stdout.splitlines() if part.startswith("RESULT")]
    assert line, done.stdout + done.stderr
    run, errors, failures, skipped = map(int, line[0].split()[1:])
    return {"run": run, "errors": errors, "failures": failures, "skipped": skipped, "output": done.stderr}


class StrictSkips(unittest.TestCase):
    def test_under_ctest_a_missing_tool_fails_and_names_itself(self):
        result = outcome(strict=True)
        # The class's missing tool is an error in setUpClass; the two methods' are failures; one test passes.
        self.assertEqual((result["errors"], result["failures"], result["skipped"]), (1, 2, 0), result["output"])
        self.assertIn("a missing tool is not installed (scripts/setup.sh --tests installs it)", result["output"])

    def test_run_by_hand_a_missing_tool_skips(self):
        result = outcome(strict=False)
        self.assertEqual((result["errors"], result["failures"], result["skipped"]), (0, 0, 3), result["output"])


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Two builds' outputs, byte for byte: every input of scripts/compare_verdicts.py (the malicious and malformed
corpora generated afresh, ../shared/corpus, the examples) and the labelled models of docs/labelled-models.csv that
are installed, each scanned one by one in the table (-v), JSON, CSV and Markdown, and the examples compared with
`diff`; standard output, standard error and the exit status must be the same. Prints what differs (issue 47: the
torch-free program against the build that linked libtorch; docs/benchmarks.md).

    .venv/bin/python scripts/compare_outputs.py OLD_BINARY NEW_BINARY"""

import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from compare_verdicts import input_sets  # noqa: E402
from test_labelled import shipped_rows  # noqa: E402

MODES = (["-v"], ["--json"], ["--format", "csv"], ["--format", "markdown"])


def output(binary, args, cwd):
    result = subprocess.run([binary, *map(str, args)], capture_output=True, cwd=cwd)
    return result.returncode, result.stdout, result.stderr.replace(binary.encode(), b"BINARY")


def main(old, new):
    with tempfile.TemporaryDirectory() as scratch:
        sets = input_sets(Path(scratch))
        labelled = [path for _, path in shipped_rows() if path is not None]
        sets["labelled models"] = (labelled, Path(scratch))
        runs = 0
        for name, (paths, cwd) in sets.items():
            differ = []
            for path in paths:
                for mode in MODES:
                    runs += 1
                    if output(old, [*mode, path], cwd) != output(new, [*mode, path], cwd):
                        differ.append(f"{Path(path).name} {' '.join(mode)}")
            print(f"{name}: {len(paths)} inputs x {len(MODES)} formats, {len(differ)} differ")
            for line in differ:
                print(f"    {line}")
        examples = sets["examples"][0]
        for mode in (["--json"], []):
            runs += 1
            same = output(old, ["diff", *mode, *examples], REPO) == output(new, ["diff", *mode, *examples], REPO)
            print(f"diff {' '.join(mode) or '(table)'} of the examples: {'same' if same else 'DIFFERS'}")
        print(f"{runs} runs of each build")


if __name__ == "__main__":
    main(*(str(Path(binary).resolve()) for binary in sys.argv[1:3]))

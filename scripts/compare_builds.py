#!/usr/bin/env python3
"""Compares two precdetect binaries' throughput, interleaved on one machine, against the seed loop.

On a shared or virtual machine the same binary's batch figure moves by 1.5x between runs (docs/benchmarks.md),
so a change is judged by alternating the two builds within each round: per dtype, the seed loop (median of 3),
then each binary, the one going first alternating by round, timed with the file given once and --files times
(`--jobs 1`, median of 3 each). Further files = (many-file run less one-file run) / (files - 1): what each
further model costs in one process, start-up excluded. With --cold every run starts with the file dropped from
the page cache, and only one file is timed (a batch of the same file would read it hot). Prints each round,
then medians and ratios.

  python3 scripts/compare_builds.py --device cuda --size-gb 4 --rounds 3 /tmp/precdetect-old build/precdetect
  .venv/bin/python scripts/compare_builds.py --cold --io pread --dtypes bf16 /tmp/precdetect-old build/precdetect
"""

import argparse
import statistics
import subprocess
from pathlib import Path

import torch

from benchmark import drop_from_page_cache, plain_read, seed_loop, synthetic_checkpoint, timed, torch_device


def scan(binary, args, path, copies):
    io = ["--io", args.io] if args.io else []
    subprocess.run([binary, "--json", "--device", args.device, *io, "--jobs", "1", *[path] * copies], check=True,
                   stdout=subprocess.DEVNULL)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binaries", nargs=2, type=Path, metavar="BINARY", help="A, then B")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--size-gb", type=float, default=1.0)
    parser.add_argument("--dtypes", default="bf16,f16,f32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=5, help="files in the many-file run (at least 2)")
    parser.add_argument("--io", help="precdetect's --io (default: the device's own)")
    parser.add_argument("--cold", action="store_true", help="drop the file from the page cache before each run")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/precdetect-bench"))
    args = parser.parse_args()
    if args.files < 2:
        parser.error("--files needs at least 2")
    return args


def time_round(args, round_, name, path, results, seeds):
    """One dtype's round: the seed loop, then both builds, the one going first alternating by round."""
    gb = path.stat().st_size / 1e9
    before = (lambda: drop_from_page_cache(path)) if args.cold else (lambda: None)

    def median(action):
        return timed(action, 3, before, statistics.median)

    seeds.setdefault(name, []).append(gb / median(lambda: seed_loop(path, torch_device(args.device))))
    for label in "AB" if round_ % 2 == 0 else "BA":
        binary = args.binaries["AB".index(label)]
        one = median(lambda: scan(binary, args, path, 1))
        line = f"round {round_} {name} {label}: one file {one:.2f} s"
        gbps = gb / one
        if not args.cold:
            many = median(lambda: scan(binary, args, path, args.files))
            gbps = gb * (args.files - 1) / (many - one)
            line += f", {args.files} files {many:.2f} s"
        results.setdefault((name, label), []).append(gbps)
        print(f"{line}: {gbps:.2f} GB/s; seed loop {seeds[name][-1]:.2f} GB/s", flush=True)


def main():
    args = parse_args()
    if torch_device(args.device) == "cuda":
        torch.ones(1, device="cuda")  # CUDA start-up, untimed
    args.workdir.mkdir(parents=True, exist_ok=True)
    paths = {name: synthetic_checkpoint(args.workdir, name, args.size_gb) for name in args.dtypes.split(",")}
    for path in paths.values():
        plain_read(path)  # into the page cache
    results, seeds = {}, {}
    for round_ in range(args.rounds):
        for name, path in paths.items():
            time_round(args, round_, name, path, results, seeds)
    figure = "one file" if args.cold else "further files"
    print(f"\n| dtype | build | {figure} GB/s, per round | median | vs the seed loop's median |")
    print("|---|---|---|---|---|")
    for (name, label), values in sorted(results.items()):
        seed = statistics.median(seeds[name])
        print(f"| {name} | {label} ({args.binaries['AB'.index(label)]}) | {' / '.join(f'{v:.2f}' for v in values)} "
              f"| {statistics.median(values):.2f} | {statistics.median(values) / seed:.2f}x |")


if __name__ == "__main__":
    main()

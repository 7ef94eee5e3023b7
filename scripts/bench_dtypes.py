#!/usr/bin/env python3
"""The CPU scan by dtype against read() and the seed loop (issue 71): for each dtype, a Llama-shaped safetensors file
(scripts/benchmark.py's shapes, normal(0, 0.02) weights), page cache hot (dropped and read back once, as
benchmark.py's recache does), timed side by side in rounds:

  read        dd if=FILE of=/dev/null bs=16M (what any reader of the hot file pays)
  seed loop   seed 000's method (safetensors.torch.load_file, then abs().min(), abs().max(), torch.linalg.norm per
              tensor) in this process, on --threads torch threads; none for fp8 and int8, whose tensors torch's
              abs and norm do not take
  precdetect  BINARY --json --no-cache FILE, a fresh process each time, on every core; and pinned to one core
              (taskset -c 0) for the per-core rate

and prints a Markdown table: per dtype the median [min-max] of each timing over --rounds, wall seconds and CPU
seconds (user+sys, the OS's accounting of the finished process: os.wait4, and this process's for the seed loop),
precdetect's ns of CPU per value, GB/s of the file, and its ratios to read() and the seed loop (x read above 1:
faster than dd). The same CPU rate per value on one core and on two says the scan scales with the cores. The
machine is shared: the load average is printed before and after; compare CPU seconds, and medians.

dtypes: bf16, f16, f32, f64, fp8 (F8_E4M3: N(0, 0.02) weights scaled to 448 and clamped, as fp8 checkpoints store
them per block) and int8 (compressed-tensors' W8A8: int8 codes, a float32 scale per row, scripts/bench_scaled.py's).

  .venv/bin/python scripts/bench_dtypes.py [--size-gb 1] [--rounds 5] [--dtypes bf16,f16,f32,f64,fp8,int8]
      [--binary build/precdetect] [--baseline OTHER_BINARY]

With --baseline the other binary is timed in the same rounds (alternating which goes first), for a before/after."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from benchmark import llama_shapes, recache  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64,
          "fp8": torch.float8_e4m3fn, "int8": torch.int8}
NO_SEED_LOOP = {"fp8", "int8"}  # torch has no abs() and linalg.norm for them


def weights(budget_values):
    generator = torch.Generator().manual_seed(0)
    return {name: torch.randn(shape, generator=generator) * 0.02 for name, shape in llama_shapes(budget_values).items()}


def write_model(folder, name, size_gb):
    """The model folder of dtype `name`, written on first use; returns its weights file and its count of values."""
    path = folder / f"llama-{name}-{size_gb:g}gb" / "model.safetensors"
    count = path.with_name("values")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tensors = weights(int(size_gb * 1e9 / torch.tensor([], dtype=DTYPES[name]).element_size()))
        values = sum(t.numel() for t in tensors.values())
        if name == "fp8":
            tensors = {k: (t.clamp(-1, 1) * 448).to(torch.float8_e4m3fn) for k, t in tensors.items()}
        elif name == "int8":
            quantized = {}
            for k, t in tensors.items():
                scale = t.abs().amax(1, keepdim=True) / 127
                quantized[k] = (t / scale).round().clamp(-128, 127).to(torch.int8)
                quantized[k.removesuffix(".weight") + ".weight_scale"] = scale
            tensors = quantized
            config = {"quantization_config": {"quant_method": "compressed-tensors", "format": "int-quantized"}}
            path.with_name("config.json").write_text(json.dumps(config))
        else:
            tensors = {k: t.to(DTYPES[name]) for k, t in tensors.items()}
        save_file(tensors, path)
        count.write_text(str(values))
    return path, int(count.read_text())


def process_seconds(command):
    """Wall and CPU (user+sys) seconds of `command`, a fresh process; its output is discarded."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):  # 1: a gate failed, which a scan of synthetic weights may
        raise SystemExit(f"{' '.join(map(str, command))} exited {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def seed_loop_seconds(path):
    start, cpu = time.perf_counter(), time.process_time()
    for p in load_file(path).values():
        p_abs = p.abs()
        p_abs.min().item(), p_abs.max().item(), torch.linalg.norm(p).item()
    return time.perf_counter() - start, time.process_time() - cpu


def summary(samples):
    """median [min-max]"""
    return f"{statistics.median(samples):.3f} [{min(samples):.3f}-{max(samples):.3f}]"


def load_average():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-gb", type=float, default=1.0)
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="the seed loop's torch threads")
    parser.add_argument("--binary", type=Path, default=REPO / "build" / "precdetect")
    parser.add_argument("--baseline", type=Path, help="another precdetect, timed in the same rounds")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/precdetect-bench-dtypes"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    binaries = {"precdetect": args.binary.resolve()}
    if args.baseline:
        binaries["baseline"] = args.baseline.resolve()
    print(f"{os.cpu_count()} cores, torch {torch.__version__} on {args.threads} threads; page cache hot; "
          f"{args.rounds} rounds; load average {load_average()}")
    print(f"read: dd if=FILE of=/dev/null bs=16M; precdetect: BINARY --json --no-cache FILE, and under taskset -c 0 "
          f"(one core); {', '.join(f'{k} = {v}' for k, v in binaries.items())}\n")
    print("| dtype | file GB | values | binary | read s | seed loop s | precdetect s | CPU s | CPU / wall | ns per value "
          "(CPU) | GB/s | x read | x seed loop | one core s | ns per value on one core |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.dtypes.split(","):
        path, values = write_model(args.workdir, name, args.size_gb)
        scanned = path.parent if name == "int8" else path  # int8 is read through its config.json
        recache(path)  # every file cached alike: how it was written decides its page size, and with it the faults
        times = {"read": [], "seed": [], **{(b, cores): [] for b in binaries for cores in (1, 2)}}
        for round_ in range(args.rounds):
            times["read"].append(process_seconds(["dd", f"if={path}", "of=/dev/null", "bs=16M"]))
            if name not in NO_SEED_LOOP:
                times["seed"].append(seed_loop_seconds(path))
            order = list(binaries.items())
            for label, binary in order if round_ % 2 == 0 else reversed(order):
                times[label, 2].append(process_seconds([binary, "--json", "--no-cache", scanned]))
                times[label, 1].append(process_seconds(["taskset", "-c", "0", binary, "--json", "--no-cache", scanned]))
        gb = path.stat().st_size / 1e9
        read_wall = statistics.median(t[0] for t in times["read"])
        seed_wall = statistics.median(t[0] for t in times["seed"]) if times["seed"] else None
        for label in binaries:
            wall = [t[0] for t in times[label, 2]]
            cpu = [t[1] for t in times[label, 2]]
            one_cpu = [t[1] for t in times[label, 1]]
            median_wall = statistics.median(wall)
            seed = "n/a" if seed_wall is None else summary([t[0] for t in times["seed"]])
            versus_seed = "n/a" if seed_wall is None else f"{seed_wall / median_wall:.2f}x"
            print(f"| {name} | {gb:.2f} | {values / 1e6:.0f}M | {label} | {summary([t[0] for t in times['read']])} | "
                  f"{seed} | {summary(wall)} | {summary(cpu)} | {statistics.median(cpu) / median_wall:.2f} | "
                  f"{summary([c * 1e9 / values for c in cpu])} | {gb / median_wall:.2f} | {read_wall / median_wall:.2f}x | "
                  f"{versus_seed} | {summary([t[0] for t in times[label, 1]])} | "
                  f"{summary([c * 1e9 / values for c in one_cpu])} |", flush=True)
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()

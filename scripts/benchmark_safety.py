#!/usr/bin/env python3
"""What the safety examination adds to the scan of an HF Trainer checkpoint folder (docs/security.md).

Builds a Trainer checkpoint of a GPT-2-small-shaped model (transformers' GPT2LMHeadModel, random init, 124M
parameters, fp32 model.safetensors) with the state the Trainer saves beside it: optimizer.pt (a real AdamW state
after one step: two fp32 moments per parameter), scheduler.pt, rng_state.pth, scaler.pt, training_args.bin. Then
times, page cache warm, min of --repeat runs:
  full     precdetect --json FOLDER: the weights scanned, every pickle beside them examined
  weights  the same weights and training_args.bin in a folder without the other training state (hard links):
           the scan without examining optimizer.pt and friends
and prints the growth. Run to run, the full scan varies by more than the examination costs on a small VM, so the
examination is also timed on its own: a 4-value model beside the same training state (hard links), less the same
model alone; its cost is then given as a share of the full scan. --binary times another build too.

  .venv/bin/python scripts/benchmark_safety.py [--repeat 5] [--binary OTHER/precdetect]
"""

import argparse
import os
import platform
import subprocess
import time
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel, TrainingArguments

REPO = Path(__file__).resolve().parents[1]


def trainer_checkpoint(folder):
    if (folder / "optimizer.pt").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config())
    model.save_pretrained(folder)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    model(torch.zeros(1, 8, dtype=torch.long), labels=torch.zeros(1, 8, dtype=torch.long)).loss.backward()
    optimizer.step()
    scheduler.step()
    torch.save(optimizer.state_dict(), folder / "optimizer.pt")
    torch.save(scheduler.state_dict(), folder / "scheduler.pt")
    torch.save({"python": None, "cpu": torch.get_rng_state()}, folder / "rng_state.pth")
    torch.save(torch.amp.GradScaler("cpu").state_dict(), folder / "scaler.pt")
    torch.save(TrainingArguments(output_dir=str(folder), fp16=False), folder / "training_args.bin")


def linked_copy(folder, copy, names, tiny_weights=False):
    copy.mkdir(exist_ok=True)
    for name in names:
        if not (copy / name).exists():
            os.link(folder / name, copy / name)
    if tiny_weights and not (copy / "model.safetensors").exists():
        save_file({"w": torch.ones(4)}, copy / "model.safetensors")


def best_time(binary, folder, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([binary, "--json", "-q", str(folder)], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/precdetect-bench-safety"))
    parser.add_argument("--binary", action="append", default=[str(REPO / "build" / "precdetect")])
    args = parser.parse_args()
    folder, copy = args.workdir / "checkpoint-1", args.workdir / "weights-only"
    trainer_checkpoint(folder)
    linked_copy(folder, copy, ("model.safetensors", "config.json", "training_args.bin"))
    state = ("optimizer.pt", "scheduler.pt", "rng_state.pth", "scaler.pt", "training_args.bin")
    tiny_state, tiny = args.workdir / "tiny-with-state", args.workdir / "tiny"
    linked_copy(folder, tiny_state, state, tiny_weights=True)
    linked_copy(folder, tiny, ("training_args.bin",), tiny_weights=True)
    sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
    print(f"{platform.node()}: {os.cpu_count()} cores; folder {sum(sizes.values()) / 1e9:.2f} GB "
          f"(model.safetensors {sizes['model.safetensors'] / 1e6:.0f} MB, optimizer.pt {sizes['optimizer.pt'] / 1e6:.0f} MB)")
    for binary in args.binary:
        best_time(binary, folder, 1)  # warm the page cache
        full, weights = best_time(binary, folder, args.repeat), best_time(binary, copy, args.repeat)
        examination = best_time(binary, tiny_state, args.repeat) - best_time(binary, tiny, args.repeat)
        print(f"| {binary} | full {full:.3f} s | weights and training_args.bin only {weights:.3f} s | "
              f"growth {100 * (full - weights) / weights:+.1f}% | examining optimizer.pt, scheduler.pt, "
              f"rng_state.pth, scaler.pt alone {1000 * examination:.1f} ms = {100 * examination / full:.1f}% of the full "
              f"scan |")


if __name__ == "__main__":
    main()

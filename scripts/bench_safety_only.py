#!/usr/bin/env python3
"""`precdetect --safety-only` against modelaudit on the same folders (docs/benchmarks.md, "safety-only").

Builds, once, under --dir:
  trainer   an HF Trainer checkpoint of a GPT-2-small-shaped model (scripts/benchmark_safety.py's: model.safetensors,
            optimizer.pt, scheduler.pt, rng_state.pth, scaler.pt, training_args.bin)
  sharded   a 4-shard safetensors model (4 x 256 MiB of float32) with its index, config.json and a
            tokenizer_config.json holding a chat template
  pytorch   a 512 MiB torch.save zip (pytorch_model.bin) with config.json
Then times each tool on each folder, page cache warm, min of --repeat whole-process runs (wall seconds, and the
CPU seconds, user + sys, the run and its children took): `precdetect --safety-only --json`, the full
`precdetect --json --no-cache` for reference, `modelaudit scan --format json` when --modelaudit names it (a tool of
its own, in its own virtual environment: pip install modelaudit==0.2.54), and `--safety-only` of another build when
--baseline names it (a before/after of a change).

  .venv/bin/python scripts/bench_safety_only.py [--modelaudit /tmp/ma/bin/modelaudit] [--baseline OLD] [--repeat 3]
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import time
from pathlib import Path

import torch
from safetensors.torch import save_file

from benchmark_safety import trainer_checkpoint

REPO = Path(__file__).resolve().parents[1]
SHARD_VALUES = 64 * 1024 * 1024  # 256 MiB of float32


def sharded(folder):
    if (folder / "model.safetensors.index.json").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    weight_map = {}
    for shard in range(4):
        name = f"model-{shard + 1:05d}-of-00004.safetensors"
        tensors = {f"layers.{shard}.{part}.weight": torch.randn(SHARD_VALUES // 4) * 0.02 for part in range(4)}
        save_file(tensors, folder / name)
        weight_map.update({tensor: name for tensor in tensors})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "torch_dtype": "float32"}))
    template = ("{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}{% endfor %}"
                "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))


def pytorch(folder):
    if (folder / "pytorch_model.bin").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({f"layer.{i}.weight": torch.randn(SHARD_VALUES // 8) for i in range(16)}, folder / "pytorch_model.bin")
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))


def best_of(command, repeat):
    """(min wall seconds, min CPU seconds, exit code) over `repeat` whole-process runs."""
    times, cpu = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, timeout=3600)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(times), min(cpu), result.returncode


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, default=Path("/tmp/precdetect-bench-safety-only"))
    parser.add_argument("--binary", default=str(REPO / "build" / "precdetect"))
    parser.add_argument("--baseline", help="another build's precdetect, whose --safety-only is timed beside")
    parser.add_argument("--modelaudit")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    folders = {"trainer": args.dir / "trainer", "sharded": args.dir / "sharded", "pytorch": args.dir / "pytorch"}
    trainer_checkpoint(folders["trainer"])
    sharded(folders["sharded"])
    pytorch(folders["pytorch"])
    print(f"machine: {platform.node()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; page cache warm; "
          f"min of {args.repeat} runs; seconds wall (CPU)")
    for name, folder in folders.items():
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**30
        tools = {"safety-only": [args.binary, "--safety-only", "--json", folder],
                 "full scan": [args.binary, "--json", "--no-cache", folder]}
        if args.baseline:
            tools["baseline safety-only"] = [args.baseline, "--safety-only", "--json", folder]
        if args.modelaudit:
            tools["modelaudit"] = [args.modelaudit, "scan", "-f", "json", folder]
        for command in tools.values():
            subprocess.run(command, capture_output=True, timeout=3600)  # warms the page cache
        cells = []
        for tool, command in tools.items():
            wall, cpu, code = best_of(command, args.repeat)
            cells.append(f"{tool} {wall:.3f} ({cpu:.3f}) exit {code}")
        print(f"{name:<8} | {size:5.2f} GiB | " + " | ".join(cells))


if __name__ == "__main__":
    main()

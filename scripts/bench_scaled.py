"""Scan speed of fp8 weights with 128x128 block scales against their float twin (issue 50's target: within 2x):
the same dequantized values stored as bf16. Prints the best of --repeats whole-process runs of each.

    .venv/bin/python scripts/bench_scaled.py [--binary build/precdetect] [--tensors 8] [--side 4096]"""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import torch
from safetensors.torch import save_file


def write_pair(folder: Path, tensors: int, side: int):
    generator = torch.Generator().manual_seed(0)
    fp8, twin = {}, {}
    for index in range(tensors):
        weight = ((torch.rand(side, side, generator=generator) * 2 - 1) * 448).to(torch.float8_e4m3fn)
        scale = torch.empty(side // 128, side // 128).uniform_(1e-3, 1e-2, generator=generator)
        name = f"model.layers.{index}.mlp.down_proj"
        fp8[f"{name}.weight"], fp8[f"{name}.weight_scale_inv"] = weight, scale
        dequantized = weight.float() * scale.repeat_interleave(128, 0).repeat_interleave(128, 1)
        twin[f"{name}.weight"] = dequantized.to(torch.bfloat16)
    for name, tensors_of in (("fp8", fp8), ("bf16", twin)):
        (folder / name).mkdir()
        (folder / name / "config.json").write_text(json.dumps(
            {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}))
        save_file(tensors_of, folder / name / "model.safetensors")


def best_seconds(binary, folder, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([binary, "--json", "--no-cache", folder], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="build/precdetect")
    parser.add_argument("--tensors", type=int, default=8)
    parser.add_argument("--side", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_pair(folder, args.tensors, args.side)
        values = args.tensors * args.side * args.side
        fp8 = best_seconds(args.binary, folder / "fp8", args.repeats)
        bf16 = best_seconds(args.binary, folder / "bf16", args.repeats)
        print(f"{values / 1e6:.0f}M values: fp8 with block scales {fp8:.3f} s ({values / fp8 / 1e9:.2f} G values/s), "
              f"bf16 twin {bf16:.3f} s ({values / bf16 / 1e9:.2f} G values/s): {fp8 / bf16:.2f}x")


if __name__ == "__main__":
    main()

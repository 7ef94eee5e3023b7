"""Scan speed of every ggml block type against its float twin (issue 70's target: within 2x): a bf16 GGUF of
Llama-shaped weights, and the same weights quantized as each type by ggml's own C quantizer (tests/e2e/
ggml_reference.py, with an importance matrix for the i-quants) and written by ggml's GGUF writer. Quantizing
hundreds of millions of values as an i-quant takes ggml minutes, so each type quantizes a 4096 x 4096 sample of the
weights and its blocks are repeated to fill the file: the codes a quantizer writes, read as many times as the twin's
values. Prints the best of --repeat whole-process runs (`precdetect --json FILE`, start-up included) of each, with
user + system CPU seconds.

    .venv/bin/python scripts/bench_ggml_types.py [--binary build/precdetect] [--matrices 16] [--repeat 5]
        [--only Q4_K IQ2_XXS ...]
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
import gguf  # noqa: E402
from ggml_reference import Ggml  # noqa: E402
from test_ggml_types import BLOCK_TYPES  # noqa: E402

SIDE = 4096  # each matrix SIDE x SIDE, like a 7B model's attention projections


def run(binary, path):
    """Wall seconds and user + system CPU seconds of one scan."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([binary, "--json", "--quiet", path], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(binary, path, repeat):
    runs = [run(binary, path) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def write_bf16_twin(path, sample, matrices):
    writer = gguf.GGUFWriter(str(path), "llama")
    bf16 = gguf.quants.quantize(sample, gguf.GGMLQuantizationType.BF16)
    for i in range(matrices):
        writer.add_tensor(f"blk.{i}.attn_q.weight", bf16, raw_dtype=gguf.GGMLQuantizationType.BF16)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(REPO / "build" / "precdetect"))
    parser.add_argument("--matrices", type=int, default=16, help="SIDE x SIDE matrices per file")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=list(BLOCK_TYPES))
    args = parser.parse_args()
    ggml = Ggml()
    rng = np.random.default_rng(0)
    sample = (rng.standard_normal((SIDE, SIDE)) * 0.02).astype(np.float32)
    imatrix = (rng.standard_normal((64, SIDE)) ** 2).mean(axis=0).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="precdetect-ggml-bench-") as folder:
        twin = Path(folder) / "bf16.gguf"
        write_bf16_twin(twin, sample, args.matrices)
        twin_wall, twin_cpu = best(args.binary, twin, args.repeat)
        print(f"{args.matrices} matrices of {SIDE} x {SIDE} ({args.matrices * SIDE * SIDE / 1e6:.0f}M values); "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
        print("| type | file MB | wall s | CPU s | twin wall s | twin CPU s | wall vs twin | CPU vs twin |")
        print("|---|---|---|---|---|---|---|---|")
        print(f"| BF16 | {twin.stat().st_size / 1e6:.0f} | {twin_wall:.3f} | {twin_cpu:.3f} | | | 1x | 1x |")
        for name in args.only:
            qtype, file_type = BLOCK_TYPES[name]
            blocks = ggml.quantize(qtype, sample, imatrix if name.startswith("IQ") else None)
            path = Path(folder) / f"{name}.gguf"
            ggml.write_gguf(path, {f"blk.{i}.attn_q.weight": (qtype, SIDE, SIDE, blocks) for i in range(args.matrices)},
                            file_type)
            wall, cpu = best(args.binary, path, args.repeat)
            twin_wall, twin_cpu = best(args.binary, twin, args.repeat)  # again beside it: the load drifts
            print(f"| {name} | {path.stat().st_size / 1e6:.0f} | {wall:.3f} | {cpu:.3f} | {twin_wall:.3f} | "
                  f"{twin_cpu:.3f} | {wall / twin_wall:.2f}x | {cpu / twin_cpu:.2f}x |", flush=True)
            path.unlink()


if __name__ == "__main__":
    main()

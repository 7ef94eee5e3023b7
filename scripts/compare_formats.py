#!/usr/bin/env python3
"""Times two precdetect binaries on one model written in each container format, interleaved, best of N.

For changes to the loading or the safety examination rather than the kernels (scripts/compare_builds.py times
those): 24 Llama-shaped layers of 512 in bf16 written by torch.save (zip and legacy), safetensors, a NeMo-style tar
of the torch.save zip, NumPy's savez_compressed (40 of the tensors, as float32), and 20000 small tensors in one
pickle; then --recursive over ../shared/corpus when it is there. `--json --jobs 1`, hot page cache.

  .venv/bin/python scripts/compare_formats.py /tmp/precdetect-before build/precdetect
"""

import argparse
import io
import subprocess
import tarfile
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def write_models(folder):
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    shapes = {"q": (512, 512), "k": (512, 512), "v": (512, 512), "o": (512, 512), "up": (1376, 512),
              "down": (512, 1376), "gate": (1376, 512)}
    state = {f"layers.{i}.{name}.weight": (torch.randn(shape) * 0.02).to(torch.bfloat16)
             for i in range(24) for name, shape in shapes.items()}
    torch.save(state, folder / "model.bin")
    torch.save(state, folder / "legacy.pt", _use_new_zipfile_serialization=False)
    save_file(state, folder / "model.safetensors")
    torch.save({f"t.{i}": torch.randn(8) for i in range(20000)}, folder / "many.pt")
    np.savez_compressed(folder / "arrays.npz",
                        **{name.replace(".", "_"): value.float().numpy() for name, value in list(state.items())[:40]})
    weights = io.BytesIO()
    torch.save(state, weights)
    with tarfile.open(folder / "model.nemo", "w") as tar:
        for name, data in (("./model_config.yaml", b"precision: bf16-mixed\n"),
                           ("./model_weights.ckpt", weights.getvalue())):
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    inputs = [[str(folder / name)] for name in
              ("model.bin", "legacy.pt", "model.safetensors", "many.pt", "arrays.npz", "model.nemo")]
    return inputs + ([["--recursive", str(CORPUS)]] if CORPUS.is_dir() else [])


def best_times(binaries, args, repeat):
    best = [float("inf")] * len(binaries)
    for round_ in range(repeat):
        order = range(len(binaries)) if round_ % 2 == 0 else reversed(range(len(binaries)))
        for index in order:
            start = time.perf_counter()
            subprocess.run([binaries[index], "--json", "--jobs", "1", *args], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            best[index] = min(best[index], time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binaries", nargs=2, type=Path, metavar="BINARY", help="before, then after")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/precdetect-formats"))
    args = parser.parse_args()
    print("| input | before s | after s |\n|---|---|---|")
    for inputs in write_models(args.workdir):
        before, after = best_times(args.binaries, inputs, args.repeat)
        print(f"| {' '.join(Path(i).name if i.startswith('/') else i for i in inputs)} | {before:.3f} | {after:.3f} |",
              flush=True)


if __name__ == "__main__":
    main()

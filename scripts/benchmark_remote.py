#!/usr/bin/env python3
"""Times remote scans on loopback (issue 60): a 4-shard safetensors model of --size-gb served by
tests/e2e/remote_server.py (which counts the body bytes it sends per file), then

  safety-only   precdetect --safety-only INDEX_URL: bytes moved (the server's count) and wall time
  headers-only  precdetect --headers-only INDEX_URL: the same, with the census and footprint
  torch .bin    precdetect --safety-only on the same tensors saved by torch.save as one pytorch_model.bin: bytes
                moved to read its zip directory and data.pkl by range
  full          precdetect INDEX_URL: wall time, GB/s of the model's bytes, peak RSS (/usr/bin/time)
  verify        precdetect --verify hf://bench/model (the same files through the server's Hub endpoints): the full
                scan hashing each file as it reads it, against the Hub's LFS SHA-256
  curl          curl downloading the same four shards to /dev/null, one after another (what a user would do first)
  local         precdetect on the same files from the local disk (page cache warm), for reference

and prints a Markdown table. The full scan and curl alternate --rounds times (a shared machine's load varies): each
round's ratio is printed, and the table gives the best (min) wall time of each. Timing lives here, never in tests.

--format gguf|onnx|npy|msgpack times one file of that format instead, written by its own producer as
tests/e2e/test_remote_formats.py writes them (a GGUF with a 50,000-token vocabulary, an ONNX model's weights in
raw_data, one .npy array, a Flax checkpoint by flax.serialization.to_bytes): --safety-only and --headers-only (bytes moved, requests answered), the full scan against
curl of the file, and the local scan.

  .venv/bin/python scripts/benchmark_remote.py --size-gb 1 [--dtype bf16] [--rounds 5] [--format safetensors]
"""

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from test_remote_formats import normal, write_flax, write_gguf, write_onnx  # noqa: E402  (the tests' own writers)

BINARY = os.environ.get("PRECDETECT_BIN", str(REPO / "build" / "precdetect"))
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def write_model(folder, size_gb, dtype):
    """Four shards of 4096-wide square-ish matrices, about size_gb in all."""
    files = folder / "files" / "model"
    files.mkdir(parents=True)
    element = torch.tensor([], dtype=dtype).element_size()
    per_shard = int(size_gb * 1e9 / 4)
    rows = 4096
    weight_map = {}
    for k in range(4):
        name = f"model-{k + 1:05d}-of-00004.safetensors"
        tensors, left, i = {}, per_shard, 0
        while left >= rows * 1024 * element:
            cols = min(4096, left // (rows * element))
            tensors[f"layers.{k}.w{i}"] = (torch.randn(rows, cols) * 0.02).to(dtype)
            left -= rows * cols * element
            i += 1
        save_file(tensors, files / name)
        weight_map.update({tensor: name for tensor in tensors})
    (files / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return files


@contextlib.contextmanager
def served(folder):
    """tests/e2e/remote_server.py serving `folder` while the block runs (stopped by its process id); its base URL."""
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "e2e" / "remote_server.py"), folder],
                              stdout=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{json.loads(server.stdout.readline())['port']}"
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait()


def timed(command):
    """(seconds, peak RSS in MiB, stdout) of `command` under /usr/bin/time -v."""
    started = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    rss = next(int(line.split()[-1]) for line in result.stderr.splitlines() if "Maximum resident" in line)
    return seconds, rss / 1024, result.stdout


def write_single(folder, form, size_gb):
    """One --format file of about size_gb of fp16 weights, 4096 columns wide, in `folder`; returns its path."""
    folder.mkdir(parents=True)
    rows = max(1, int(size_gb * 1e9 / 2 / 4096 / 4))
    weights = {f"blk.{i}.ffn_up.weight": normal((rows, 4096), np.float16, i) for i in range(4)}
    if form == "gguf":
        write_gguf(folder / "model.gguf", weights, vocab=50000)
    elif form == "onnx":
        write_onnx(folder / "model.onnx", weights)
    elif form == "msgpack":
        write_flax(folder / "flax_model.msgpack", {name.replace(".", "/"): array for name, array in weights.items()})
    else:
        np.save(folder / "model.npy", np.concatenate(list(weights.values())))
    return next(folder.iterdir())


def bench_single(args):
    """--format gguf|onnx|npy|msgpack: one file read remotely, its header tiers, full scan, curl and the local scan."""
    with tempfile.TemporaryDirectory(prefix="precdetect-bench-remote-") as tmp:
        path = write_single(Path(tmp) / "files" / "model", args.format, args.size_gb)
        size = path.stat().st_size
        with served(tmp) as base:
            url = f"{base}/files/model/{path.name}"

            def moved():
                with urllib.request.urlopen(base + "/__stats") as answer:
                    stats = json.loads(answer.read())
                key = f"/files/model/{path.name}"
                return stats["bytes"].get(key, 0), stats["answers"].get(key, 0)

            tiers = {}
            for tier in ("--safety-only", "--headers-only"):
                urllib.request.urlopen(base + "/__reset")
                seconds, rss, _ = timed([BINARY, "--json", tier, url])
                tiers[tier] = (seconds, rss, *moved())
            rounds = []
            for _ in range(args.rounds):
                urllib.request.urlopen(base + "/__reset")
                full_s, full_rss, _ = timed([BINARY, "--json", "--no-cache", url])
                full_bytes, full_answers = moved()
                curl_s, _, _ = timed(["curl", "-sf", "-o", "/dev/null", url])
                rounds.append((full_s, full_rss, curl_s))
                print(f"round {len(rounds)}: full scan {full_s:.2f} s, curl {curl_s:.2f} s", file=sys.stderr)
            local_s = min(timed([BINARY, "--json", "--no-cache", str(path)])[0] for _ in range(args.rounds))
    full_s, curl_s = min(r[0] for r in rounds), min(r[2] for r in rounds)
    gb = size / 1e9
    print(f"one {args.format} file, {size:,} bytes; {os.cpu_count()} cores; server: tests/e2e/remote_server.py; "
          f"best of {args.rounds} rounds\n")
    print("| run | wall s | GB/s | bytes moved | requests | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for tier, (seconds, rss, sent, answers) in tiers.items():
        print(f"| precdetect {tier} (remote) | {seconds:.2f} | | {sent:,} | {answers} | {rss:.0f} |")
    print(f"| precdetect full scan (remote) | {full_s:.2f} | {gb / full_s:.2f} | {full_bytes:,} | {full_answers} | "
          f"{max(r[1] for r in rounds):.0f} |")
    print(f"| curl, the file to /dev/null | {curl_s:.2f} | {gb / curl_s:.2f} | {size:,} | 1 | |")
    print(f"| precdetect full scan (local file) | {local_s:.2f} | {gb / local_s:.2f} | | | |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-gb", type=float, default=1.0)
    parser.add_argument("--dtype", choices=DTYPES, default="bf16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--format", choices=("safetensors", "gguf", "onnx", "npy", "msgpack"), default="safetensors")
    args = parser.parse_args()
    if args.format != "safetensors":
        return bench_single(args)
    with tempfile.TemporaryDirectory(prefix="precdetect-bench-remote-") as tmp:
        files = write_model(Path(tmp), args.size_gb, DTYPES[args.dtype])
        shards = sorted(files.glob("*.safetensors"))
        bin_folder = Path(tmp) / "files" / "bin"
        bin_folder.mkdir()
        torch.save({name: tensor for shard in shards for name, tensor in load_file(shard).items()},
                   bin_folder / "pytorch_model.bin")
        bin_size = (bin_folder / "pytorch_model.bin").stat().st_size
        hub = Path(tmp) / "hub" / "bench" / "model"  # the same files as a Hub repository (hard links)
        hub.mkdir(parents=True)
        for file in files.iterdir():
            os.link(file, hub / file.name)
        total = sum(f.stat().st_size for f in shards)
        with served(tmp) as base:
            index = f"{base}/files/model/model.safetensors.index.json"

            def moved():
                with urllib.request.urlopen(base + "/__stats") as answer:
                    return sum(json.loads(answer.read())["bytes"].values())

            urllib.request.urlopen(base + "/__reset")
            safety_s, safety_rss, _ = timed([BINARY, "--json", "--safety-only", index])
            safety_bytes = moved()
            urllib.request.urlopen(base + "/__reset")
            headers_s, headers_rss, _ = timed([BINARY, "--json", "--headers-only", index])
            headers_bytes = moved()
            urllib.request.urlopen(base + "/__reset")
            bin_s, bin_rss, _ = timed([BINARY, "--json", "--safety-only", f"{base}/files/bin/pytorch_model.bin"])
            bin_bytes = moved()
            curl = ["curl", "-sf", *sum([["-o", "/dev/null", f"{base}/files/model/{f.name}"] for f in shards], [])]
            rounds = []  # (full scan s, its peak RSS MiB, curl s)
            load_before = os.getloadavg()[0]
            for _ in range(args.rounds):
                urllib.request.urlopen(base + "/__reset")
                full_s, full_rss, out = timed([BINARY, "--json", "--no-cache", index])
                full_bytes = moved()
                transferred = json.loads(out)["models"][0]["bytes_transferred"]
                curl_s, _, _ = timed(curl)
                rounds.append((full_s, full_rss, curl_s))
                print(f"round {len(rounds)}: full scan {full_s:.2f} s ({full_rss:.0f} MiB), curl {curl_s:.2f} s, "
                      f"ratio {curl_s / full_s:.2f}x", file=sys.stderr)
            hub_env = dict(os.environ, HF_ENDPOINT=base)
            # The server hashes each file on its first resolve (in Python): not the scan's time.
            subprocess.run([BINARY, "--headers-only", "hf://bench/model"], capture_output=True, env=hub_env, check=True)
            urllib.request.urlopen(base + "/__reset")
            started = time.perf_counter()
            verify = subprocess.run(["/usr/bin/time", "-v", BINARY, "--json", "--no-cache", "--verify", "hf://bench/model"],
                                    capture_output=True, text=True, env=hub_env)
            verify_s = time.perf_counter() - started
            verify_rss = next(int(line.split()[-1]) for line in verify.stderr.splitlines()
                              if "Maximum resident" in line) / 1024
            verify_bytes = moved()
            failures = json.loads(verify.stdout)["models"][0]["gate_failures"]
            if verify.returncode != 0 or failures:
                sys.exit(f"--verify failed: {failures or verify.stderr}")
            load_after = os.getloadavg()[0]
            full_s, curl_s = min(r[0] for r in rounds), min(r[2] for r in rounds)
            full_rss = max(r[1] for r in rounds)
            local_s, local_rss, _ = timed([BINARY, "--json", str(files / "model.safetensors.index.json")])
    gb = total / 1e9
    print(f"4-shard {args.dtype} model, {gb:.2f} GB; {os.cpu_count()} cores, load average {load_before:.1f} before the "
          f"rounds, {load_after:.1f} after; server: tests/e2e/remote_server.py; best of {args.rounds} rounds\n")
    print("| run | wall s | GB/s | bytes moved | peak RSS MiB |")
    print("|---|---|---|---|---|")
    print(f"| precdetect --safety-only (remote) | {safety_s:.2f} | | {safety_bytes:,} | {safety_rss:.0f} |")
    print(f"| precdetect --headers-only (remote) | {headers_s:.2f} | | {headers_bytes:,} | {headers_rss:.0f} |")
    print(f"| precdetect --safety-only of the same as one pytorch_model.bin ({bin_size:,} bytes) | {bin_s:.2f} | | "
          f"{bin_bytes:,} | {bin_rss:.0f} |")
    print(f"| precdetect full scan (remote) | {full_s:.2f} | {gb / full_s:.2f} | {full_bytes:,} (report: "
          f"{transferred:,}) | {full_rss:.0f} |")
    print(f"| precdetect --verify full scan (hf://, hashed as read) | {verify_s:.2f} | {gb / verify_s:.2f} | "
          f"{verify_bytes:,} | {verify_rss:.0f} |")
    print(f"| curl, the 4 shards to /dev/null | {curl_s:.2f} | {gb / curl_s:.2f} | {total:,} | |")
    print(f"| precdetect full scan (local files) | {local_s:.2f} | {gb / local_s:.2f} | | {local_rss:.0f} |")
    ratios = sorted(r[2] / r[0] for r in rounds)
    print(f"\nfull remote scan / curl throughput: {curl_s / full_s:.2f}x (best against best); per round "
          f"{', '.join(f'{r:.2f}' for r in ratios)} (min {ratios[0]:.2f}x)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Times `precdetect --safety-only` of a remote torch zip of many members (a model of many small tensors) on a link
with a round trip of --latency-ms: tests/e2e/remote_server.py waits that long before each answer and counts the
answers and body bytes it gives. Each binary given (PRECDETECT_BIN, then each --compare) is run --rounds times;
the table gives the requests, bytes moved and best wall time of each. Timing lives here, never in tests.

  .venv/bin/python scripts/benchmark_remote_zip.py --members 200 --latency-ms 20 [--compare OLD_BINARY]
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
BINARY = os.environ.get("PRECDETECT_BIN", str(REPO / "build" / "precdetect"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=200)
    parser.add_argument("--elements", type=int, default=2048, help="float32 values per tensor")
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare", action="append", default=[], help="another precdetect binary")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="precdetect-bench-zip-") as tmp:
        folder = Path(tmp) / "files" / "many"
        folder.mkdir(parents=True)
        torch.manual_seed(0)
        torch.save({f"layers.{i}.weight": torch.randn(args.elements) for i in range(args.members)},
                   folder / "pytorch_model.bin")
        size = (folder / "pytorch_model.bin").stat().st_size
        server = subprocess.Popen([sys.executable, str(REPO / "tests" / "e2e" / "remote_server.py"), tmp],
                                  stdout=subprocess.PIPE, text=True)
        rows = []
        try:
            base = f"http://127.0.0.1:{json.loads(server.stdout.readline())['port']}"
            url = f"{base}/files/many/pytorch_model.bin"

            def call(path):
                with urllib.request.urlopen(base + path) as answer:
                    return json.loads(answer.read())

            for binary in [BINARY, *args.compare]:
                times = []
                for _ in range(args.rounds):
                    call("/__reset")
                    call(f"/__latency?ms={args.latency_ms}")
                    started = time.perf_counter()
                    subprocess.run([binary, "--json", "--safety-only", url], capture_output=True, check=True)
                    times.append(time.perf_counter() - started)
                    stats = call("/__stats")
                rows.append((binary, stats["answers"]["/files/many/pytorch_model.bin"], stats["requests"],
                             stats["bytes"]["/files/many/pytorch_model.bin"], min(times)))
        finally:
            os.kill(server.pid, signal.SIGTERM)
            server.wait()
    print(f"torch.save of {args.members} tensors of {args.elements} float32 ({size:,} bytes); {args.latency_ms} ms "
          f"per request; best of {args.rounds}\n")
    print("| binary | requests for the file | requests in all | bytes of the file moved | wall s |")
    print("|---|---|---|---|---|")
    for binary, answers, requests, moved, seconds in rows:
        print(f"| {binary} | {answers} | {requests} | {moved:,} | {seconds:.2f} |")


if __name__ == "__main__":
    main()

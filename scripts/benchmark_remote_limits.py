#!/usr/bin/env python3
"""Measures the limits docs/using.md promises a remote read keeps (issue 69), against tests/e2e/remote_server.py on
loopback, each at its documented default unless a flag sets it:

  stall         a server that sends nothing for a tensor's range: each try ends after HF_HUB_DOWNLOAD_TIMEOUT
  stall-after   one that sends half the range, then nothing: the same (libcurl's own check noticed it ~6 s late)
  drip          16 bytes every 0.5 s, under the floor (PRECDETECT_LOW_SPEED_LIMIT over the interval): the same
  deadline      2 KiB every second, above the floor, for ever: each try ends at PRECDETECT_TRANSFER_DEADLINE
  500           a status that never clears: tried 3 times, 0.5 s then 1 s apart
  retry-after   a 503 whose Retry-After is an HTTP-date 3 s ahead (2 to 3 s from when it is read): waited for
  pages         an S3 listing whose continuation token never ends: 1,000 pages, then refused

For each: the documented value, what was measured (from the server's log of when each try came, and the wall time
of the whole scan), and measured / documented. --compare OLD_BINARY measures an older build beside it. Timing lives
here, never in tests (tests/e2e/test_remote_faults.py bounds each case at short limits).

  .venv/bin/python scripts/benchmark_remote_limits.py [--interval 10] [--deadline 20] [--compare OLD]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from benchmark_remote import served  # noqa: E402  (the same server, started and stopped by process id)
from test_remote_faults import write_swappable  # noqa: E402  (the tests' own file: a 512 KiB tensor past 64 KiB)

BINARY = os.environ.get("PRECDETECT_BIN", str(REPO / "build" / "precdetect"))
FILE = "swap/model.safetensors"


def stats(base):
    with urllib.request.urlopen(f"{base}/__stats") as answer:
        return json.loads(answer.read())


def reset(base):
    urllib.request.urlopen(f"{base}/__reset").read()


def tries(base, path):
    """When each request for `path` past its first read came, from the server's log."""
    log = stats(base)
    return [at for asked, at, wanted in zip(log["paths"], log["times"], log["ranges"])
            if asked == path and not wanted.startswith("bytes=0-")]


HELD = 150  # seconds a scan may take here: a build that keeps no limit is stopped, and said to have held


def scan(binary, url, env):
    """(seconds, exit code, the model's error code) of one scan; ("held", None) as its outcome past HELD s."""
    started = time.monotonic()
    try:
        result = subprocess.run([binary, "--json", url], capture_output=True, text=True, env={**os.environ, **env},
                                timeout=HELD)
    except subprocess.TimeoutExpired:
        return time.monotonic() - started, f"held past {HELD} s, stopped", None
    model = json.loads(result.stdout)["models"][0] if result.stdout else {"error": None}
    return time.monotonic() - started, result.returncode, (model["error"] or {}).get("code")


def per_try(base, binary, kind, env, wall_only=False):
    """A fault's scan: the seconds each try took (the gaps between tries, less the documented waits), its wall time."""
    reset(base)
    seconds, code, error = scan(binary, f"{base}/fault/{kind}/{FILE}", env)
    times = tries(base, f"/fault/{kind}/{FILE}")
    waits = [0.5, 1.0]
    gaps = [later - earlier - waits[i] for i, (earlier, later) in enumerate(zip(times, times[1:]))]
    return {"tries": len(times), "per_try": gaps, "wall": seconds, "code": code, "error": error}


def measure(base, binary, interval, deadline):
    """Each limit's (name, documented, measured, unit, detail) rows for `binary`."""
    rows = []
    env = {"HF_HUB_DOWNLOAD_TIMEOUT": str(interval)}
    for kind, what in (("stall", "nothing sent"), ("stall-after", "half sent, then nothing"),
                       ("drip-16-500", "16 bytes every 0.5 s")):
        run = per_try(base, binary, kind, env)
        # The last try's end is the scan's: its wall time less the tries before it, the waits and the first read.
        documented_total = 3 * interval + 1.5
        rows.append((f"stall: {what}", f"{interval} s a try, {documented_total:.1f} s in all",
                     f"{', '.join(f'{g:.1f}' for g in run['per_try'])} s a try, {run['wall']:.1f} s in all",
                     run['wall'] / documented_total, f"{run['tries']} tries, exit {run['code']} {run['error']}"))
    run = per_try(base, binary, "drip-2048-1000", {**env, "PRECDETECT_TRANSFER_DEADLINE": str(deadline)})
    documented_total = 3 * deadline + 1.5
    rows.append(("deadline: 2 KiB/s for ever", f"{deadline} s a try, {documented_total:.1f} s in all",
                 f"{', '.join(f'{g:.1f}' for g in run['per_try'])} s a try, {run['wall']:.1f} s in all",
                 run['wall'] / documented_total, f"{run['tries']} tries, exit {run['code']} {run['error']}"))
    reset(base)
    seconds, code, error = scan(binary, f"{base}/fault/500/{FILE}", env)
    log = stats(base)
    times = [at for asked, at in zip(log["paths"], log["times"]) if asked == f"/fault/500/{FILE}"]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    rows.append(("500 for ever: tries, spacing", "3 tries, 0.5 s then 1 s",
                 f"{len(times)} tries, {', '.join(f'{g:.2f}' for g in gaps)} s",
                 (sum(gaps) / 1.5) if len(gaps) == 2 else float("nan"), f"exit {code} {error}"))
    reset(base)
    seconds, code, error = scan(binary, f"{base}/fault/503-date/{FILE}", env)
    log = stats(base)
    times = [at for asked, at in zip(log["paths"], log["times"]) if asked == f"/fault/503-date/{FILE}"]
    wait = times[1] - times[0] if len(times) > 1 else float("nan")
    until = math.floor(times[0] + 3) - times[0]  # the server's date is a whole second: formatdate() drops the rest
    rows.append(("Retry-After: an HTTP-date 3 s ahead", f"until the date: {until:.2f} s", f"{wait:.2f} s",
                 wait / until, f"exit {code}"))
    reset(base)
    seconds, code, error = scan(binary, "s3://raw-keys/pages-endless/", {**env, "AWS_ENDPOINT_URL": base})
    pages = stats(base)["paths"].count("/raw-keys")
    rows.append(("S3 pages, a token for ever", "1000 pages", f"{pages} pages in {seconds:.1f} s", pages / 1000,
                 f"exit {code} {error}"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=int, default=10, help="HF_HUB_DOWNLOAD_TIMEOUT (default: its default)")
    parser.add_argument("--deadline", type=int, default=20,
                        help="PRECDETECT_TRANSFER_DEADLINE for the deadline's row (its default, 600 s, takes 30 min)")
    parser.add_argument("--compare", help="an older precdetect to measure beside this one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="precdetect-limits-") as tmp:
        write_swappable(Path(tmp) / "files" / "swap")
        keys = {f"pages-endless/{name}": f"files/swap/{name}" for name in ("model.safetensors",)}
        (Path(tmp) / "raw-keys.json").write_text(json.dumps(keys))
        with served(tmp) as base:
            builds = [("this build", BINARY)] + ([("--compare", args.compare)] if args.compare else [])
            for label, binary in builds:
                print(f"\n{label}: {binary}\n")
                print("| limit | documented | measured | measured / documented | outcome |")
                print("|---|---|---|---|---|")
                for name, documented, measured, ratio, detail in measure(base, binary, args.interval, args.deadline):
                    print(f"| {name} | {documented} | {measured} | {ratio:.2f} | {detail} |")


if __name__ == "__main__":
    main()

"""The pickle machine against CPython's unpickler: the same byte streams go to CPython's pickle.Unpickler, whose
find_class records each global and hands back an inert stand-in (nothing is imported), and to precdetect's pickle
machine (precdetect_pickle_log). A divergence is a stream where CPython imports a global the machine did not log,
or where CPython reads the pickle through and the machine stops: both mean the safety examination saw less than an
unpickler runs. A stream whose opcodes straddle or nest FRAMEs is unsafe whatever it imports (the machine names
that tampering), and is not compared: CPython 3.11 reads a text line that straddles a FRAME from past the frame,
dropping the part inside it.

Streams: the regression cases (tests/differential/regressions, each a divergence found once), pickles that CPython
and torch write, mutations of them, and generated opcode sequences (every string encoding of GLOBAL and
STACK_GLOBAL operands, every memo put and get, stack no-ops between operands, FRAME boundaries, protocol switches).
CPython runs in a child process under a 1 GiB address-space limit. Prints the counts; exits 1 on a divergence, after
saving each to --save (docs/fuzzing.md says how to turn one into a regression case).

    pickle_differential.py --harness build/tests/precdetect_pickle_log --seconds 40 [--seed N] [--save DIR]"""

import argparse
import io
import json
import pickle
import random
import re
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[2] / "shared" / "corpus"
BATCH = 400

# ---- CPython's side, run in a child process (this file with --cpython) ----


class Inert:
    """What find_class hands back: a class any call, NEWOBJ, BUILD, APPEND or SETITEM accepts, doing nothing."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return Inert()

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, item):
        pass

    def extend(self, items):
        pass


class RecordingUnpickler(pickle.Unpickler):
    def __init__(self, stream, imported):
        super().__init__(stream)
        self.imported = imported

    def find_class(self, module, name):
        self.imported.append([module, name])
        return REAL.get((module, name)) or type(name if name.isidentifier() else "Inert", (Inert,), {})

    def persistent_load(self, pid):
        return Inert()


def cpython_side():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    for line in sys.stdin:
        imported = []
        try:
            RecordingUnpickler(io.BytesIO(Path(line.rstrip("\n")).read_bytes()), imported).load()
            error = None
        except BaseException as e:  # any failure, MemoryError and RecursionError included, is "it stopped"
            error = f"{type(e).__name__}: {e}"[:200]
        print(json.dumps({"imports": imported, "error": error}), flush=True)


# ---- streams ----

def short_unicode(text):
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


# Every way an operand of STACK_GLOBAL can be a str on the stack (protocol 0-2 strings decode as ASCII).
STRING_FORMS = {
    "SHORT_BINUNICODE": short_unicode,
    "BINUNICODE": lambda t: b"X" + struct.pack("<I", len(t.encode())) + t.encode(),
    "BINUNICODE8": lambda t: b"\x8d" + struct.pack("<Q", len(t.encode())) + t.encode(),
    "UNICODE": lambda t: b"V" + t.encode("raw_unicode_escape") + b"\n",
    "STRING": lambda t: b"S'" + t.encode() + b"'\n",
    "BINSTRING": lambda t: b"T" + struct.pack("<I", len(t)) + t.encode(),
    "SHORT_BINSTRING": lambda t: b"U" + bytes([len(t)]) + t.encode(),
}
# Ways to store the top of the stack in the memo (index i) and to fetch it back.
MEMO_PUTS = {
    "PUT": lambda i: b"p" + str(i).encode() + b"\n",
    "BINPUT": lambda i: b"q" + bytes([i]),
    "LONG_BINPUT": lambda i: b"r" + struct.pack("<I", i),
    "MEMOIZE": None,  # stores at the memo's size: tracked by the generator
}
MEMO_GETS = {
    "GET": lambda i: b"g" + str(i).encode() + b"\n",
    "BINGET": lambda i: b"h" + bytes([i]),
    "LONG_BINGET": lambda i: b"j" + struct.pack("<I", i),
}
# Opcode sequences that leave the stack as it was.
NO_OPS = [b"", b"20", b"(0", b"(" + short_unicode("x") + b"1", b"N0", b"(N1", b"20" * 3, b"(0(0"]
NAMES = [("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"), ("builtins", "getattr"),
         ("os", "system"), ("models.yolo", "Model"), ("__builtin__", "eval"), ("numpy", "dtype"),
         ("torch.nn.modules.linear", "Linear"), ("a.b.c", "D.e")]


class Generator:
    """Opcode sequences that import globals in every spelling; CPython reads each through (or the sequence is not
    counted: a divergence needs CPython to read on)."""

    def __init__(self, rng):
        self.rng = rng

    def stream(self):
        rng = self.rng
        protocol = rng.randrange(0, 6)
        ops = [b"\x80" + bytes([protocol])] if protocol >= 2 or rng.random() < 0.5 else []
        stored = set()  # the memo's indexes: MEMOIZE stores at their count, as both unpicklers do
        for _ in range(rng.randrange(1, 4)):
            module, name = rng.choice(NAMES)
            if rng.random() < 0.3:
                ops.append(b"c" + module.encode() + b"\n" + name.encode() + b"\n")
            else:
                for text in (module, name):
                    ops.append(rng.choice(list(STRING_FORMS.values()))(text))
                    ops.append(rng.choice(NO_OPS))
                    if rng.random() < 0.5:  # through the memo, then dropped and fetched back
                        put = rng.choice(list(MEMO_PUTS))
                        index = len(stored) if put == "MEMOIZE" else rng.randrange(0, 256)
                        ops.append(b"\x94" if put == "MEMOIZE" else MEMO_PUTS[put](index))
                        stored.add(index)
                        ops.append(b"0" + rng.choice(list(MEMO_GETS.values()))(index))
                    if rng.random() < 0.2:
                        ops.append(b"\x80" + bytes([rng.randrange(2, 6)]))  # a protocol switch mid-stream
                ops.append(b"\x93")  # STACK_GLOBAL
            uses = [b"0"] if name.startswith("_rebuild") else [b"0", b")R0", b")\x810", b"}b0"]
            ops.append(rng.choice(uses))  # dropped, called, built or given state
        ops.append(b"N.")
        return self.framed(ops) if protocol >= 4 and rng.random() < 0.6 else b"".join(ops)

    def framed(self, ops):
        """FRAMEs over runs of whole opcodes (or, rarely, one that straddles: tampering CPython may read on)."""
        out, at = [ops[0]], 1
        while at < len(ops):
            take = self.rng.randrange(1, 4)
            body = b"".join(ops[at:at + take])
            out.append(b"\x95" + struct.pack("<Q", len(body)) + body)
            at += take
        return b"".join(out)


class ObjectForPickling:
    """An instance pickled by reference to its class, with a method reference (getattr) in its state."""

    def __init__(self):
        self.method = self.describe
        self.items = [1, 2.5, "three", b"four", None, True, (5, 6), {"seven": 7}]

    def describe(self):
        return "x"


def seed_pickles():
    """Pickles CPython and torch write, for mutation."""
    objects = [{"a": [1, 2, 3], "b": ("x", b"y", 3.5, None)}, list(range(300)), {i: str(i) for i in range(50)},
               ObjectForPickling(), set(range(10)), frozenset("abc"), 2 ** 100, -1.5e300, "é" * 30, bytearray(b"xy")]
    seeds = [pickle.dumps(o, protocol=p) for o in objects for p in range(0, 6)]
    try:
        import torch
        for value in ({"w": torch.ones(3), "b": torch.zeros(2).half()}, torch.nn.Linear(2, 2)):
            buffer = io.BytesIO()
            torch.save(value, buffer)
            with zipfile.ZipFile(buffer) as archive:
                seeds += [archive.read(n) for n in archive.namelist() if n.endswith(".pkl")]
    except ImportError:
        pass
    for path in sorted(CORPUS.rglob("*")) if CORPUS.is_dir() else []:
        if path.suffix in (".pt", ".pth", ".bin") and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                seeds += [archive.read(n) for n in archive.namelist() if n.endswith("data.pkl")][:1]
    return [s for s in seeds if len(s) < 1 << 20]


def mutate(rng, seeds):
    data = bytearray(rng.choice(seeds))
    for _ in range(rng.randrange(1, 4)):
        kind = rng.randrange(5)
        at = rng.randrange(len(data)) if data else 0
        if kind == 0 and data:
            data[at] = rng.randrange(256)
        elif kind == 1:
            data[at:at] = rng.choice([b"20", b"(0", b"0", b"2", b"\x94", b"(", b"1", b"\x80\x04", b"N"])
        elif kind == 2 and data:
            del data[at:at + rng.randrange(1, 8)]
        elif kind == 3 and data:
            data[at:at] = data[at:at + rng.randrange(1, 16)]
        else:
            other = rng.choice(seeds)
            data = data[:at] + other[rng.randrange(len(other)):]
    return bytes(data)


# ---- the comparison ----

def run_lines(command, paths):
    result = subprocess.run(command, input="".join(f"{p}\n" for p in paths), capture_output=True, text=True,
                            timeout=600)
    lines = result.stdout.split("\n")[:-1]  # not splitlines(): a message may hold U+2028
    if len(lines) != len(paths):
        raise SystemExit(f"{command[0]} answered {len(lines)} of {len(paths)} streams: {result.stderr[-2000:]}")
    return [json.loads(line) for line in lines]


# The machine interprets torch's rebuild functions and keeps an unknown object's items as a dict or a list, and stops
# where their arguments or items do not fit; CPython's stand-ins accept anything, where the real functions and
# classes would raise too. Past such a stop the two are not comparable: the stream is counted apart (a stop is
# `unverified` at best, never `safe`).
INTERPRETED = re.compile(r"_rebuild|tensor |storage|rebuild calls|target has the wrong type")
# What the machine names when a stream's opcodes cross its FRAMEs: unsafe by itself, and where CPython's own
# unpicklers disagree with each other on the bytes.
FRAME_TAMPERING = {"frame_straddled", "nested_frame"}
# Globals the machine reads as what they are: CPython gets the real (harmless) classes.
REAL = {("collections", "OrderedDict"): __import__("collections").OrderedDict, ("builtins", "dict"): dict,
        ("__builtin__", "dict"): dict}


def divergence(cpython, machine):
    logged = {tuple(i) for i in machine["imports"]}
    missed = [f"{m}.{n}" for m, n in cpython["imports"] if (m, n) not in logged]
    if missed:
        return f"CPython imports {', '.join(missed)}, which the machine did not log"
    if cpython["error"] is None and machine["stopped"]:
        return f"CPython reads it through; the machine stopped: {machine['stopped']}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harness", help="precdetect_pickle_log")
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--save", type=Path, help="folder for the streams that diverge")
    parser.add_argument("--cpython", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cpython:
        return cpython_side()
    rng = random.Random(args.seed)
    seeds, generator = seed_pickles(), Generator(rng)
    regressions = sorted((HERE / "regressions").glob("*.pkl"))
    counts, found = Counter(), []
    deadline = time.monotonic() + args.seconds
    with tempfile.TemporaryDirectory(prefix="precdetect-differential-") as scratch:
        while time.monotonic() < deadline or counts["streams"] == 0:
            paths, kinds = [], []
            for path in regressions:
                paths.append(path), kinds.append("regression")
            regressions = []
            for i in range(BATCH):
                kind = rng.choice(["generated", "mutated", "seed"] if i < 20 else ["generated", "mutated"])
                data = generator.stream() if kind == "generated" else mutate(rng, seeds) if kind == "mutated" \
                    else rng.choice(seeds)
                path = Path(scratch) / f"{counts['streams'] + len(paths)}.pkl"
                path.write_bytes(data)
                paths.append(path), kinds.append(kind)
            cpython = run_lines([sys.executable, __file__, "--cpython"], paths)
            machine = run_lines([args.harness], paths)
            for path, kind, ours, theirs in zip(paths, kinds, machine, cpython):
                counts["streams"] += 1
                counts[f"{kind}"] += 1
                counts["cpython read through" if theirs["error"] is None else "cpython stopped"] += 1
                counts["cpython imports"] += len(theirs["imports"])
                if FRAME_TAMPERING & set(ours["tampering"]):  # unsafe by that alone, whatever either imports
                    counts["frame tampering named (not compared)"] += 1
                elif ours["stopped"] and INTERPRETED.search(ours["stopped"]):
                    counts["stopped where the machine interprets (not compared)"] += 1
                elif (why := divergence(theirs, ours)):
                    found.append((path.read_bytes(), kind, why))
        print(", ".join(f"{value} {key}" for key, value in sorted(counts.items())) + f"; {len(found)} divergences")
    for number, (data, kind, why) in enumerate(found[:20]):
        print(f"divergence ({kind}): {why}: {data[:200]!r}")
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"divergence-{number}.pkl").write_bytes(data)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Times precdetect against the seed-style Python loop and a plain read() of the same checkpoint.

Generates 7B-shaped synthetic checkpoints (Llama-style tensor shapes, as many layers as fit --size-gb) in each
dtype, warms the page cache, then measures, side by side in one run:
  read      read() of the whole file into a reused 64 MiB buffer (the page-cache ceiling for a reader)
  seed      safetensors.torch.load_file(device=DEVICE), then abs().min(), abs().max(), linalg.norm per tensor
            (seed 000), in this process: its `import torch` and CUDA start-up are not timed
  precdetect  build/precdetect --json --device DEVICE --io IO FILE
and prints a Markdown table of GB/s (precdetect also without its fixed start-up, and "in a batch": the file
scanned --batch times in one process, less once, i.e. what each further model of a batch costs), ratios and
precdetect's peak RSS against the target of 256 MiB + 2 x the largest tensor. With --cold every timed run
starts with the file dropped from the page cache (posix_fadvise DONTNEED) and precdetect runs with both
--io mmap and --io pread. With --diff it also times `precdetect diff` of each checkpoint against itself (a lossless
conversion) and against a fine-tuned copy (every weight moved by ~1e-3 relative, most below bf16's spacing), in
GB/s of both files read. With --formats it also writes each checkpoint as GGUF, a stored and a deflated .npz,
an uncompressed Flax msgpack and a contiguous and a chunked (gzip) HDF5 file, with each format's own writer, and
times precdetect on each against the same tensors in safetensors (issue 24: within 10% for GGUF, stored .npz and
Flax; peak RSS within 256 MiB + 2 x the largest tensor for all, compressed ones included; precdetect's and its
HDF5 helper's together); from the f16 model also a Q8_0 GGUF (gguf-py's quantizer) and a Q4_K one (random blocks: gguf-py
writes no K-quant), which precdetect dequantizes (issue 39: within 2x of the f16 GGUF). With --check it also times precdetect.check(model) on a live transformers Llama of
--size-gb in each dtype against seed 000's analyze([model]), in this process, at the same thread count (issue 38:
at least 5x faster). Timing lives here, never in tests.

  .venv/bin/python scripts/benchmark.py --size-gb 1 --threads 2 [--device cuda] [--cold] [--diff] [--formats]
  .venv/bin/python scripts/benchmark.py --size-gb 1.3 --dtypes bf16,f32 --check-only
"""

import argparse
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

REPO = Path(__file__).resolve().parents[1]
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
HIDDEN, FFN, VOCAB = 4096, 11008, 32000
# The live model of --check: a Llama as transformers builds it, 2048 wide, with as many layers as fit --size-gb.
LIVE_HIDDEN, LIVE_FFN = 2048, 5632


def llama_shapes(budget_elements):
    """Tensor shapes of a Llama-7B, embedding first, layer by layer until the budget is spent."""
    shapes = {"model.embed_tokens.weight": (VOCAB, HIDDEN)}
    layer = 0
    while sum(a * b for a, b in shapes.values()) < budget_elements:
        p = f"model.layers.{layer}."
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            shapes[p + f"self_attn.{name}.weight"] = (HIDDEN, HIDDEN)
        shapes[p + "mlp.gate_proj.weight"] = (FFN, HIDDEN)
        shapes[p + "mlp.up_proj.weight"] = (FFN, HIDDEN)
        shapes[p + "mlp.down_proj.weight"] = (HIDDEN, FFN)
        shapes[p + "input_layernorm.weight"] = (HIDDEN, 1)
        layer += 1
    return shapes


def synthetic_checkpoint(workdir, name, size_gb):
    """The path of the synthetic checkpoint of dtype `name` (a key of DTYPES), generated on first use."""
    path = workdir / f"llama-{name}-{size_gb:g}gb.safetensors"
    make_checkpoint(path, DTYPES[name], size_gb)
    return path


def torch_device(device):
    """The seed loop's torch device for precdetect's --device (cuda:N counts as cuda)."""
    return "cuda" if device.startswith("cuda") else "cpu"


def make_checkpoint(path, dtype, size_gb):
    if path.exists():
        return
    budget = int(size_gb * 1e9 / torch.tensor([], dtype=dtype).element_size())
    generator = torch.Generator().manual_seed(0)
    tensors = {name: (torch.randn(shape, generator=generator) * 0.02).to(dtype)
               for name, shape in llama_shapes(budget).items()}
    save_file(tensors, path)


def make_tuned_copy(path, tuned):
    """A fine-tuned copy: each weight w moved by N(0, 1) * 1e-3 * |w|, stored in the original dtype."""
    if tuned.exists():
        return
    generator = torch.Generator().manual_seed(1)
    tensors = {name: (w.float() + torch.randn(w.shape, generator=generator) * 1e-3 * w.float().abs()).to(w.dtype)
               for name, w in load_file(path).items()}
    save_file(tensors, tuned)


def largest_tensor_mib(dtype):
    return VOCAB * HIDDEN * torch.tensor([], dtype=dtype).element_size() / 2**20  # the embedding


def drop_from_page_cache(*paths):
    """Cold reads without root: the kernel drops a file's clean cached pages when asked."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def recache(path):
    """`path` dropped from the page cache and read back: how a file was written (one write, many, through a
    mapping) decides the size of its cached pages, and with it how many faults a mapping takes, which made the
    same tensors scan up to 15% apart by writer alone. Read back, every file is cached alike."""
    with open(path, "rb") as f:
        os.fsync(f.fileno())  # only clean pages are dropped
    drop_from_page_cache(path)
    plain_read(path)


def timed(action, repeat, before=lambda: None, summary=min):
    """`summary` (the best by default) of `repeat` timings of `action`, each after an untimed `before`."""
    times = []
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return summary(times)


def plain_read(path):
    buffer = bytearray(64 << 20)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buffer):
            pass


def seed_loop(path, device):
    abs_min, abs_max, norm_min, norm_max = 1e10, 0, 1e10, 0
    for p in load_file(path, device=device).values():
        p_abs = p.abs()
        abs_min, abs_max = min(abs_min, p_abs.min().item()), max(abs_max, p_abs.max().item())
        norm = torch.linalg.norm(p).item()
        if norm > 0:
            norm_min, norm_max = min(norm_min, norm), max(norm_max, norm)
    return abs_min, abs_max, norm_min, norm_max


def run_precdetect(*args, check=True):
    """Runs build/precdetect ARGS under /usr/bin/time; returns its peak resident set size in MiB.

    Not os.wait4 on our own child: a child forked from this multi-GB process counts the parent's pages in its
    ru_maxrss until it execs; /usr/bin/time is a small parent.
    """
    with tempfile.NamedTemporaryFile("r") as report:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name, str(REPO / "build" / "precdetect"),
                        *map(str, args)], check=check, stdout=subprocess.DEVNULL)
        return int(report.read().strip().splitlines()[-1]) / 1024


def process_tree_peak_rss_mib(*args):
    """Runs build/precdetect ARGS; returns the peak of its resident set plus its helpers' (precdetect-hdf5), summed
    and sampled every 10 ms: /usr/bin/time reports the largest process of the tree, not the tree."""
    def rss_kib(pid):
        try:
            with open(f"/proc/{pid}/status") as status:
                return next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
        except OSError:
            return 0

    def children(pid):
        try:
            return [int(c) for t in os.listdir(f"/proc/{pid}/task")
                    for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
        except OSError:
            return []

    process = subprocess.Popen([str(REPO / "build" / "precdetect"), *map(str, args)], stdout=subprocess.DEVNULL)
    peak = 0
    while process.poll() is None:
        peak = max(peak, rss_kib(process.pid) + sum(map(rss_kib, children(process.pid))))
        time.sleep(0.01)
    return peak / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-gb", type=float, default=1.0)
    parser.add_argument("--dtypes", default="bf16,f16,f32")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--device", default="cpu", help="cpu or cuda, for precdetect and the seed loop")
    parser.add_argument("--io", default=None, help="precdetect's --io, or several: mmap,pread (default: mmap hot, "
                        "both with --cold)")
    parser.add_argument("--cold", action="store_true", help="drop the file from the page cache before each run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/precdetect-bench"))
    parser.add_argument("--diff", action="store_true", help="also time precdetect diff")
    parser.add_argument("--formats", action="store_true", help="also time GGUF, .npz, Flax and HDF5 copies")
    parser.add_argument("--check", action="store_true", help="also time precdetect.check on a live model")
    parser.add_argument("--check-only", action="store_true", help="only time precdetect.check on a live model")
    parser.add_argument("--batch", type=int, default=5, help="files in the batch run (at least 2); more files "
                        "make its per-file figure, a difference of two timings, less noisy")
    args = parser.parse_args()
    if args.batch < 2:
        parser.error("--batch needs at least 2 files")
    torch.set_num_threads(args.threads)
    args.workdir.mkdir(parents=True, exist_ok=True)
    device = torch_device(args.device)
    if device == "cuda":
        torch.ones(1, device="cuda")  # CUDA start-up, untimed like `import torch`
        print(f"GPU: {torch.cuda.get_device_name()}")
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"torch {torch.__version__}, {args.threads} torch threads; device {args.device}; "
          f"page cache {'cold' if args.cold else 'hot'}; best of {args.repeat}\n")
    # libtorch's static initialisation is a fixed cost per process; the seed loop's `import torch` is not timed
    # either, so both end-to-end and start-up-excluded figures are shown.
    startup = ("--version",) if device == "cpu" else ("--device", args.device, "--json", "/nonexistent")
    startup_s = timed(lambda: run_precdetect(*startup, check=False), args.repeat)
    if args.check_only:
        return time_check(args, device)
    print(f"precdetect start-up ({' '.join(startup)}): {startup_s:.2f} s, "
          f"peak RSS {run_precdetect(*startup, check=False):.0f} MiB\n")
    print("| dtype | file GB | read GB/s | seed loop GB/s | io | precdetect GB/s | excl. start-up GB/s | vs read "
          "| vs seed | in a batch GB/s | batch vs read | batch vs seed | peak RSS MiB | RSS target MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.dtypes.split(","):
        path = synthetic_checkpoint(args.workdir, name, args.size_gb)
        gb = path.stat().st_size / 1e9
        before = (lambda: drop_from_page_cache(path)) if args.cold else (lambda: plain_read(path))
        read_s = timed(lambda: plain_read(path), args.repeat, before)
        seed_s = timed(lambda: seed_loop(path, device), args.repeat, before)
        for io in (args.io or ("mmap,pread" if args.cold else "mmap")).split(","):
            ours = ("--json", "--device", args.device, "--io", io, path)
            ours_s = timed(lambda: run_precdetect(*ours), args.repeat, before)
            # In a batch the file is read again by one process: hot after the first, so not measured --cold.
            batch = "n/a | n/a | n/a"
            if not args.cold:
                further = args.batch - 1
                batch_s = timed(lambda: run_precdetect("--jobs", "1", *ours, *[path] * further), args.repeat,
                                before) - ours_s
                per_file_s = batch_s / further
                batch = f"{gb / per_file_s:.2f} | {read_s / per_file_s:.2f}x | {seed_s / per_file_s:.2f}x"
            rss_mib = run_precdetect(*ours)
            print(f"| {name} | {gb:.2f} | {gb / read_s:.2f} | {gb / seed_s:.2f} | {io} | {gb / ours_s:.2f} | "
                  f"{gb / (ours_s - startup_s):.2f} | {read_s / ours_s:.2f}x | {seed_s / ours_s:.2f}x | "
                  f"{batch} | {rss_mib:.0f} | "
                  f"{256 + 2 * largest_tensor_mib(DTYPES[name]):.0f} |", flush=True)
    if args.diff:
        time_diffs(args, startup_s)
    if args.formats:
        time_formats(args)
    if args.check:
        time_check(args, device)


def time_diffs(args, startup_s):
    print("\n| dtype | pair | GB read | diff GB/s | excl. start-up GB/s | scan GB/s (one file) | excl. start-up "
          "| peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.dtypes.split(","):
        path = synthetic_checkpoint(args.workdir, name, args.size_gb)
        tuned = args.workdir / f"tuned-{name}-{args.size_gb:g}gb.safetensors"
        make_tuned_copy(path, tuned)
        scan_s = timed(lambda: run_precdetect("--json", "--device", args.device, path), args.repeat)
        scan_gb = path.stat().st_size / 1e9
        for label, other in (("itself", path), ("fine-tuned", tuned)):
            plain_read(path), plain_read(other)  # warm the page cache
            gb = (path.stat().st_size + other.stat().st_size) / 1e9
            diff_s = timed(lambda: run_precdetect("diff", "--json", "--device", args.device, path, other), args.repeat)
            rss_mib = run_precdetect("diff", "--json", "--device", args.device, path, other)
            print(f"| {name} | {label} | {gb:.2f} | {gb / diff_s:.2f} | {gb / (diff_s - startup_s):.2f} | "
                  f"{scan_gb / scan_s:.2f} | {scan_gb / (scan_s - startup_s):.2f} | {rss_mib:.0f} |", flush=True)


def numpy_arrays(path):
    """The checkpoint's tensors as NumPy arrays (bf16 through ml_dtypes, as flax and jax hold it)."""
    import ml_dtypes
    arrays = {}
    for name, tensor in load_file(path).items():
        if tensor.dtype == torch.bfloat16:
            arrays[name] = tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        else:
            arrays[name] = tensor.numpy()
    return arrays


def quantized_gguf_tensor(kind, array):
    """A matrix as a GGUF of `kind` holds it, with its raw dtype: Q8_0 by gguf-py's quantizer; Q4_K (which gguf-py
    cannot write) as blocks of random bytes with finite scales, the same bytes to read; norm vectors stay as they
    are, as llama.cpp keeps them unquantized."""
    import gguf
    import numpy as np
    types = {"gguf-q8_0": gguf.GGMLQuantizationType.Q8_0, "gguf-q4_k": gguf.GGMLQuantizationType.Q4_K}
    qtype = types[kind]
    if array.ndim != 2 or array.shape[1] % 256 != 0:
        return array, None
    if qtype == gguf.GGMLQuantizationType.Q8_0:
        return gguf.quants.quantize(array.astype(np.float32), qtype), qtype
    rows, blocks = array.shape[0], array.shape[1] // 256
    raw = np.random.default_rng(0).integers(0, 256, (rows * blocks, 144), dtype=np.uint8)
    raw[:, 0:4] = np.full((rows * blocks, 2), 0.01, np.float16).view(np.uint8)  # d and dmin
    return raw.reshape(rows, blocks * 144), qtype


def write_format(kind, arrays, path):
    """`arrays` written to `path` by the format's own writer."""
    import numpy as np
    if kind.startswith("gguf"):
        import gguf
        writer = gguf.GGUFWriter(str(path), "llama")
        for name, array in arrays.items():
            if kind != "gguf":
                quantized, raw_dtype = quantized_gguf_tensor(kind, array)
                writer.add_tensor(name, quantized, raw_dtype=raw_dtype)
            elif array.dtype.name == "bfloat16":
                writer.add_tensor(name, array.view(np.uint8), raw_dtype=gguf.GGMLQuantizationType.BF16)
            else:
                writer.add_tensor(name, array)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    elif kind in ("npz", "npz-deflated"):
        (np.savez if kind == "npz" else np.savez_compressed)(path, **arrays)
    elif kind == "flax":
        import flax.serialization
        tree = {}
        for name, array in arrays.items():
            node = tree
            *parents, last = name.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = array
        path.write_bytes(flax.serialization.msgpack_serialize(tree))
    else:
        import h5py
        with h5py.File(path, "w") as f:
            for name, array in arrays.items():
                options = {"chunks": True, "compression": "gzip"} if kind == "hdf5-chunked" else {}
                f.create_dataset(name.replace(".", "/"), data=array, **options)


FORMAT_FILES = {"gguf": "gguf", "gguf-q8_0": "gguf", "gguf-q4_k": "gguf", "npz": "npz", "npz-deflated": "npz",
                "flax": "msgpack", "hdf5": "h5", "hdf5-chunked": "h5"}


def time_formats(args):
    print("\n| dtype | format | file GB | precdetect s | safetensors s | vs safetensors | peak RSS MiB "
          "| RSS target MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.dtypes.split(","):
        path = synthetic_checkpoint(args.workdir, name, args.size_gb)
        arrays = None
        recache(path)
        base_s = timed(lambda: run_precdetect("--json", "--device", args.device, path), args.repeat)
        for kind, extension in FORMAT_FILES.items():
            if name == "bf16" and kind in ("npz", "npz-deflated", "hdf5", "hdf5-chunked"):
                continue  # NumPy's formats and h5py have no bfloat16
            if name != "f16" and kind in ("gguf-q8_0", "gguf-q4_k"):
                continue  # quantized from the f16 model, and read against its f16 GGUF
            copy = args.workdir / f"llama-{name}-{args.size_gb:g}gb-{kind}.{extension}"
            if not copy.exists():
                arrays = arrays if arrays is not None else numpy_arrays(path)
                write_format(kind, arrays, copy)
            recache(copy)
            ours_s = timed(lambda: run_precdetect("--json", "--device", args.device, copy), args.repeat)
            rss_mib = max(run_precdetect("--json", "--device", args.device, copy),
                          process_tree_peak_rss_mib("--json", "--device", args.device, copy))
            print(f"| {name} | {kind} | {copy.stat().st_size / 1e9:.2f} | {ours_s:.2f} | {base_s:.2f} | "
                  f"{ours_s / base_s:.2f}x | {rss_mib:.0f} | {256 + 2 * largest_tensor_mib(DTYPES[name]):.0f} |",
                  flush=True)


def seed_analyze(modules):
    """seed 000's analyze(modules, verbose=False), as its notebook defines it."""
    abs_min, abs_max = 1e10, 0
    norm_min, norm_max = 1e10, 0
    for m in modules:
        for p in m.parameters(recurse=True):
            p_abs = p.abs()
            p_abs_max = p_abs.max().item()
            p_abs_min = p_abs.min().item()
            if p_abs_min < abs_min:
                abs_min = p_abs_min
            if p_abs_max > abs_max:
                abs_max = p_abs_max
            p_norm = torch.linalg.norm(p.data)
            if p_norm > 0:
                if p_norm < norm_min:
                    norm_min = p_norm
                if p_norm > norm_max:
                    norm_max = p_norm
    return abs_min, abs_max, norm_min, norm_max


def live_llama(dtype, size_gb, device):
    """A transformers LlamaForCausalLM of about `size_gb` in `dtype` on `device`, as from_pretrained leaves it."""
    from transformers import LlamaConfig, LlamaForCausalLM

    per_layer = 4 * LIVE_HIDDEN * LIVE_HIDDEN + 3 * LIVE_HIDDEN * LIVE_FFN
    budget = size_gb * 1e9 / torch.tensor([], dtype=dtype).element_size() - 2 * VOCAB * LIVE_HIDDEN
    config = LlamaConfig(hidden_size=LIVE_HIDDEN, intermediate_size=LIVE_FFN, vocab_size=VOCAB,
                         num_hidden_layers=max(1, round(budget / per_layer)), num_attention_heads=16,
                         num_key_value_heads=16, tie_word_embeddings=False)
    with torch.device(device):
        return LlamaForCausalLM(config).to(dtype).eval()


def staged_precdetect():
    """precdetect from this build: python/precdetect with build/'s C interface in its bin/, staged in a scratch
    folder."""
    import shutil
    import sys

    stage = Path(tempfile.mkdtemp(prefix="precdetect-benchmark-"))
    shutil.copytree(REPO / "python" / "precdetect", stage / "precdetect")
    (stage / "precdetect" / "bin").mkdir()
    shutil.copy(REPO / "build" / "libprecdetect_api.so", stage / "precdetect" / "bin")
    sys.path.insert(0, str(stage))
    import precdetect

    return precdetect


def time_check(args, device):
    precdetect = staged_precdetect()
    print(f"\nprecdetect.check(model) against seed 000's analyze([model]) on a live LlamaForCausalLM, on {device}, "
          f"{torch.get_num_threads()} torch threads, precdetect's kernel on {os.cpu_count()} cores\n")
    print("| dtype | model GB | parameters | analyze s | check s | check vs analyze | same abs max |")
    print("|---|---|---|---|---|---|---|")
    for name in args.dtypes.split(","):
        model = live_llama(DTYPES[name], args.size_gb, device)
        gb = sum(p.numel() * p.element_size() for p in model.parameters()) / 1e9
        synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        seed_s = timed(lambda: (seed_analyze([model]), synchronize()), args.repeat)
        check_s = timed(lambda: precdetect.check(model), args.repeat)
        same = precdetect.check(model).summary["abs_max"] == seed_analyze([model])[1]
        print(f"| {name} | {gb:.2f} | {sum(p.numel() for p in model.parameters()) / 1e6:.0f} M | {seed_s:.2f} | "
              f"{check_s:.3f} | {seed_s / check_s:.1f}x | {same} |", flush=True)
        del model


if __name__ == "__main__":
    main()

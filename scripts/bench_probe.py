"""The probe's cost against one plain forward pass of the same batch (issue 48's target: <= 1.5x), on a randomly
initialized transformers model of a realistic shape. Prints the medians of --repeats runs.

    PRECDETECT_API=build/libprecdetect_api.so .venv/bin/python scripts/bench_probe.py [--model bert-base|t5-small]"""

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))
import staged_package  # noqa: E402,F401 (the package with the built C interface, PRECDETECT_API, first on sys.path)
import precdetect  # noqa: E402
probe_module = importlib.import_module("precdetect.probe")  # the module: the package exports the function


def model_and_batch(name, batch, length):
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (batch, length))
    if name == "t5-small":
        config = transformers.T5Config(d_model=512, d_ff=2048, num_layers=6, num_heads=8, vocab_size=32128,
                                       decoder_start_token_id=0)
        return transformers.T5ForConditionalGeneration(config).eval(), {"input_ids": ids, "decoder_input_ids": ids}
    config = transformers.BertConfig()  # bert-base: 12 layers, hidden 768
    return transformers.BertModel(config).eval(), {"input_ids": ids}


def median_seconds(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="bert-base", choices=["bert-base", "t5-small"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    model, batch = model_and_batch(args.model, args.batch, args.length)

    def forward():
        with torch.no_grad():
            model(**batch)

    forward()  # warm-up
    plain = median_seconds(forward, args.repeats)
    hooked = median_seconds(lambda: probe_module._measure(torch, model, batch, None), args.repeats)
    whole = median_seconds(lambda: precdetect.probe(model, batch), args.repeats)
    print(f"{args.model}, batch {args.batch}x{args.length}, {torch.get_num_threads()} threads: forward {plain:.3f} s, "
          f"forward with the probe's hooks {hooked:.3f} s ({hooked / plain:.2f}x), probe() with its check "
          f"{whole:.3f} s ({whole / plain:.2f}x)")


if __name__ == "__main__":
    main()

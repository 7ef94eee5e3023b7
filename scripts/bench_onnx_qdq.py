"""Scan speed of ONNX QDQ models against their float twins (issue 59's target: within 2x): an MLP of --layers Linear
layers of --side x --side exported by torch.onnx.export (TorchScript exporter, float32 initializers) from a 2-D input
(Gemm, weights [out, in]) and from a 3-D one (MatMul, weights stored transposed, [in, out]), and the models
onnxruntime's quantize_static writes from them (QDQ format, int8 weights per channel or per tensor, int32 biases),
scanned by the same binary. Prints the best of --repeats whole-process runs of each.

    .venv/bin/python scripts/bench_onnx_qdq.py [--binary build/precdetect] [--layers 8] [--side 4096] [--repeats 7]"""

import argparse
import contextlib
import io
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy
import torch
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static


class Calibration(CalibrationDataReader):
    def __init__(self, shape):
        self.inputs = iter([{"x": numpy.random.default_rng(0).normal(size=shape).astype(numpy.float32)}])

    def get_next(self):
        return next(self.inputs, None)


def seconds(binary, path, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([binary, "--json", "--no-cache", str(path)], check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default="build/precdetect")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--side", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(*[torch.nn.Linear(args.side, args.side) for _ in range(args.layers)]).eval()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for operator, shape in (("Gemm", (1, args.side)), ("MatMul", (1, 2, args.side))):
            float_model = folder / operator / "model.onnx"
            float_model.parent.mkdir()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(mlp, (torch.randn(*shape),), str(float_model), dynamo=False, input_names=["x"])
            for per_channel in (True, False):
                quantized = folder / f"{operator}-{per_channel}" / "model.onnx"
                quantized.parent.mkdir()
                with contextlib.redirect_stderr(io.StringIO()):
                    quantize_static(str(float_model), str(quantized), Calibration(shape), quant_format=QuantFormat.QDQ,
                                    per_channel=per_channel, weight_type=QuantType.QInt8)
                twin = seconds(args.binary, float_model, args.repeats)
                qdq = seconds(args.binary, quantized, args.repeats)
                kind = "per channel" if per_channel else "per tensor"
                print(f"{operator} QDQ int8 {kind}: {qdq:.3f} s, float32 twin {twin:.3f} s, ratio {qdq / twin:.2f}x")

if __name__ == "__main__":
    main()

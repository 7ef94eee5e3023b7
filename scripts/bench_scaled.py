"""Scan speed of quantized safetensors against their float twins (issue 50's target: within 2x): the same
dequantized values stored as a float dtype, scanned by the same binary. Formats: fp8 with 128x128 block scales (bf16
twin), GPTQ and AWQ 4-bit in groups of 128 and MLX 4-bit in groups of 64 (fp16 twins), bitsandbytes nf4 with nested
quantization (bf16 twin), LLM.int8 (float32 twin), optimum-quanto's qint8 and qint4 (the fp16 weights they quantize); issue 59's: bitsandbytes nf4 stored as bfloat16,
fp8 per channel with bfloat16 scales, int8 per channel (W8A8), nvfp4, gpt-oss's MXFP4 and MLX's mxfp4, torchao's
Int8Tensor and Float8Tensor per row and int4 codes in int8 in groups of 32 (bf16 or float32 twins: the values their
libraries dequantize to); issue 70's: compressed-tensors' 2:4 sparse bf16 and fp8 (bf16 twins: the dense tensors).
Prints the best of --repeats whole-process runs of each.

    .venv/bin/python scripts/bench_scaled.py [--binary build/precdetect] [--tensors 8] [--side 4096]
        [--baseline OTHER_BINARY] [--only "nvfp4" "gpt-oss MXFP4" ...]

With --baseline, the quantized files are also scanned by another build (an earlier commit's), for the step's gain."""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy
import torch
from safetensors.torch import save_file


def fp8_blocks(weights, generator):
    """DeepSeek-V3's layout: fp8 weights with a float32 scale per 128x128 block."""
    quantized, twin = {}, {}
    for name, weight in weights.items():
        side = weight.shape[0]
        stored = (weight.clamp(-1, 1) * 448).to(torch.float8_e4m3fn)
        scale = torch.empty(side // 128, side // 128).uniform_(1e-3, 1e-2, generator=generator)
        quantized[f"{name}.weight"], quantized[f"{name}.weight_scale_inv"] = stored, scale
        twin[f"{name}.weight"] = (stored.float() * scale.repeat_interleave(128, 0).repeat_interleave(128, 1)).bfloat16()
    return quantized, {"quant_method": "fp8", "weight_block_size": [128, 128]}, twin


def gptq_4bit(weights, generator):
    """GPTQ's layout: 4-bit codes packed along the inputs, zero points and fp16 scales per group of 128 inputs."""
    rng = numpy.random.default_rng(0)
    quantized, twin = {}, {}
    for name, weight in weights.items():
        outputs, inputs = weight.shape
        codes = rng.integers(0, 16, size=(inputs, outputs), dtype=numpy.uint32)
        zeros = rng.integers(1, 16, size=(inputs // 128, outputs), dtype=numpy.uint32)
        scales = torch.empty(inputs // 128, outputs).uniform_(1e-3, 1e-2, generator=generator).half()
        shifts = (numpy.arange(8, dtype=numpy.uint32) * 4)
        qweight = (codes.reshape(inputs // 8, 8, outputs) << shifts[None, :, None]).sum(1, dtype=numpy.uint32)
        qzeros = ((zeros - 1).reshape(inputs // 128, outputs // 8, 8) << shifts).sum(2, dtype=numpy.uint32)
        quantized[f"{name}.qweight"] = torch.from_numpy(qweight.view(numpy.int32))
        quantized[f"{name}.qzeros"] = torch.from_numpy(qzeros.view(numpy.int32))
        quantized[f"{name}.scales"] = scales
        quantized[f"{name}.g_idx"] = torch.arange(inputs, dtype=torch.int32) // 128
        difference = torch.from_numpy(codes.astype(numpy.int64) - numpy.repeat(zeros, 128, 0)).half()
        twin[f"{name}.weight"] = (scales.repeat_interleave(128, 0) * difference).T.contiguous()
    return quantized, {"quant_method": "gptq", "bits": 4, "group_size": 128}, twin


def awq_4bit(weights, generator):
    """AutoAWQ's GEMM layout: 4-bit codes packed along the outputs in its order (0, 2, 4, 6, 1, 3, 5, 7), zero points
    packed the same way, fp16 scales per group of 128 inputs."""
    rng = numpy.random.default_rng(1)
    order = [0, 2, 4, 6, 1, 3, 5, 7]
    shifts = numpy.arange(8, dtype=numpy.uint32) * 4

    def packed(values):
        rows, columns = values.shape
        ordered = values.reshape(rows, columns // 8, 8)[:, :, order]
        return torch.from_numpy((ordered << shifts).sum(2, dtype=numpy.uint32).view(numpy.int32))

    quantized, twin = {}, {}
    for name, weight in weights.items():
        outputs, inputs = weight.shape
        codes = rng.integers(0, 16, size=(inputs, outputs), dtype=numpy.uint32)
        zeros = rng.integers(0, 16, size=(inputs // 128, outputs), dtype=numpy.uint32)
        scales = torch.empty(inputs // 128, outputs).uniform_(1e-3, 1e-2, generator=generator).half()
        quantized[f"{name}.qweight"], quantized[f"{name}.qzeros"] = packed(codes), packed(zeros)
        quantized[f"{name}.scales"] = scales
        difference = torch.from_numpy(codes.astype(numpy.int64) - numpy.repeat(zeros, 128, 0)).half()
        twin[f"{name}.weight"] = (scales.repeat_interleave(128, 0) * difference).T.contiguous()
    return quantized, {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
                       "version": "gemm"}, twin


def mlx_4bit(weights, generator):
    """MLX's affine quantization as mx.quantize writes it: 4-bit codes, float16 scales and biases per group of 64."""
    import mlx.core as mx

    quantized, twin = {}, {}
    for name, weight in weights.items():
        codes, scales, biases = mx.quantize(mx.array(weight.half().numpy()), group_size=64, bits=4)
        for part, value in (("weight", codes), ("scales", scales), ("biases", biases)):
            quantized[f"{name}.{part}"] = torch.from_numpy(numpy.array(value))
        twin[f"{name}.weight"] = torch.from_numpy(numpy.array(mx.dequantize(codes, scales, biases, 64, 4)))
    return quantized, {"group_size": 64, "bits": 4}, twin


def quanto_weights(qtype):
    """optimum-quanto's own quantize + freeze of fp16 Linear layers, the state dict saved as its README does, with
    quantization_map.json beside it (fp16 twin: the weights quantized, not their dequantized values)."""

    def write(weights, generator):
        import optimum.quanto as quanto

        layers = torch.nn.ModuleDict({name.replace(".", "_"): torch.nn.Linear(*weight.shape[::-1], bias=False)
                                      for name, weight in weights.items()}).half()
        with torch.no_grad():
            for (name, weight), layer in zip(weights.items(), layers.values()):
                layer.weight.copy_(weight.half())
        twin = {f"{name}.weight": layer.weight.detach().clone() for name, layer in layers.items()}
        quanto.quantize(layers, weights=getattr(quanto, qtype))
        quanto.freeze(layers)
        quantized = {key: value.contiguous() for key, value in layers.state_dict().items()}
        return quantized, {"quanto_map": quanto.quantization_map(layers)}, twin

    return write


def bitsandbytes_int8(weights, generator):
    """bitsandbytes' LLM.int8: int8 codes and each row's SCB, as save_pretrained writes them (float32 twin: what
    int8_vectorwise_dequant computes)."""
    import bitsandbytes.functional as F

    quantized, twin = {}, {}
    for name, weight in weights.items():
        codes, scb, _ = F.int8_vectorwise_quant(weight.half())
        quantized[f"{name}.weight"], quantized[f"{name}.SCB"] = codes, scb
        twin[f"{name}.weight"] = F.int8_vectorwise_dequant(codes, scb)
    return quantized, {"quant_method": "bitsandbytes"}, twin


def bitsandbytes_nf4(weights, generator, storage=torch.uint8):
    """bitsandbytes' nf4 with nested quantization, as QuantState.as_dict(packed=True) saves it; its packed bytes
    stored as `storage` (bnb_4bit_quant_storage: bfloat16, as FSDP wants it)."""
    import bitsandbytes.functional as F

    quantized, twin = {}, {}
    for name, weight in weights.items():
        codes, state = F.quantize_4bit(weight.bfloat16(), blocksize=64, quant_type="nf4", compress_statistics=True,
                                       quant_storage=storage)
        quantized[f"{name}.weight"] = codes
        quantized.update({f"{name}.weight.{key}": value for key, value in state.as_dict(packed=True).items()})
        twin[f"{name}.weight"] = F.dequantize_4bit(codes, state)
    return quantized, {"quant_method": "bitsandbytes"}, twin


def fp8_channel_bf16_scales(weights, generator):
    """compressed-tensors' float8 per channel with bfloat16 scales (the scales' dtype multiplies)."""
    quantized, twin = {}, {}
    for name, weight in weights.items():
        scale = (weight.abs().amax(1, keepdim=True) / 448).bfloat16()
        stored = (weight / scale.float()).clamp(-448, 448).to(torch.float8_e4m3fn)
        quantized[f"{name}.weight"], quantized[f"{name}.weight_scale"] = stored, scale
        twin[f"{name}.weight"] = stored.to(torch.bfloat16) * scale
    return quantized, {"quant_method": "compressed-tensors", "format": "float-quantized"}, twin


def int8_channel(weights, generator):
    """compressed-tensors' int-quantized W8A8: int8 codes, a float32 scale per row (float32 twin)."""
    quantized, twin = {}, {}
    for name, weight in weights.items():
        scale = weight.abs().amax(1, keepdim=True) / 127
        codes = (weight / scale).round().clamp(-128, 127).to(torch.int8)
        quantized[f"{name}.weight"], quantized[f"{name}.weight_scale"] = codes, scale
        twin[f"{name}.weight"] = codes.float() * scale
    return quantized, {"quant_method": "compressed-tensors", "format": "int-quantized"}, twin


def torchao_weights(make_config):
    """torchao's tensor subclasses in safetensors, as its flatten_tensor_state_dict writes them (parts and metadata),
    quantized from bfloat16 weights by quantize_ (the bfloat16 twin: their dequantize())."""
    def write(weights, generator):
        from torchao.prototype.safetensors.safetensors_support import flatten_tensor_state_dict
        from torchao.quantization import quantize_

        state = {}
        for name, weight in weights.items():
            layer = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False, dtype=torch.bfloat16)
            layer.weight.data.copy_(weight)
            quantize_(layer, make_config())
            state[f"{name}.weight"] = layer.weight.data
        quantized, metadata = flatten_tensor_state_dict(state)
        twin = {name: tensor.dequantize() for name, tensor in state.items()}
        return quantized, {"quant_method": "torchao", "safetensors_metadata": metadata}, twin
    return write


def torchao_int8():
    from torchao.quantization import Int8WeightOnlyConfig
    return Int8WeightOnlyConfig()


def torchao_float8():
    from torchao.quantization import Float8WeightOnlyConfig
    return Float8WeightOnlyConfig()


def torchao_int4_groups():
    from torchao.quantization import IntxWeightOnlyConfig, PerGroup
    return IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32))


def e2m1_codes(generator, shape):
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator)


def nvfp4(weights, generator):
    """compressed-tensors' nvfp4-pack-quantized: fp4 codes, e4m3 scales per 16, a global scale (bfloat16 twin)."""
    from compressed_tensors.compressors.nvfp4.helpers import unpack_fp4_from_uint8

    quantized, twin = {}, {}
    for name, weight in weights.items():
        rows, columns = weight.shape
        packed = e2m1_codes(generator, (rows, columns // 2))
        scale = torch.empty(rows, columns // 16).uniform_(1, 448, generator=generator).to(torch.float8_e4m3fn)
        global_scale = torch.tensor([448.0 * 6 / 0.1])
        quantized[f"{name}.weight_packed"], quantized[f"{name}.weight_scale"] = packed, scale
        quantized[f"{name}.weight_global_scale"] = global_scale
        values = unpack_fp4_from_uint8(packed, rows, columns, dtype=torch.float32)
        twin[f"{name}.weight"] = (values * (scale.float() / global_scale).repeat_interleave(16, 1)).bfloat16()
    return quantized, {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"}, twin


def gpt_oss_mxfp4(weights, generator):
    """gpt-oss's MXFP4: blocks of 32 fp4 codes and e8m0 scales (bfloat16 twin: convert_moe_packed_tensors)."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    quantized, twin = {}, {}
    for name, weight in weights.items():
        rows, columns = weight.shape
        blocks = e2m1_codes(generator, (1, rows, columns // 32, 16))
        scales = torch.randint(118, 128, (1, rows, columns // 32), dtype=torch.uint8, generator=generator)
        quantized[f"{name}_blocks"], quantized[f"{name}_scales"] = blocks, scales
        twin[f"{name}.weight"] = convert_moe_packed_tensors(blocks, scales, dtype=torch.bfloat16)[0]
    return quantized, {"quant_method": "mxfp4"}, twin


def mlx_mxfp4(weights, generator):
    """MLX's mxfp4 mode as mx.quantize writes it (bfloat16 twin: mx.dequantize)."""
    import mlx.core as mx

    quantized, twin = {}, {}
    for name, weight in weights.items():
        codes, scales = mx.quantize(mx.array(weight.numpy()), group_size=32, bits=4, mode="mxfp4")
        quantized[f"{name}.weight"] = torch.from_numpy(numpy.array(codes))
        quantized[f"{name}.scales"] = torch.from_numpy(numpy.array(scales))
        dequantized = mx.dequantize(codes, scales, group_size=32, bits=4, mode="mxfp4").astype(mx.float32)
        twin[f"{name}.weight"] = torch.from_numpy(numpy.array(dequantized)).bfloat16()
    return quantized, {"group_size": 32, "bits": 4, "mode": "mxfp4"}, twin


def sparse_24(weights, generator, fp8=False):
    """compressed-tensors' sparse-24-bitmask, as its Sparse24BitMask compressor writes it: the 2 larger values of
    each 4 kept (bfloat16, or fp8 codes with a bfloat16 scale per row), a bitmask of one bit per dense value (little
    bit order), the dense shape (bfloat16 twin: the dense tensor it decompresses to)."""
    quantized, twin = {}, {}
    for name, weight in weights.items():
        rows, columns = weight.shape
        groups = weight.reshape(-1, 4)
        kept = torch.zeros_like(groups, dtype=torch.bool).scatter_(1, groups.abs().topk(2, dim=1).indices, True)
        dense = (groups * kept).reshape(rows, columns).bfloat16()
        values = dense.reshape(-1, 4)[kept].reshape(rows, columns // 2)
        bitmask = numpy.packbits(kept.reshape(rows, columns).numpy(), axis=-1, bitorder="little")
        module = name[: -len(".weight")] if name.endswith(".weight") else name
        quantized[f"{module}.bitmask"] = torch.from_numpy(bitmask)
        quantized[f"{module}.shape"] = torch.tensor([rows, columns]).reshape(-1, 1)
        if fp8:
            scale = (values.float().abs().amax(dim=1, keepdim=True) / 448).bfloat16()
            codes = (values.float() / scale.float()).to(torch.float8_e4m3fn)
            quantized[f"{module}.compressed"], quantized[f"{module}.weight_scale"] = codes, scale
            dense = torch.zeros(rows, columns, dtype=torch.bfloat16)
            dense.view(-1, 4)[kept] = (codes.to(torch.bfloat16) * scale).reshape(-1)
        else:
            quantized[f"{module}.compressed"] = values
        twin[f"{module}.weight"] = dense
    config = {"quant_method": "compressed-tensors", "sparsity_config": {"format": "sparse-24-bitmask"}}
    if fp8:
        config["format"] = "float-quantized"
    return quantized, config, twin


FORMATS = {"fp8 with block scales": fp8_blocks, "GPTQ 4-bit": gptq_4bit, "AWQ 4-bit": awq_4bit,
           "MLX 4-bit": mlx_4bit, "bitsandbytes nf4, nested": bitsandbytes_nf4, "bitsandbytes int8": bitsandbytes_int8,
           "quanto qint8": quanto_weights("qint8"), "quanto qint4": quanto_weights("qint4"),
           "bitsandbytes nf4 in bf16 storage": lambda weights, generator: bitsandbytes_nf4(weights, generator,
                                                                                           torch.bfloat16),
           "fp8 per channel, bf16 scales": fp8_channel_bf16_scales, "int8 per channel (W8A8)": int8_channel,
           "nvfp4": nvfp4, "gpt-oss MXFP4": gpt_oss_mxfp4, "MLX mxfp4": mlx_mxfp4,
           "torchao Int8Tensor per row": torchao_weights(torchao_int8),
           "torchao Float8Tensor per row": torchao_weights(torchao_float8),
           "torchao int4 in int8, groups of 32": torchao_weights(torchao_int4_groups),
           "2:4 sparse bf16": sparse_24,
           "2:4 sparse fp8, bf16 scales per row": lambda weights, generator: sparse_24(weights, generator, fp8=True)}


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
    parser.add_argument("--baseline", help="another precdetect binary to time on the same quantized files")
    parser.add_argument("--only", nargs="*", help="these formats alone (names as printed)")
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(0)
    weights = {f"model.layers.{index}.mlp.down_proj": torch.randn(args.side, args.side, generator=generator) * 0.02
               for index in range(args.tensors)}
    values = args.tensors * args.side * args.side
    for label, write in FORMATS.items():
        if args.only and label not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            quantized, config, twin = write(weights, generator)
            metadata = config.pop("safetensors_metadata", None)  # torchao's: in the quantized file's header
            for name, tensors in (("quantized", quantized), ("twin", twin)):
                (folder / name).mkdir()
                if "quanto_map" in config:  # quanto writes its map beside the weights, no config
                    if name == "quantized":
                        (folder / name / "quantization_map.json").write_text(json.dumps(config["quanto_map"]))
                else:
                    key = "quantization" if write in (mlx_4bit, mlx_mxfp4) else "quantization_config"  # mlx-lm's key
                    (folder / name / "config.json").write_text(json.dumps({key: config}))
                save_file(tensors, folder / name / "model.safetensors",
                          metadata=metadata if name == "quantized" else None)
            seconds = best_seconds(args.binary, folder / "quantized", args.repeats)
            twin_seconds = best_seconds(args.binary, folder / "twin", args.repeats)
            dtype = next(iter(twin.values())).dtype
            print(f"{values / 1e6:.0f}M values: {label} {seconds:.3f} s ({values / seconds / 1e9:.2f} G values/s), "
                  f"{dtype} twin {twin_seconds:.3f} s ({values / twin_seconds / 1e9:.2f} G values/s): "
                  f"{seconds / twin_seconds:.2f}x")
            if args.baseline:
                baseline = best_seconds(args.baseline, folder / "quantized", args.repeats)
                print(f"    baseline {args.baseline}: {baseline:.3f} s ({baseline / twin_seconds:.2f}x the twin)")


if __name__ == "__main__":
    main()

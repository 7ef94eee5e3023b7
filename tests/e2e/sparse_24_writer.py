"""Writes 2:4-sparse checkpoints with compressed-tensors 0.12.2 (.venv/ct-sparse: its Sparse24BitMaskCompressor,
which later releases dropped) and their references, each weight decompressed (sparse24_bitmask_decompress) and
dequantized (its dequantize) by that same release. Run in an interpreter of its own, with .venv/ct-sparse first on
its path: python sparse_24_writer.py FOLDER (bf16 | fp8)."""

import sys
from pathlib import Path

import torch
from compressed_tensors.compressors import ModelCompressor
from compressed_tensors.compressors.sparse_compressors.sparse_24_bitmask import sparse24_bitmask_decompress
from compressed_tensors.config import Sparse24BitMaskConfig
from compressed_tensors.quantization import QuantizationConfig, apply_quantization_config, preset_name_to_scheme
from compressed_tensors.quantization.lifecycle.forward import dequantize
from compressed_tensors.quantization.utils import calculate_qparams
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM


def pruned_llama():
    """A two-block Llama in bfloat16 whose Linear weights keep the larger 2 of each 4 values, as llm-compressor's
    2:4 pruning leaves them."""
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=4)).to(torch.bfloat16)
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name != "lm_head":
            groups = module.weight.data.view(-1, 4)
            kept = torch.zeros_like(groups, dtype=torch.bool).scatter_(1, groups.abs().topk(2, dim=1).indices, True)
            module.weight.data = (groups * kept).view(module.weight.shape)
    return model


def calibrate(model):
    """Each quantized weight's scales, from its own observer's range (calculate_qparams), a channel one group."""
    for module in model.modules():
        if getattr(module, "quantization_scheme", None) is None:
            continue
        weight = module.weight.data
        grouped = weight.reshape(weight.shape[0], module.weight_scale.shape[1], -1)
        scale, _ = calculate_qparams(grouped.amin(-1).clamp(max=0), grouped.amax(-1).clamp(min=0),
                                     module.quantization_scheme.weights)
        module.weight_scale.data.copy_(scale.reshape(module.weight_scale.shape))


def references(folder):
    """Each sparse weight as compressed-tensors decompresses (and dequantizes) it, by the weight's name."""
    dense = {}
    with safe_open(folder / "model.safetensors", "pt") as stored:
        names = set(stored.keys())
        for name in sorted(names):
            if not name.endswith(".compressed"):
                continue
            module = name[: -len(".compressed")]
            shape = stored.get_tensor(f"{module}.shape").flatten().tolist()
            weight = sparse24_bitmask_decompress(stored.get_tensor(name), stored.get_tensor(f"{module}.bitmask"), shape)
            if f"{module}.weight_scale" in names:
                weight = dequantize(weight, stored.get_tensor(f"{module}.weight_scale"))
            dense[f"{module}.weight"] = weight.float().contiguous()
    return dense


def main(folder, kind):
    folder = Path(folder)
    model = pruned_llama()
    if kind == "fp8":
        groups = {"group_0": preset_name_to_scheme("FP8_DYNAMIC", ["Linear"])}
        apply_quantization_config(model, QuantizationConfig(config_groups=groups, ignore=["lm_head"]))
        calibrate(model)
    sparsity = Sparse24BitMaskConfig(targets=["Linear"], ignore=["lm_head"], sparsity_structure="2:4")
    compressor = ModelCompressor.from_pretrained_model(model, sparsity_config=sparsity)
    compressor.compress_model(model)
    model.save_pretrained(folder)
    compressor.update_config(folder)
    save_file(references(folder), folder.parent / f"{folder.name}-references.safetensors")


if __name__ == "__main__":
    main(*sys.argv[1:])

"""Quantizes a two-block Llama with AMD Quark 0.13 (.venv/quark, in an interpreter of its own: its pinned onnx is not
the venv's) by its own LLMTemplate scheme and writes it with its export_safetensors, on this CPU:
python quark_writer.py FOLDER SCHEME (nvfp4, ...)."""

import sys
from pathlib import Path

import torch
from quark.torch import LLMTemplate, ModelQuantizer, export_safetensors
from transformers import LlamaConfig, LlamaForCausalLM


def main(folder, scheme):
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=4)).eval()
    quantizer = ModelQuantizer(LLMTemplate.get("llama").get_config(scheme=scheme))
    model = quantizer.freeze(quantizer.quantize_model(model, [torch.randint(0, 64, (1, 16))]))
    export_safetensors(model, Path(folder))


if __name__ == "__main__":
    main(*sys.argv[1:])

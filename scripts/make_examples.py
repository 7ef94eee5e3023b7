#!/usr/bin/env python3
"""Writes the two small bundled example models in examples/ (deterministic; re-run to regenerate).

fp16-like/: an OPT-style decoder whose weights stay small, as fp16-pretrained models keep them (seed 000:
abs max <= 25, norm max < 1e3), stored F16. bf16-like/: a T5-style encoder-decoder with the large embedding
and layer-norm values bf16 pretraining produces (abs max > 1e2), stored BF16. Both are synthetic: they show
the shapes of the two groups, they are not trained models.
"""

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
HIDDEN, LAYERS, VOCAB = 64, 2, 256


def opt_like():
    g = torch.Generator().manual_seed(16)
    tensors = {"model.decoder.embed_tokens.weight": torch.randn(VOCAB, HIDDEN, generator=g) * 0.05}
    for i in range(LAYERS):
        p = f"model.decoder.layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            tensors[p + f"self_attn.{proj}.weight"] = torch.randn(HIDDEN, HIDDEN, generator=g) * 0.04
            tensors[p + f"self_attn.{proj}.bias"] = torch.zeros(HIDDEN)
        tensors[p + "fc1.weight"] = torch.randn(4 * HIDDEN, HIDDEN, generator=g) * 0.04
        tensors[p + "fc2.weight"] = torch.randn(HIDDEN, 4 * HIDDEN, generator=g) * 0.04
        tensors[p + "self_attn_layer_norm.weight"] = 1 + 0.1 * torch.randn(HIDDEN, generator=g)
    tensors["model.decoder.final_layer_norm.weight"] = torch.ones(HIDDEN)
    return {k: v.half() for k, v in tensors.items()}, {"model_type": "opt", "torch_dtype": "float16"}


def t5_like():
    g = torch.Generator().manual_seed(5)
    tensors = {"shared.weight": torch.randn(VOCAB, HIDDEN, generator=g) * 9}
    for stack in ("encoder", "decoder"):
        for i in range(LAYERS):
            p = f"{stack}.block.{i}.layer."
            for proj in ("q", "k", "v", "o"):
                tensors[p + f"0.SelfAttention.{proj}.weight"] = torch.randn(HIDDEN, HIDDEN, generator=g) * 0.3
            tensors[p + "0.layer_norm.weight"] = 0.2 + torch.rand(HIDDEN, generator=g)
            tensors[p + "1.DenseReluDense.wi.weight"] = torch.randn(4 * HIDDEN, HIDDEN, generator=g) * 0.5
            tensors[p + "1.DenseReluDense.wo.weight"] = torch.randn(HIDDEN, 4 * HIDDEN, generator=g) * 0.2
        tensors[f"{stack}.final_layer_norm.weight"] = 20 + 220 * torch.rand(HIDDEN, generator=g)
    return {k: v.bfloat16() for k, v in tensors.items()}, {"model_type": "t5", "torch_dtype": "bfloat16"}


def main():
    for name, (tensors, config) in {"fp16-like": opt_like(), "bf16-like": t5_like()}.items():
        folder = EXAMPLES / name
        folder.mkdir(parents=True, exist_ok=True)
        save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
        (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        print(f"wrote {folder}/model.safetensors ({sum(t.numel() for t in tensors.values())} parameters)")


if __name__ == "__main__":
    main()

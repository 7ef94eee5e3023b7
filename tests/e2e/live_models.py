"""Models in memory for the Python API's tests, built by transformers from its own config classes (tiny sizes: the
tests are about what precdetect reads, not about size)."""

import torch
from transformers import BertConfig, BertForMaskedLM, T5Config, T5ForConditionalGeneration

# google/t5-v1_1-*: documented bf16-pretrained in precdetect's registry (src/classify/registry.json).
DOCUMENTED_BF16 = "google/t5-v1_1-small"


def tiny_t5(scale=1.0, name_or_path=None):
    """A T5 as transformers initializes it; `scale` multiplies every weight (300: an abs max in the hundreds and
    norms in the thousands, the range bf16 pretraining leaves T5's weights in); `name_or_path` is the hub id its
    config says it was loaded from."""
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(T5Config(vocab_size=64, d_model=16, d_ff=32, num_layers=1, num_heads=2,
                                                d_kv=8, decoder_start_token_id=0, pad_token_id=0))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(scale)
    if name_or_path:
        model.config._name_or_path = name_or_path
    return model


def tiny_bert():
    """A BERT as transformers initializes it (std 0.02): small weights, fp16 is safe for it."""
    torch.manual_seed(0)
    return BertForMaskedLM(BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                      intermediate_size=32, max_position_embeddings=32))


class TokenDataset(torch.utils.data.Dataset):
    """A few identical seq2seq (or masked-LM) examples: enough for a Trainer to take its first steps."""

    def __init__(self, seq2seq: bool):
        self.seq2seq = seq2seq

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if self.seq2seq:
            return {"input_ids": torch.tensor([1, 2, 3]), "labels": torch.tensor([1, 2])}
        return {"input_ids": torch.tensor([1, 2, 3, 4]), "labels": torch.tensor([-100, 2, -100, 4])}

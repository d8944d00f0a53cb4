#!/usr/bin/python3
"""Writes tests/golden/gpt2_tiny.safetensors: PyTorch reference tensors for a
tiny GPT-2 (weights, logits, loss, every gradient, params after 3 AdamW steps).

The reference is computed in float64 from float32-representable initial
weights, so every stored value is the exact answer rounded once to float32.
The same run is repeated in float32 and the f32-vs-f64 deviations are recorded
in the metadata, as a measure of what an fp32 engine can be expected to reach.
The recipe (init rounding, batches, AdamW loop, metadata, file writer) is
reference_common.py's; this file is the model.

Run with Debian's interpreter (it has torch): /usr/bin/python3 tests/golden/make_reference.py
Needs only torch and the standard library; the output is byte-for-byte
deterministic.
"""

import math
import os

import torch
import torch.nn.functional as F

import reference_common as rc

N_LAYER = 2
N_HEAD = 4
N_EMBD = 32
VOCAB = 64
N_POS = 16

OUT_NAME = "gpt2_tiny.safetensors"


def param_specs():
    """(name, shape) in Hugging Face GPT2Model order, Conv1D [in, out] weights."""
    C = N_EMBD
    specs = [("wte.weight", (VOCAB, C)), ("wpe.weight", (N_POS, C))]
    for i in range(N_LAYER):
        p = f"h.{i}."
        specs += [
            (p + "ln_1.weight", (C,)),
            (p + "ln_1.bias", (C,)),
            (p + "attn.c_attn.weight", (C, 3 * C)),
            (p + "attn.c_attn.bias", (3 * C,)),
            (p + "attn.c_proj.weight", (C, C)),
            (p + "attn.c_proj.bias", (C,)),
            (p + "ln_2.weight", (C,)),
            (p + "ln_2.bias", (C,)),
            (p + "mlp.c_fc.weight", (C, 4 * C)),
            (p + "mlp.c_fc.bias", (4 * C,)),
            (p + "mlp.c_proj.weight", (4 * C, C)),
            (p + "mlp.c_proj.bias", (C,)),
        ]
    specs += [("ln_f.weight", (C,)), ("ln_f.bias", (C,))]
    return specs


def draw_param(name, shape):
    """GPT-2 init in float64. Biases and LayerNorm affines are perturbed away from 0/1 so that
    every gradient path carries non-trivial values."""
    if len(shape) == 2:
        std = 0.02 / math.sqrt(2 * N_LAYER) if name.endswith("c_proj.weight") else 0.02
        return torch.randn(shape, dtype=torch.float64) * std
    if (".ln_" in name or name.startswith("ln_f")) and name.endswith(".weight"):
        return 1.0 + torch.randn(shape, dtype=torch.float64) * 0.1
    return torch.randn(shape, dtype=torch.float64) * 0.02  # LayerNorm and linear biases


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(P, idx):
    """Returns logits (B, T, V) for token ids idx (B, T)."""
    Bn, Tn = idx.shape
    C, NH = N_EMBD, N_HEAD
    HS = C // NH
    x = P["wte.weight"][idx] + P["wpe.weight"][torch.arange(Tn)]
    causal = torch.ones(Tn, Tn, dtype=torch.bool).tril()
    for i in range(N_LAYER):
        p = f"h.{i}."
        h = F.layer_norm(x, (C,), P[p + "ln_1.weight"], P[p + "ln_1.bias"], eps=1e-5)
        qkv = h @ P[p + "attn.c_attn.weight"] + P[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=2)
        q = q.view(Bn, Tn, NH, HS).transpose(1, 2)  # (B, NH, T, HS)
        k = k.view(Bn, Tn, NH, HS).transpose(1, 2)
        v = v.view(Bn, Tn, NH, HS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(HS)
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(Bn, Tn, C)
        x = x + (y @ P[p + "attn.c_proj.weight"] + P[p + "attn.c_proj.bias"])
        h = F.layer_norm(x, (C,), P[p + "ln_2.weight"], P[p + "ln_2.bias"], eps=1e-5)
        h = gelu_tanh(h @ P[p + "mlp.c_fc.weight"] + P[p + "mlp.c_fc.bias"])
        x = x + (h @ P[p + "mlp.c_proj.weight"] + P[p + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (C,), P["ln_f.weight"], P["ln_f.bias"], eps=1e-5)
    return x @ P["wte.weight"].t()  # tied lm_head, no bias


def main():
    config = {"n_layer": N_LAYER, "n_head": N_HEAD, "n_embd": N_EMBD,
              "vocab_size": VOCAB, "n_positions": N_POS}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), OUT_NAME)
    rc.generate(path, param_specs(), draw_param, forward, VOCAB, config,
                "tests/golden/make_reference.py")


if __name__ == "__main__":
    main()

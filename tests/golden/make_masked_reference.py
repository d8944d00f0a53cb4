#!/usr/bin/python3
"""Writes the loss-mask golden fixtures: tests/golden/gpt2_tiny_masked.safetensors and
tests/golden/llama_tiny_masked.safetensors.

The models, init, batches and AdamW recipe are exactly those of gpt2_tiny (make_reference.py)
and llama_tiny (make_llama_reference.py); only the loss differs: each step's targets carry a
mask, masked targets become -100 and the loss is
F.cross_entropy(logits, targets, ignore_index=-100), the mean over the targets that count
(docs/data.md "Loss mask"). The masks (MASKS below) mask a prompt-like prefix, a span in the
middle, and in step 2 a whole row, so that rows count different numbers of targets. Each step's
mask is stored as step<k>.mask (I32 [B, T], 1 where the target counts); see tests/golden/README.md.

Run with Debian's interpreter (it has torch): /usr/bin/python3 tests/golden/make_masked_reference.py
Needs only torch and the standard library; the output is byte-for-byte deterministic.
"""

import json
import os

import torch

import make_llama_reference as llama
import make_reference as gpt2
import reference_common as rc

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = "tests/golden/make_masked_reference.py"

# Per step, per row: the target positions (0 .. T-1) whose loss does not count.
MASKED_POSITIONS = [
    [[0, 1, 2], [0, 1, 2, 3, 4]],      # step 0: prompts of 3 and 5 targets
    [[2, 3, 4, 5], []],                # step 1: a span in the middle; a row with none masked
    [list(range(rc.T)), [6, 7]],       # step 2: a whole row masked; the tail of the other
]


def masks():
    out = []
    for rows in MASKED_POSITIONS:
        m = torch.ones(rc.B, rc.T, dtype=torch.bool)
        for b, positions in enumerate(rows):
            for t in positions:
                m[b, t] = False
        out.append(m)
    return out


def main():
    gpt2_config = {"n_layer": gpt2.N_LAYER, "n_head": gpt2.N_HEAD, "n_embd": gpt2.N_EMBD,
                   "vocab_size": gpt2.VOCAB, "n_positions": gpt2.N_POS}
    print("== gpt2_tiny_masked")
    rc.generate(os.path.join(HERE, "gpt2_tiny_masked.safetensors"), gpt2.param_specs(),
                gpt2.draw_param, gpt2.forward, gpt2.VOCAB, gpt2_config, GENERATOR,
                masks=masks())
    print("== llama_tiny_masked")
    a = llama.Arch(llama.LLAMA_TINY)
    extra = [("rope.inv_freq", llama.inv_freq(a, torch.float64).to(torch.float32))]
    rc.generate(os.path.join(HERE, "llama_tiny_masked.safetensors"), llama.param_specs(a),
                llama.draw_param, lambda P, x: llama.forward(a, P, x), a.V, llama.LLAMA_TINY,
                GENERATOR, extra, record_tiny_grads=True, masks=masks())
    # The config.json beside it, as for every Llama fixture (llama_tiny's own).
    with open(os.path.join(HERE, "llama_tiny_masked.config.json"), "w") as f:
        f.write(json.dumps(llama.LLAMA_TINY, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

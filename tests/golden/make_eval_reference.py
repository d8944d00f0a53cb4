"""Writes tests/golden/eval_reference.json: float64 PyTorch eval losses (issue 31.1) of the
golden fixtures' initial weights on held-out tokens, without and with a loss mask.

For each fixture (gpt2_tiny, llama_tiny) the held-out set is N_BATCHES * B * T + 1 token ids
drawn from torch.Generator seeded with EVAL_SEED (never the training batches' DATA_SEED), cut
into N_BATCHES consecutive (B, T) batches as the engine's evaluation cuts a token file: batch b
has inputs tokens[b*B*T : (b+1)*B*T] and targets one token later. The mask is one 0/1 value per
token (contract 1: mask[i] = 1 means token i is a target whose loss counts; mask[0] is unused).

  eval_loss        = sum of cross-entropy over every target / their count
  eval_loss_masked = sum of cross-entropy over targets whose mask is 1 / their count
                     (PyTorch's ignore_index = -100 on the masked-out targets)

The weights are rc.init_params (the fixtures' param.* tensors, float32-representable), used in
float64; the models are make_reference.py's and make_llama_reference.py's forwards.

Run with Debian's interpreter: /usr/bin/python3 tests/golden/make_eval_reference.py
"""

import json
import os

import torch
import torch.nn.functional as F

import make_llama_reference as llama
import make_reference as gpt2
import reference_common as rc

EVAL_SEED = 3101
N_BATCHES = 3
HERE = os.path.dirname(os.path.abspath(__file__))


def reference(fwd, specs, draw, vocab):
    init = rc.init_params(specs, draw)
    n = N_BATCHES * rc.B * rc.T + 1
    g = torch.Generator()
    g.manual_seed(EVAL_SEED)
    tokens = torch.randint(0, vocab, (n,), generator=g, dtype=torch.int64)
    mask = (torch.rand(n, generator=g) < 0.6).to(torch.int64)
    mask[0] = 0
    total, count, total_m, count_m = 0.0, 0, 0.0, 0
    with torch.no_grad():
        for b in range(N_BATCHES):
            lo = b * rc.B * rc.T
            idx = tokens[lo:lo + rc.B * rc.T].view(rc.B, rc.T)
            tgt = tokens[lo + 1:lo + rc.B * rc.T + 1].reshape(-1)
            keep = mask[lo + 1:lo + rc.B * rc.T + 1].bool()
            logits = fwd(init, idx).reshape(-1, vocab)
            ce = F.cross_entropy(logits, tgt, reduction="none")
            total += ce.sum().item()
            count += tgt.numel()
            masked = F.cross_entropy(logits, torch.where(keep, tgt, torch.full_like(tgt, -100)),
                                     ignore_index=-100, reduction="sum")
            total_m += masked.item()
            count_m += int(keep.sum())
    return {"B": rc.B, "T": rc.T, "batches": N_BATCHES,
            "tokens": tokens.tolist(), "mask": mask.tolist(),
            "eval_loss": total / count, "eval_tokens": count,
            "eval_loss_masked": total_m / count_m, "eval_tokens_masked": count_m}


def main():
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    out = {"generator": "tests/golden/make_eval_reference.py", "eval_seed": EVAL_SEED}
    out["gpt2_tiny"] = reference(gpt2.forward, gpt2.param_specs(), gpt2.draw_param, gpt2.VOCAB)
    a = llama.Arch(llama.LLAMA_TINY)
    out["llama_tiny"] = reference(lambda P, x: llama.forward(a, P, x), llama.param_specs(a),
                                  llama.draw_param, a.V)
    for k in ("gpt2_tiny", "llama_tiny"):
        print(k, out[k]["eval_loss"], out[k]["eval_loss_masked"], out[k]["eval_tokens_masked"])
    with open(os.path.join(HERE, "eval_reference.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The float64 reference of a fine-tune's first step, for tests/e2e's fine-tuning test.

Two commands:

  make-model DIR --vocab V [--seed S]
      Writes DIR/config.json (a small LlamaForCausalLM: GQA, llama3 rope scaling, untied head)
      and DIR/model.safetensors (float32 weights drawn from the seed, float32-representable),
      Hugging Face names. The vocabulary is the tokenizer's (e.g. 128,256 for Llama 3), so the
      fine-tune trains on a real tokenizer's ids.

  first-loss --model DIR --tokens train.bin [--mask train.mask] --batch B --seq T
             --world W [--accum A]
      Prints {"loss": ..., "targets": N}: the mean cross-entropy over every unmasked target of
      the first optimizer step (A micro-batches on each of W ranks, llm.c's sequential order:
      batch k of rank r reads the B*T+1 tokens from (k*W + r)*B*T), computed in float64 with
      the model of tests/golden/make_llama_reference.py. That is what a job reports as step 1's
      loss (docs/data.md, "Loss mask": PyTorch's ignore_index=-100 mean over the step).

Run with Debian's interpreter (it has torch). Needs only torch and the standard library.
"""

import argparse
import json
import os
import struct
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
import make_llama_reference as llama  # noqa: E402
import reference_common as rc  # noqa: E402

TOKEN_MAGIC = {20240520: ("<H", 2), 20240801: ("<I", 4)}
MASK_MAGIC = 20261203


def small_config(vocab):
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": vocab,
        "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
        "tie_word_embeddings": False, "hidden_act": "silu", "torch_dtype": "float32",
    }


def make_model(out_dir, vocab, seed):
    os.makedirs(out_dir, exist_ok=True)
    cfg = small_config(vocab)
    a = llama.Arch(cfg)
    torch.manual_seed(seed)
    tensors = [(name, rc.f32_representable(llama.draw_param(name, shape)).to(torch.float32))
               for name, shape in llama.param_specs(a)]
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    rc.write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, {"format": "pt"})


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        lo, hi = h["data_offsets"]
        if h["dtype"] == "F32":
            flat = struct.unpack("<%df" % ((hi - lo) // 4), data[lo:hi])
            out[name] = torch.tensor(flat, dtype=torch.float64).reshape(h["shape"])
        elif h["dtype"] == "BF16":  # bf16 = the top half of a float32
            halves = struct.unpack("<%dH" % ((hi - lo) // 2), data[lo:hi])
            words = struct.pack("<%dI" % len(halves), *[x << 16 for x in halves])
            flat = struct.unpack("<%df" % len(halves), words)
            out[name] = torch.tensor(flat, dtype=torch.float64).reshape(h["shape"])
        else:
            raise ValueError(f"{path}: {name}: dtype {h['dtype']} not supported here")
    return out


def read_shard(path, expect_magic=None):
    with open(path, "rb") as f:
        header = struct.unpack("<256i", f.read(1024))
        body = f.read()
    magic, n = header[0], header[2]
    if magic == MASK_MAGIC:
        return list(body[:n])
    if magic not in TOKEN_MAGIC:
        raise ValueError(f"{path}: magic {magic} is not a token or mask shard")
    fmt, width = TOKEN_MAGIC[magic]
    return list(struct.unpack("<%d%s" % (n, fmt[1]), body[:n * width]))


def first_loss(args):
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    a = llama.Arch(cfg)
    P = read_safetensors(os.path.join(args.model, "model.safetensors"))
    tokens = read_shard(args.tokens)
    mask = read_shard(args.mask) if args.mask else [1] * len(tokens)
    B, T, W, A = args.batch, args.seq, args.world, args.accum
    total, count = torch.zeros((), dtype=torch.float64), 0
    for k in range(A):
        for r in range(W):
            start = (k * W + r) * B * T
            window = tokens[start:start + B * T + 1]
            idx = torch.tensor(window[:-1]).reshape(B, T)
            tgt = torch.tensor(window[1:]).reshape(B, T)
            keep = torch.tensor(mask[start + 1:start + B * T + 1]).reshape(B, T) == 1
            tgt = torch.where(keep, tgt, torch.full_like(tgt, -100))
            logits = llama.forward(a, P, idx)
            total += F.cross_entropy(logits.reshape(-1, a.V), tgt.reshape(-1), ignore_index=-100,
                                     reduction="sum")
            count += int(keep.sum())
    loss = (total / count).item() if count else 0.0
    print(json.dumps({"loss": loss, "targets": count}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-model")
    m.add_argument("dir")
    m.add_argument("--vocab", type=int, required=True)
    m.add_argument("--seed", type=int, default=rc.SEED)
    l = sub.add_parser("first-loss")
    l.add_argument("--model", required=True)
    l.add_argument("--tokens", required=True)
    l.add_argument("--mask")
    l.add_argument("--batch", type=int, required=True)
    l.add_argument("--seq", type=int, required=True)
    l.add_argument("--world", type=int, default=1)
    l.add_argument("--accum", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.cmd == "make-model":
        make_model(args.dir, args.vocab, args.seed)
    else:
        first_loss(args)


if __name__ == "__main__":
    main()

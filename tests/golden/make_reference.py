#!/usr/bin/python3
"""Writes tests/golden/gpt2_tiny.safetensors: PyTorch reference tensors for a
tiny GPT-2 (weights, logits, loss, every gradient, params after 3 AdamW steps).

The reference is computed in float64 from float32-representable initial
weights, so every stored value is the exact answer rounded once to float32.
The same run is repeated in float32 and the f32-vs-f64 deviations are recorded
in the metadata, as a measure of what an fp32 engine can be expected to reach.

Run with Debian's interpreter (it has torch): /usr/bin/python3 tests/golden/make_reference.py
Needs only torch and the standard library; the output is byte-for-byte
deterministic.
"""

import json
import math
import os
import struct

import torch
import torch.nn.functional as F

N_LAYER = 2
N_HEAD = 4
N_EMBD = 32
VOCAB = 64
N_POS = 16
B = 2
T = 8
STEPS = 3
LR = 1e-3
BETA1 = 0.9
BETA2 = 0.95
EPS = 1e-8
WEIGHT_DECAY = 0.1
MAX_NORM = 1.0
SEED = 1234
DATA_SEED = 1235

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


def init_params():
    """GPT-2 init in float64, rounded to float32 values (returned as float64).

    Biases and LayerNorm affines are perturbed away from 0/1 so that every
    gradient path carries non-trivial values.
    """
    torch.manual_seed(SEED)
    proj_std = 0.02 / math.sqrt(2 * N_LAYER)
    params = {}
    for name, shape in param_specs():
        if len(shape) == 2:
            std = proj_std if name.endswith("c_proj.weight") else 0.02
            p = torch.randn(shape, dtype=torch.float64) * std
        elif ".ln_" in name or name.startswith("ln_f"):
            if name.endswith(".weight"):
                p = 1.0 + torch.randn(shape, dtype=torch.float64) * 0.1
            else:
                p = torch.randn(shape, dtype=torch.float64) * 0.02
        else:  # linear biases
            p = torch.randn(shape, dtype=torch.float64) * 0.02
        # Round to f32 so the f32 engine and this f64 reference start from
        # exactly the same weights.
        params[name] = p.to(torch.float32).to(torch.float64)
    return params


def make_batches():
    g = torch.Generator()
    g.manual_seed(DATA_SEED)
    return [torch.randint(0, VOCAB, (B, T + 1), generator=g, dtype=torch.int64)
            for _ in range(STEPS)]


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


def run(init, batches, dtype):
    """Trains STEPS steps; returns a dict of named result tensors (in dtype)."""
    P = {n: t.to(dtype).clone().requires_grad_(True) for n, t in init.items()}
    decay = [t for t in P.values() if t.dim() >= 2]
    no_decay = [t for t in P.values() if t.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": WEIGHT_DECAY},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=LR, betas=(BETA1, BETA2), eps=EPS)
    out = {}
    for k, tokens in enumerate(batches):
        x, y = tokens[:, :-1], tokens[:, 1:]
        opt.zero_grad(set_to_none=True)
        logits = forward(P, x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        if k == 0:
            out["step0.logits"] = logits.detach().clone()
            for n, t in P.items():
                out[f"step0.grad.{n}"] = t.grad.detach().clone()
        out[f"step{k}.loss"] = loss.detach().reshape(1).clone()
        norm = torch.nn.utils.clip_grad_norm_(list(P.values()), MAX_NORM)
        out[f"step{k}.grad_norm"] = norm.detach().reshape(1).clone()
        opt.step()
        for n, t in P.items():
            out[f"step{k}.param.{n}"] = t.detach().clone()
    with torch.no_grad():  # how far training moved batch 0's loss (report only)
        x, y = batches[0][:, :-1], batches[0][:, 1:]
        out["_final_loss_batch0"] = F.cross_entropy(
            forward(P, x).reshape(-1, VOCAB), y.reshape(-1)).reshape(1)
    return out


def group_of(name):
    if name.startswith("step0.grad."):
        return "grad"
    if ".param." in name:
        return name.split(".")[0] + ".param"  # e.g. step2.param
    return name.split(".", 1)[1]  # logits, loss, grad_norm


def deviations(ref, got):
    """Per group: max over tensors of max|f32 - f64| / max|f64| (the C++ test's
    scale-relative metric), the worst tensor, and the max absolute deviation."""
    groups = {}
    for name, r in ref.items():
        if name.startswith("_"):
            continue
        g = got[name].to(torch.float64)
        absdev = (g - r).abs().max().item()
        scale = r.abs().max().item()
        rel = absdev / scale if scale > 0 else absdev
        grp = group_of(name)
        cur = groups.setdefault(grp, {"rel": 0.0, "abs": 0.0, "worst": name})
        cur["abs"] = max(cur["abs"], absdev)
        if rel >= cur["rel"]:
            cur["rel"], cur["worst"] = rel, name
    return groups


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, contiguous torch tensor of float32 or int32)."""
    header = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name, t in tensors:
        if t.dtype == torch.float32:
            dt, fmt = "F32", "<%df"
        elif t.dtype == torch.int32:
            dt, fmt = "I32", "<%di"
        else:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
        flat = t.contiguous().reshape(-1).tolist()
        blob = struct.pack(fmt % len(flat), *flat)
        header[name] = {"dtype": dt, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-(8 + len(hjson))) % 8)  # data block starts 8-aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for blob in blobs:
            f.write(blob)


def main():
    torch.set_num_threads(1)  # fixed reduction order: identical bytes every run
    torch.set_default_dtype(torch.float64)
    init = init_params()
    batches = make_batches()

    ref = run(init, batches, torch.float64)
    f32 = run(init, batches, torch.float32)
    dev = deviations(ref, f32)

    print("step  loss(f64)            loss(f32)            grad_norm(f64)")
    for k in range(STEPS):
        print(f"{k:4d}  {ref[f'step{k}.loss'].item():.17g}  "
              f"{f32[f'step{k}.loss'].item():.9g}  "
              f"{ref[f'step{k}.grad_norm'].item():.17g}")
    print(f"loss of batch 0 after {STEPS} steps: "
          f"{ref['_final_loss_batch0'].item():.17g} "
          f"(was {ref['step0.loss'].item():.17g})")
    print("f32-vs-f64 deviation per group: max|d|/max|ref| (worst tensor), max|d|")
    for grp in sorted(dev):
        d = dev[grp]
        print(f"  {grp:12s} {d['rel']:.3e} ({d['worst']})  abs {d['abs']:.3e}")

    config = {
        "n_layer": N_LAYER, "n_head": N_HEAD, "n_embd": N_EMBD,
        "vocab_size": VOCAB, "n_positions": N_POS, "B": B, "T": T,
        "steps": STEPS, "lr": LR, "beta1": BETA1, "beta2": BETA2, "eps": EPS,
        "weight_decay": WEIGHT_DECAY, "max_norm": MAX_NORM, "seed": SEED,
        "data_seed": DATA_SEED,
    }
    metadata = {
        "config": json.dumps(config, sort_keys=True),
        "generator": "tests/golden/make_reference.py",
        "torch_version": torch.__version__,
    }
    for grp in sorted(dev):
        metadata[f"f32_vs_f64.{grp}.max_rel_to_scale"] = f"{dev[grp]['rel']:.3e}"
        metadata[f"f32_vs_f64.{grp}.worst_tensor"] = dev[grp]["worst"]
        metadata[f"f32_vs_f64.{grp}.max_abs"] = f"{dev[grp]['abs']:.3e}"

    names = [n for n, _ in param_specs()]
    tensors = [(f"param.{n}", init[n].to(torch.float32)) for n in names]
    for k in range(STEPS):
        tensors.append((f"step{k}.tokens", batches[k].to(torch.int32)))
    tensors.append(("step0.logits", ref["step0.logits"].to(torch.float32)))
    for k in range(STEPS):
        tensors.append((f"step{k}.loss", ref[f"step{k}.loss"].to(torch.float32)))
        tensors.append((f"step{k}.grad_norm", ref[f"step{k}.grad_norm"].to(torch.float32)))
    tensors += [(f"step0.grad.{n}", ref[f"step0.grad.{n}"].to(torch.float32)) for n in names]
    for k in range(STEPS):
        tensors += [(f"step{k}.param.{n}", ref[f"step{k}.param.{n}"].to(torch.float32))
                    for n in names]

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), OUT_NAME)
    write_safetensors(path, tensors, metadata)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors)")


if __name__ == "__main__":
    main()

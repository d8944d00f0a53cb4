"""What the golden-reference generators share, whatever the model: the float32-representable
init, the token batches, the AdamW + global-norm-clipping training loop run in a given dtype,
the f32-vs-f64 deviation bookkeeping that becomes the metadata's tolerances, the fixture's
tensor list, and a hand-written safetensors writer.

A generator supplies the model: its parameter specs (name, shape) in checkpoint order, an init
rule, and forward(P, idx) -> logits. Everything is computed once in float64 (the stored truth)
and once in float32 (the measure of what an fp32 engine can reach); see tests/golden/README.md.

Needs only torch and the standard library. Run the generators with /usr/bin/python3.
"""

import json
import os
import struct

import torch
import torch.nn.functional as F

# Training recipe shared by every fixture (exactly torch 1.13 AdamW, single-tensor path).
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
TINY_GRAD = 1e-6  # |step-0 gradient| below which a post-step parameter is ill-conditioned in fp32


def hyperparameters():
    """The recipe's keys as they appear in every fixture's metadata "config"."""
    return {
        "B": B, "T": T, "steps": STEPS, "lr": LR, "beta1": BETA1, "beta2": BETA2, "eps": EPS,
        "weight_decay": WEIGHT_DECAY, "max_norm": MAX_NORM, "seed": SEED, "data_seed": DATA_SEED,
    }


def f32_representable(p):
    """Rounds a float64 tensor to float32 values, returned as float64: the f32 engine and the f64
    reference then start from exactly the same weights."""
    return p.to(torch.float32).to(torch.float64)


def init_params(specs, draw):
    """Draws every parameter in spec order from torch.manual_seed(SEED).

    draw(name, shape) returns a float64 tensor; the result is rounded to f32 values."""
    torch.manual_seed(SEED)
    return {name: f32_representable(draw(name, shape)) for name, shape in specs}


def make_batches(vocab):
    """STEPS batches of [B, T+1] token ids from a generator seeded with DATA_SEED."""
    g = torch.Generator()
    g.manual_seed(DATA_SEED)
    return [torch.randint(0, vocab, (B, T + 1), generator=g, dtype=torch.int64)
            for _ in range(STEPS)]


def masked_targets(y, mask):
    """y with -100 (cross_entropy's ignore_index) where mask (bool, y's shape) is False; y itself
    without a mask."""
    return y if mask is None else y.masked_fill(~mask, -100)


def run(init, batches, dtype, forward, vocab, masks=None):
    """Trains STEPS steps of forward (P, idx) -> logits from init in dtype; returns a dict of
    named result tensors (in dtype): step0.logits, step0.grad.*, step<k>.loss, step<k>.grad_norm,
    step<k>.param.*, and _final_loss_batch0 (report only). masks: per step a bool [B, T] tensor
    (True: the target counts) or None; the loss is then the mean over the targets that count
    (F.cross_entropy with ignore_index=-100)."""
    masks = masks or [None] * len(batches)
    P = {n: t.to(dtype).clone().requires_grad_(True) for n, t in init.items()}
    decay = [t for t in P.values() if t.dim() >= 2]
    no_decay = [t for t in P.values() if t.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": WEIGHT_DECAY},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=LR, betas=(BETA1, BETA2), eps=EPS)
    out = {}
    for k, tokens in enumerate(batches):
        x, y = tokens[:, :-1], masked_targets(tokens[:, 1:], masks[k])
        opt.zero_grad(set_to_none=True)
        logits = forward(P, x)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1), ignore_index=-100)
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
        x, y = batches[0][:, :-1], masked_targets(batches[0][:, 1:], masks[0])
        out["_final_loss_batch0"] = F.cross_entropy(
            forward(P, x).reshape(-1, vocab), y.reshape(-1), ignore_index=-100).reshape(1)
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


def deviations_past_tiny_grads(ref, got, threshold=TINY_GRAD):
    """Per stepK.param group: max over tensors of max|f32 - f64| / max|f64| over the elements
    whose step-0 gradient is 0 or at least threshold in magnitude. Adam's first updates are
    lr*g/(|g|+eps), so where 0 < |g| << 1 the update is rounding noise over eps in any fp32
    engine; a test holds those elements to lr per step and the rest to this figure."""
    groups = {}
    for name, r in ref.items():
        if ".param." not in name:
            continue
        g0 = ref["step0.grad." + name.split(".param.", 1)[1]]
        keep = (g0 == 0) | (g0.abs() >= threshold)
        scale = r.abs().max().item()
        absdev = ((got[name].to(torch.float64) - r).abs() * keep).max().item()
        rel = absdev / scale if scale > 0 else absdev
        grp = group_of(name)
        cur = groups.setdefault(grp, {"rel": 0.0, "worst": name, "exempt": 0})
        cur["exempt"] += int((~keep).sum())
        if rel >= cur["rel"]:
            cur["rel"], cur["worst"] = rel, name
    return groups


def print_summary(ref, f32, dev):
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


def make_metadata(config, generator, dev, dev_past_tiny=None):
    """The fixture's __metadata__: config JSON (sorted keys), generator, torch version, and for
    each deviation group its f32_vs_f64 max_rel_to_scale, worst_tensor and max_abs; with
    dev_past_tiny, per stepK.param group also .max_rel_to_scale_past_tiny_grads, the
    .tiny_grad_threshold and the number of .tiny_grad_elements it leaves out."""
    metadata = {
        "config": json.dumps(config, sort_keys=True),
        "generator": generator,
        "torch_version": torch.__version__,
    }
    for grp in sorted(dev):
        metadata[f"f32_vs_f64.{grp}.max_rel_to_scale"] = f"{dev[grp]['rel']:.3e}"
        metadata[f"f32_vs_f64.{grp}.worst_tensor"] = dev[grp]["worst"]
        metadata[f"f32_vs_f64.{grp}.max_abs"] = f"{dev[grp]['abs']:.3e}"
    for grp in sorted(dev_past_tiny or {}):
        d = dev_past_tiny[grp]
        metadata[f"f32_vs_f64.{grp}.max_rel_to_scale_past_tiny_grads"] = f"{d['rel']:.3e}"
        metadata[f"f32_vs_f64.{grp}.worst_tensor_past_tiny_grads"] = d["worst"]
        metadata[f"f32_vs_f64.{grp}.tiny_grad_threshold"] = f"{TINY_GRAD:.0e}"
        metadata[f"f32_vs_f64.{grp}.tiny_grad_elements"] = str(d["exempt"])
    return metadata


def fixture_tensors(names, init, batches, ref, masks=None):
    """The stored tensors, in file order: param.*, step<k>.tokens (I32), with masks
    step<k>.mask (I32 [B, T], 1 where the target counts), step0.logits, step<k>.loss and
    step<k>.grad_norm, step0.grad.*, step<k>.param.* (all F32)."""
    tensors = [(f"param.{n}", init[n].to(torch.float32)) for n in names]
    for k in range(STEPS):
        tensors.append((f"step{k}.tokens", batches[k].to(torch.int32)))
        if masks is not None:
            tensors.append((f"step{k}.mask", masks[k].to(torch.int32)))
    tensors.append(("step0.logits", ref["step0.logits"].to(torch.float32)))
    for k in range(STEPS):
        tensors.append((f"step{k}.loss", ref[f"step{k}.loss"].to(torch.float32)))
        tensors.append((f"step{k}.grad_norm", ref[f"step{k}.grad_norm"].to(torch.float32)))
    tensors += [(f"step0.grad.{n}", ref[f"step0.grad.{n}"].to(torch.float32)) for n in names]
    for k in range(STEPS):
        tensors += [(f"step{k}.param.{n}", ref[f"step{k}.param.{n}"].to(torch.float32))
                    for n in names]
    return tensors


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


def generate(out_path, specs, draw, forward, vocab, model_config, generator,
             extra_tensors=(), record_tiny_grads=False, masks=None):
    """The whole recipe for one fixture: init, f64 and f32 training runs, deviations, metadata,
    the file. model_config is merged with hyperparameters() into the metadata "config";
    extra_tensors (name, f32/i32 tensor) are appended after the standard ones;
    record_tiny_grads adds deviations_past_tiny_grads() to the metadata; masks (per step a bool
    [B, T], True where the target counts) trains on the mean over the targets that count and
    stores each step's mask.
    Returns (init, batches, ref, f32, dev, tensors) for a generator's own checks and report."""
    torch.set_num_threads(1)  # fixed reduction order: identical bytes every run
    torch.set_default_dtype(torch.float64)
    init = init_params(specs, draw)
    batches = make_batches(vocab)

    ref = run(init, batches, torch.float64, forward, vocab, masks)
    f32 = run(init, batches, torch.float32, forward, vocab, masks)
    dev = deviations(ref, f32)
    print_summary(ref, f32, dev)

    hyper = hyperparameters()
    clash = set(hyper) & set(model_config)
    if clash:
        raise ValueError(f"model config keys clash with the recipe's: {sorted(clash)}")
    config = dict(model_config)
    config.update(hyper)
    past_tiny = deviations_past_tiny_grads(ref, f32) if record_tiny_grads else None
    for grp in sorted(past_tiny or {}):
        d = past_tiny[grp]
        print(f"  {grp:12s} {d['rel']:.3e} ({d['worst']}) leaving out {d['exempt']} elements "
              f"with 0 < |step-0 grad| < {TINY_GRAD:.0e}")
    metadata = make_metadata(config, generator, dev, past_tiny)
    tensors = (fixture_tensors([n for n, _ in specs], init, batches, ref, masks) +
               list(extra_tensors))
    write_safetensors(out_path, tensors, metadata)
    print(f"wrote {out_path} ({os.path.getsize(out_path)} bytes, {len(tensors)} tensors)")
    return init, batches, ref, f32, dev, tensors

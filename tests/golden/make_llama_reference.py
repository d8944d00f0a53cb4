#!/usr/bin/python3
"""Writes the Llama-family golden fixtures: tests/golden/llama_tiny.safetensors,
llama_tiny_tied_bias.safetensors, mistral_tiny_window.safetensors (a sliding window of 3 keys on
8-token sequences), qwen2_tiny_window.safetensors (use_sliding_window on layer 1 only, by
max_window_layers) and qwen3_tiny.safetensors (per-head q/k RMSNorm, head_dim 16 != 32 / 4,
tied), each with its Hugging Face config.json (<stem>.config.json).

The model is Hugging Face's LlamaForCausalLM, written here in plain torch (transformers is not
imported): RMSNorm, q/k/v/o projections in nn.Linear orientation (W [out, in], y = x W^T + b),
rotate-half RoPE with optional "linear" or "llama3" rope_scaling, grouped-query attention
(HF repeat_kv), SwiGLU MLP, final norm, untied or tied lm_head; mean cross-entropy over B*T.
Mistral's sliding window (transformers' sliding_window_causal mask: query i sees key j when
0 <= i - j < sliding_window; Qwen2/Qwen3 only with use_sliding_window, on layers >=
max_window_layers) and Qwen3's q_norm / k_norm (RMSNorm over head_dim on the (B, T, heads,
head_dim) view, before RoPE) are modeling_mistral's, modeling_qwen2's and modeling_qwen3's.
The recipe (f32-representable init, batches, 3 AdamW steps with global-norm clipping, f32-vs-f64
deviations, file layout) is reference_common.py's, identical to the GPT-2 fixture's.

Before writing, the script asserts that this forward agrees with an independent per-head,
per-position loop (explicit pair rotations, explicit kv-head selection, scalar llama3 scaling)
and that the initial loss is near ln(vocab). See tests/golden/README.md.

Run with Debian's interpreter (it has torch): /usr/bin/python3 tests/golden/make_llama_reference.py
Needs only torch and the standard library; the output is byte-for-byte deterministic.
"""

import json
import math
import os

import torch
import torch.nn.functional as F

import reference_common as rc

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = "tests/golden/make_llama_reference.py"

# (a) plain Llama: GQA with 2 query heads per kv head, untied head, no biases, no rope scaling.
LLAMA_TINY = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "head_dim": 8,
    "hidden_act": "silu",
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 40,
    "max_position_embeddings": 16,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "float32",
    "use_cache": True,
    "vocab_size": 64,
}

# (b) Qwen2-like, expressed as a Llama config: tied head, attention biases (HF Llama puts them on
# q, k, v AND o_proj), head_dim 16 != hidden/heads, one kv head for all 4 query heads, llama3
# rope scaling.
LLAMA_TINY_TIED_BIAS = dict(LLAMA_TINY)
LLAMA_TINY_TIED_BIAS.update({
    "attention_bias": True,
    "head_dim": 16,
    "num_key_value_heads": 1,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8, "rope_type": "llama3"},
    "rope_theta": 1000000.0,
    "tie_word_embeddings": True,
})

# (c) Mistral with a sliding window of 3 keys on sequences of 8: the window binds.
MISTRAL_TINY_WINDOW = {k: v for k, v in LLAMA_TINY.items()
                       if k not in ("attention_bias", "mlp_bias", "pretraining_tp")}
MISTRAL_TINY_WINDOW.update({
    "architectures": ["MistralForCausalLM"],
    "model_type": "mistral",
    "sliding_window": 3,
})

# (d) Qwen2 with use_sliding_window: layer 0 below max_window_layers keeps full attention, layer
# 1 has a window of 4 keys; tied head, q/k/v biases.
QWEN2_TINY_WINDOW = {k: v for k, v in LLAMA_TINY.items()
                     if k not in ("attention_bias", "mlp_bias", "pretraining_tp", "head_dim")}
QWEN2_TINY_WINDOW.update({
    "architectures": ["Qwen2ForCausalLM"],
    "max_window_layers": 1,
    "model_type": "qwen2",
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 4,
    "tie_word_embeddings": True,
    "use_sliding_window": True,
})

# (e) Qwen3: per-head q/k RMSNorm, head_dim 16 != hidden / heads = 8, no biases, tied head.
QWEN3_TINY = dict(LLAMA_TINY)
for _key in ("mlp_bias", "pretraining_tp"):
    del QWEN3_TINY[_key]
QWEN3_TINY.update({
    "architectures": ["Qwen3ForCausalLM"],
    "head_dim": 16,
    "max_window_layers": 2,
    "model_type": "qwen3",
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": None,
    "tie_word_embeddings": True,
    "use_sliding_window": False,
})

FIXTURES = [("llama_tiny", LLAMA_TINY), ("llama_tiny_tied_bias", LLAMA_TINY_TIED_BIAS),
            ("mistral_tiny_window", MISTRAL_TINY_WINDOW), ("qwen2_tiny_window", QWEN2_TINY_WINDOW),
            ("qwen3_tiny", QWEN3_TINY)]


class Arch:
    """The architecture a config.json describes, resolved the way HF resolves it."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.H = cfg["hidden_size"]
        self.I = cfg["intermediate_size"]
        self.NH = cfg["num_attention_heads"]
        self.NKV = cfg.get("num_key_value_heads") or self.NH
        self.HD = cfg.get("head_dim") or self.H // self.NH
        self.L = cfg["num_hidden_layers"]
        self.V = cfg["vocab_size"]
        self.eps = cfg["rms_norm_eps"]
        self.tied = cfg.get("tie_word_embeddings", False)
        mt = cfg["model_type"]
        if mt == "llama":
            self.qkv_bias = self.o_bias = cfg.get("attention_bias", False)
            self.mlp_bias = cfg.get("mlp_bias", False)
        elif mt == "mistral":  # MistralAttention and MistralMLP: no biases
            self.qkv_bias, self.o_bias, self.mlp_bias = False, False, False
        elif mt == "qwen2":  # Qwen2Attention: q/k/v biased, o_proj not
            self.qkv_bias, self.o_bias, self.mlp_bias = True, False, False
        elif mt == "qwen3":  # Qwen3Attention: attention_bias on all four projections
            self.qkv_bias = self.o_bias = cfg.get("attention_bias", False)
            self.mlp_bias = False
        else:
            raise ValueError(f"model_type {mt!r} not supported")
        self.qk_norm = mt == "qwen3"
        # Each layer's sliding window (None: full causal attention), as HF's configs decide it.
        if mt == "mistral":
            self.windows = [cfg.get("sliding_window", 4096)] * self.L
        elif mt in ("qwen2", "qwen3") and cfg.get("use_sliding_window", False):
            first = cfg.get("max_window_layers", 28)
            self.windows = [cfg.get("sliding_window", 4096) if i >= first else None
                            for i in range(self.L)]
        else:
            self.windows = [None] * self.L
        assert cfg.get("hidden_act", "silu") == "silu"
        assert cfg.get("partial_rotary_factor", 1.0) == 1.0
        assert self.NH % self.NKV == 0 and self.HD % 2 == 0
        self.groups = self.NH // self.NKV


def param_specs(a):
    """(name, shape) in LlamaForCausalLM.named_parameters() order (tied lm_head omitted)."""
    H, I, QD, KD = a.H, a.I, a.NH * a.HD, a.NKV * a.HD
    specs = [("model.embed_tokens.weight", (a.V, H))]
    for i in range(a.L):
        p = f"model.layers.{i}."
        for proj, out_dim, in_dim, bias in (("q_proj", QD, H, a.qkv_bias),
                                            ("k_proj", KD, H, a.qkv_bias),
                                            ("v_proj", KD, H, a.qkv_bias),
                                            ("o_proj", H, QD, a.o_bias)):
            specs.append((f"{p}self_attn.{proj}.weight", (out_dim, in_dim)))
            if bias:
                specs.append((f"{p}self_attn.{proj}.bias", (out_dim,)))
        if a.qk_norm:
            specs += [(p + "self_attn.q_norm.weight", (a.HD,)), (p + "self_attn.k_norm.weight", (a.HD,))]
        for proj, out_dim, in_dim in (("gate_proj", I, H), ("up_proj", I, H), ("down_proj", H, I)):
            specs.append((f"{p}mlp.{proj}.weight", (out_dim, in_dim)))
            if a.mlp_bias:
                specs.append((f"{p}mlp.{proj}.bias", (out_dim,)))
        specs += [(p + "input_layernorm.weight", (H,)), (p + "post_attention_layernorm.weight", (H,))]
    specs.append(("model.norm.weight", (H,)))
    if not a.tied:
        specs.append(("lm_head.weight", (a.V, H)))
    return specs


def draw_param(name, shape):
    """Linear and embedding weights N(0, 0.02); RMSNorm weights 1 + N(0, 0.1) and biases
    N(0, 0.02), so that norm weights and biases carry non-trivial gradients."""
    if name.endswith(("layernorm.weight", "_norm.weight")) or name == "model.norm.weight":
        return 1.0 + torch.randn(shape, dtype=torch.float64) * 0.1
    return torch.randn(shape, dtype=torch.float64) * 0.02


def inv_freq(a, dtype):
    """HF's rope init (modeling_rope_utils): default, "linear" or "llama3", in dtype. HF computes
    it in float32; the float64 reference computes it in float64."""
    d = a.HD
    inv = 1.0 / (a.cfg["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.int64).to(dtype) / d))
    rs = a.cfg.get("rope_scaling")
    rope_type = "default" if rs is None else rs.get("rope_type", rs.get("type"))
    if rope_type == "default":
        return inv
    if rope_type == "linear":
        return inv / rs["factor"]
    if rope_type == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old_len = rs["original_max_position_embeddings"]
        low_freq_wavelen, high_freq_wavelen = old_len / lo, old_len / hi
        wavelen = 2 * math.pi / inv
        # Long wavelengths are slowed down by factor; short ones kept; the band between is a
        # linear blend in old_len / wavelen.
        inv_llama = torch.where(wavelen > low_freq_wavelen, inv / factor, inv)
        smooth = (old_len / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * inv_llama / factor + smooth * inv_llama
        is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        return torch.where(is_medium, smoothed, inv_llama)
    raise ValueError(f"rope_type {rope_type!r} not supported")


def linear(x, P, name, bias):
    y = x @ P[name + ".weight"].t()
    return y + P[name + ".bias"] if bias else y


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    """(B, NKV, T, HD) -> (B, NKV*n_rep, T, HD); kv head j serves query heads j*n_rep..+n_rep-1."""
    Bn, nkv, Tn, hd = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(Bn, nkv, n_rep, Tn, hd).reshape(Bn, nkv * n_rep, Tn, hd)


def forward(a, P, idx):
    """LlamaForCausalLM logits (B, T, V) for token ids idx (B, T), in P's dtype."""
    Bn, Tn = idx.shape
    dtype = P["model.embed_tokens.weight"].dtype
    freqs = torch.outer(torch.arange(Tn, dtype=torch.int64).to(dtype), inv_freq(a, dtype))
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, HD)
    cos, sin = emb.cos(), emb.sin()
    causal = torch.ones(Tn, Tn, dtype=torch.bool).tril()
    pos = torch.arange(Tn)
    x = P["model.embed_tokens.weight"][idx]
    for i in range(a.L):
        p = f"model.layers.{i}."
        h = rms_norm(x, P[p + "input_layernorm.weight"], a.eps)
        q = linear(h, P, p + "self_attn.q_proj", a.qkv_bias).view(Bn, Tn, a.NH, a.HD)
        k = linear(h, P, p + "self_attn.k_proj", a.qkv_bias).view(Bn, Tn, a.NKV, a.HD)
        if a.qk_norm:  # Qwen3: over head_dim, per head, before RoPE
            q = rms_norm(q, P[p + "self_attn.q_norm.weight"], a.eps)
            k = rms_norm(k, P[p + "self_attn.k_norm.weight"], a.eps)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = linear(h, P, p + "self_attn.v_proj", a.qkv_bias).view(Bn, Tn, a.NKV, a.HD).transpose(1, 2)
        mask = causal
        if a.windows[i] is not None:  # sliding_window_causal: q_idx - kv_idx < sliding_window
            mask = causal & ((pos[:, None] - pos[None, :]) < a.windows[i])
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, a.groups), repeat_kv(v, a.groups)
        att = (q @ k.transpose(2, 3)) * a.HD ** -0.5
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(Bn, Tn, a.NH * a.HD)
        x = x + linear(y, P, p + "self_attn.o_proj", a.o_bias)
        h = rms_norm(x, P[p + "post_attention_layernorm.weight"], a.eps)
        g = F.silu(linear(h, P, p + "mlp.gate_proj", a.mlp_bias))
        x = x + linear(g * linear(h, P, p + "mlp.up_proj", a.mlp_bias), P, p + "mlp.down_proj",
                       a.mlp_bias)
    x = rms_norm(x, P["model.norm.weight"], a.eps)
    head = P["model.embed_tokens.weight"] if a.tied else P["lm_head.weight"]
    return x @ head.t()


# ---- Independent check: one query head, one position at a time -----------------------------

def inv_freq_scalar(a):
    """Meta's per-frequency formulation of the rope init, in Python floats."""
    d, theta = a.HD, a.cfg["rope_theta"]
    freqs = [1.0 / theta ** (i / d) for i in range(0, d, 2)]
    rs = a.cfg.get("rope_scaling")
    if rs is None:
        return freqs
    if rs["rope_type"] == "linear":
        return [f / rs["factor"] for f in freqs]
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old_len = rs["original_max_position_embeddings"]
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < old_len / hi:
            out.append(f)
        elif wavelen > old_len / lo:
            out.append(f / factor)
        else:
            smooth = (old_len / wavelen - lo) / (hi - lo)
            out.append((1 - smooth) * f / factor + smooth * f)
    return out


def forward_loop(a, P, idx):
    """The same model as forward(), written per sequence, position and query head: explicit
    rotation of dimension pairs (i, i + HD/2), the kv head chosen as head // groups, a scalar
    softmax over the causal prefix. Slow; for the assertion only."""
    inv = inv_freq_scalar(a)
    half, HD = a.HD // 2, a.HD

    def rope(vec, t):
        c = [math.cos(t * f) for f in inv]
        s = [math.sin(t * f) for f in inv]
        first = [vec[i] * c[i] - vec[i + half] * s[i] for i in range(half)]
        second = [vec[i + half] * c[i] + vec[i] * s[i] for i in range(half)]
        return torch.stack(first + second)

    def norm(vec, w):
        return vec / torch.sqrt((vec * vec).sum() / a.H + a.eps) * w

    def head_norm(vec, name):  # Qwen3's q_norm / k_norm on one head's vector, else identity
        if not a.qk_norm:
            return vec
        return vec / torch.sqrt((vec * vec).sum() / HD + a.eps) * P[name]

    def lin(vec, name, bias):
        y = P[name + ".weight"] @ vec
        return y + P[name + ".bias"] if bias else y

    head_w = P["model.embed_tokens.weight"] if a.tied else P["lm_head.weight"]
    batch_logits = []
    for b in range(idx.shape[0]):
        xs = [P["model.embed_tokens.weight"][idx[b, t]] for t in range(idx.shape[1])]
        for i in range(a.L):
            p = f"model.layers.{i}."
            hs = [norm(x, P[p + "input_layernorm.weight"]) for x in xs]
            qs = [lin(h, p + "self_attn.q_proj", a.qkv_bias) for h in hs]
            ks = [lin(h, p + "self_attn.k_proj", a.qkv_bias) for h in hs]
            vs = [lin(h, p + "self_attn.v_proj", a.qkv_bias) for h in hs]
            roped_k = [[rope(head_norm(k[j * HD:(j + 1) * HD], p + "self_attn.k_norm.weight"), s)
                        for j in range(a.NKV)] for s, k in enumerate(ks)]
            window = a.windows[i] or len(xs)
            new_xs = []
            for t, x in enumerate(xs):
                heads = []
                for hq in range(a.NH):
                    j = hq // a.groups
                    qv = rope(head_norm(qs[t][hq * HD:(hq + 1) * HD], p + "self_attn.q_norm.weight"),
                              t)
                    seen = range(max(0, t - window + 1), t + 1)  # the last `window` keys
                    scores = [(qv * roped_k[s][j]).sum() / math.sqrt(HD) for s in seen]
                    m = max(sc.item() for sc in scores)
                    e = [torch.exp(sc - m) for sc in scores]
                    z = sum(e)
                    heads.append(sum(e[n] / z * vs[s][j * HD:(j + 1) * HD]
                                     for n, s in enumerate(seen)))
                new_xs.append(x + lin(torch.cat(heads), p + "self_attn.o_proj", a.o_bias))
            xs = []
            for x in new_xs:
                h = norm(x, P[p + "post_attention_layernorm.weight"])
                g = lin(h, p + "mlp.gate_proj", a.mlp_bias)
                u = lin(h, p + "mlp.up_proj", a.mlp_bias)
                xs.append(x + lin(g / (1 + torch.exp(-g)) * u, p + "mlp.down_proj", a.mlp_bias))
        batch_logits.append(torch.stack([head_w @ norm(x, P["model.norm.weight"]) for x in xs]))
    return torch.stack(batch_logits)


def check_against_loop(cfg, idx, what):
    """Asserts forward() == forward_loop() in float64 on freshly drawn params for cfg."""
    a = Arch(cfg)
    P = rc.init_params(param_specs(a), draw_param)
    inv_v, inv_s = inv_freq(a, torch.float64), torch.tensor(inv_freq_scalar(a))
    assert torch.allclose(inv_v, inv_s, rtol=1e-13, atol=0), (what, inv_v, inv_s)
    got, want = forward(a, P, idx), forward_loop(a, P, idx)
    diff = (got - want).abs().max().item()
    print(f"check {what}: vectorised vs per-head loop max|d| = {diff:.2e}")
    assert diff < 1e-12 * want.abs().max().item(), (what, diff)


def llama3_bands(a):
    """Which llama3 branch each frequency takes (for the report)."""
    rs = a.cfg.get("rope_scaling")
    if not rs or rs.get("rope_type") != "llama3":
        return None
    old_len = rs["original_max_position_embeddings"]
    bands = []
    for f in 1.0 / (a.cfg["rope_theta"] ** (torch.arange(0, a.HD, 2).double() / a.HD)):
        w = 2 * math.pi / f.item()
        bands.append("kept" if w < old_len / rs["high_freq_factor"] else
                     "divided" if w > old_len / rs["low_freq_factor"] else "blended")
    return bands


def main():
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    idx = rc.make_batches(LLAMA_TINY["vocab_size"])[0][:, :-1]
    mha = dict(LLAMA_TINY, num_key_value_heads=LLAMA_TINY["num_attention_heads"])
    linear_rope = dict(LLAMA_TINY, rope_scaling={"rope_type": "linear", "factor": 2.0})
    qwen2 = {k: v for k, v in LLAMA_TINY_TIED_BIAS.items() if k != "attention_bias"}
    qwen2.update(model_type="qwen2", architectures=["Qwen2ForCausalLM"])
    for what, cfg in (("llama_tiny (GQA, 2 q heads per kv head)", LLAMA_TINY),
                      ("llama_tiny with num_key_value_heads = num_attention_heads", mha),
                      ("llama_tiny with linear rope_scaling 2.0", linear_rope),
                      ("llama_tiny_tied_bias (1 kv head, head_dim 16, llama3 rope)",
                       LLAMA_TINY_TIED_BIAS),
                      ("llama_tiny_tied_bias as model_type qwen2 (no o_proj bias)", qwen2),
                      ("mistral_tiny_window (sliding window 3 of 8)", MISTRAL_TINY_WINDOW),
                      ("qwen2_tiny_window (window 4 on layer 1 only)", QWEN2_TINY_WINDOW),
                      ("qwen3_tiny (q/k norm, head_dim 16)", QWEN3_TINY)):
        check_against_loop(cfg, idx, what)

    for stem, cfg in FIXTURES:
        print(f"== {stem}")
        a = Arch(cfg)
        specs = param_specs(a)
        fwd = lambda P, x, a=a: forward(a, P, x)  # noqa: E731
        init = rc.init_params(specs, draw_param)
        batch0 = rc.make_batches(a.V)[0]
        with torch.no_grad():
            loss0 = F.cross_entropy(fwd(init, batch0[:, :-1]).reshape(-1, a.V),
                                    batch0[:, 1:].reshape(-1)).item()
        assert abs(loss0 - math.log(a.V)) < 0.05, (stem, loss0, math.log(a.V))
        print(f"initial loss {loss0:.6f} vs ln({a.V}) = {math.log(a.V):.6f}")
        if llama3_bands(a):
            print(f"llama3 rope bands per frequency: {llama3_bands(a)}")

        extra = [("rope.inv_freq", inv_freq(a, torch.float64).to(torch.float32))]
        path = os.path.join(HERE, stem + ".safetensors")
        _, _, ref, _, _, _ = rc.generate(path, specs, draw_param, fwd, a.V, cfg, GENERATOR,
                                         extra, record_tiny_grads=True)
        zero = sum(int((g == 0).sum()) for n, g in ref.items() if n.startswith("step0.grad."))
        print(f"step-0 gradient elements exactly 0 (embedding rows of unseen tokens): {zero}")
        with open(os.path.join(HERE, stem + ".config.json"), "w") as f:
            f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

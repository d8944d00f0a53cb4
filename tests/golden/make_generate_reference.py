"""Golden greedy decodes for generation (engine/generate): a tiny GPT-2 and a tiny Llama with
grouped-query attention and llama3 RoPE scaling, each decoded greedily for NEW tokens by a plain
float64 PyTorch forward over the whole sequence (no cache) at every step.

Writes, per model, tests/golden/generate/<name>/{model.safetensors, config.json} (Hugging Face
names and config keys, so `accelctl generate --model DIR` reads them) and
tests/golden/generate/reference.json: the prompt, the expected new ids, and the smallest margin
between the best and second-best float64 logit over all steps (weights are drawn so that the
greedy choice is never a near tie), plus whether a float32 run of the same decode picks the same
tokens. Both models are byte-level (vocabulary 256), so the prompt is its UTF-8 bytes.

Run with Debian's torch: /usr/bin/python3 tests/golden/make_generate_reference.py
Deterministic (torch.set_num_threads(1), fixed seeds): a rerun writes identical bytes.
"""

import json
import math
import os

import torch

from reference_common import write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "generate")
PROMPT = "The golden fox jumps over the lazy dog; 0123456789 "
NEW = 40
MIN_MARGIN = 0.05  # reject weights whose greedy choice is ever closer than this (float64 logits)
MIN_DISTINCT = 12  # and those that fall into a short loop (a weak test of the cache)


def normal(shape, std, g):
    return (torch.randn(shape, generator=g, dtype=torch.float64) * std).to(torch.float32).to(
        torch.float64)


# ---------------------------------------------------------------------------------------------
# GPT-2 (HF GPT2LMHeadModel semantics; Conv1D weights [in, out], tied head).
GPT2 = {"model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 64, "vocab_size": 256,
        "n_positions": 128, "n_ctx": 128, "layer_norm_epsilon": 1e-5,
        "activation_function": "gelu_new", "tie_word_embeddings": True,
        "architectures": ["GPT2LMHeadModel"]}


def gpt2_params(g):
    C, V, P, L = GPT2["n_embd"], GPT2["vocab_size"], GPT2["n_positions"], GPT2["n_layer"]
    p = {"wte.weight": normal((V, C), 1.0, g), "wpe.weight": normal((P, C), 1.0, g)}
    for l in range(L):
        h = f"h.{l}."
        p[h + "ln_1.weight"] = 1 + normal((C,), 0.1, g)
        p[h + "ln_1.bias"] = normal((C,), 0.1, g)
        p[h + "attn.c_attn.weight"] = normal((C, 3 * C), 2 / math.sqrt(C), g)
        p[h + "attn.c_attn.bias"] = normal((3 * C,), 0.1, g)
        p[h + "attn.c_proj.weight"] = normal((C, C), 1 / math.sqrt(C), g)
        p[h + "attn.c_proj.bias"] = normal((C,), 0.1, g)
        p[h + "ln_2.weight"] = 1 + normal((C,), 0.1, g)
        p[h + "ln_2.bias"] = normal((C,), 0.1, g)
        p[h + "mlp.c_fc.weight"] = normal((C, 4 * C), 1 / math.sqrt(C), g)
        p[h + "mlp.c_fc.bias"] = normal((4 * C,), 0.1, g)
        p[h + "mlp.c_proj.weight"] = normal((4 * C, C), 1 / math.sqrt(4 * C), g)
        p[h + "mlp.c_proj.bias"] = normal((C,), 0.1, g)
    p["ln_f.weight"] = 1 + normal((C,), 0.1, g)
    p["ln_f.bias"] = normal((C,), 0.1, g)
    return p


def gpt2_forward(p, ids, dtype):
    P = {k: v.to(dtype) for k, v in p.items()}
    C, H = GPT2["n_embd"], GPT2["n_head"]
    T = len(ids)
    idx = torch.tensor(ids)
    x = P["wte.weight"][idx] + P["wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def ln(x, w, b):
        return torch.nn.functional.layer_norm(x, (C,), w, b, 1e-5)

    for l in range(GPT2["n_layer"]):
        h = f"h.{l}."
        qkv = ln(x, P[h + "ln_1.weight"], P[h + "ln_1.bias"]) @ P[h + "attn.c_attn.weight"] + \
            P[h + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=-1)
        q, k, v = (t.view(T, H, C // H).transpose(0, 1) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(C // H)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(0, 1).reshape(T, C)
        x = x + y @ P[h + "attn.c_proj.weight"] + P[h + "attn.c_proj.bias"]
        m = ln(x, P[h + "ln_2.weight"], P[h + "ln_2.bias"]) @ P[h + "mlp.c_fc.weight"] + \
            P[h + "mlp.c_fc.bias"]
        m = 0.5 * m * (1 + torch.tanh(math.sqrt(2 / math.pi) * (m + 0.044715 * m ** 3)))
        x = x + m @ P[h + "mlp.c_proj.weight"] + P[h + "mlp.c_proj.bias"]
    x = ln(x, P["ln_f.weight"], P["ln_f.bias"])
    return x[-1] @ P["wte.weight"].T


# ---------------------------------------------------------------------------------------------
# Llama (HF LlamaForCausalLM): GQA 4 query heads over 2 kv heads, llama3 rope_scaling, untied.
LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
         "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 128,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
         "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
         "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
         "hidden_act": "silu", "architectures": ["LlamaForCausalLM"]}


def llama_params(g):
    C, I, V = LLAMA["hidden_size"], LLAMA["intermediate_size"], LLAMA["vocab_size"]
    Q = LLAMA["num_attention_heads"] * LLAMA["head_dim"]
    K = LLAMA["num_key_value_heads"] * LLAMA["head_dim"]
    p = {"model.embed_tokens.weight": normal((V, C), 1.0, g)}
    for l in range(LLAMA["num_hidden_layers"]):
        h = f"model.layers.{l}."
        p[h + "input_layernorm.weight"] = 1 + normal((C,), 0.1, g)
        p[h + "self_attn.q_proj.weight"] = normal((Q, C), 2 / math.sqrt(C), g)
        p[h + "self_attn.k_proj.weight"] = normal((K, C), 2 / math.sqrt(C), g)
        p[h + "self_attn.v_proj.weight"] = normal((K, C), 1 / math.sqrt(C), g)
        p[h + "self_attn.o_proj.weight"] = normal((C, Q), 1 / math.sqrt(Q), g)
        p[h + "post_attention_layernorm.weight"] = 1 + normal((C,), 0.1, g)
        p[h + "mlp.gate_proj.weight"] = normal((I, C), 1 / math.sqrt(C), g)
        p[h + "mlp.up_proj.weight"] = normal((I, C), 1 / math.sqrt(C), g)
        p[h + "mlp.down_proj.weight"] = normal((C, I), 1 / math.sqrt(I), g)
    p["model.norm.weight"] = 1 + normal((C,), 0.1, g)
    p["lm_head.weight"] = normal((V, C), 1 / math.sqrt(C), g)
    return p


def llama3_inv_freq():
    """transformers' _compute_llama3_parameters, in float64."""
    D, s = LLAMA["head_dim"], LLAMA["rope_scaling"]
    inv = 1.0 / (LLAMA["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    old, lo, hi, factor = (s["original_max_position_embeddings"], s["low_freq_factor"],
                           s["high_freq_factor"], s["factor"])
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > old / lo, inv / factor, inv)
    smooth = (old / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
    return torch.where(medium, smoothed, scaled)


def llama_forward(p, ids, dtype):
    P = {k: v.to(dtype) for k, v in p.items()}
    C, H, KV, D = (LLAMA["hidden_size"], LLAMA["num_attention_heads"],
                   LLAMA["num_key_value_heads"], LLAMA["head_dim"])
    eps = LLAMA["rms_norm_eps"]
    T = len(ids)
    x = P["model.embed_tokens.weight"][torch.tensor(ids)]
    angles = torch.arange(T, dtype=torch.float64)[:, None] * llama3_inv_freq()[None, :]
    emb = torch.cat([angles, angles], dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def rms(x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def rot(t):  # (heads, T, D)
        half = D // 2
        rotated = torch.cat([-t[..., half:], t[..., :half]], dim=-1)
        return t * cos + rotated * sin

    for l in range(LLAMA["num_hidden_layers"]):
        h = f"model.layers.{l}."
        n = rms(x, P[h + "input_layernorm.weight"])
        q = (n @ P[h + "self_attn.q_proj.weight"].T).view(T, H, D).transpose(0, 1)
        k = (n @ P[h + "self_attn.k_proj.weight"].T).view(T, KV, D).transpose(0, 1)
        v = (n @ P[h + "self_attn.v_proj.weight"].T).view(T, KV, D).transpose(0, 1)
        q, k = rot(q), rot(k)
        k = k.repeat_interleave(H // KV, dim=0)
        v = v.repeat_interleave(H // KV, dim=0)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(0, 1).reshape(T, H * D)
        x = x + y @ P[h + "self_attn.o_proj.weight"].T
        n = rms(x, P[h + "post_attention_layernorm.weight"])
        gate = n @ P[h + "mlp.gate_proj.weight"].T
        up = n @ P[h + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ P[h + "mlp.down_proj.weight"].T
    x = rms(x, P["model.norm.weight"])
    return x[-1] @ P["lm_head.weight"].T


# ---------------------------------------------------------------------------------------------
def greedy(params, forward, prompt, dtype):
    ids, margins = list(prompt), []
    for _ in range(NEW):
        logits = forward(params, ids, dtype).to(torch.float64)
        top = torch.topk(logits, 2).values
        margins.append(float(top[0] - top[1]))
        ids.append(int(torch.argmax(logits)))
    return ids[len(prompt):], min(margins)


def make(name, config, draw, forward, seed):
    prompt = list(PROMPT.encode("utf-8"))
    # The first seed from `seed` on whose greedy decode never has a near tie.
    while True:
        g = torch.Generator()
        g.manual_seed(seed)
        params = draw(g)
        ref, margin = greedy(params, forward, prompt, torch.float64)
        if margin >= MIN_MARGIN and len(set(ref)) >= MIN_DISTINCT:
            break
        seed += 1
    f32, _ = greedy(params, forward, prompt, torch.float32)
    os.makedirs(os.path.join(OUT, name), exist_ok=True)
    write_safetensors(os.path.join(OUT, name, "model.safetensors"),
                      [(k, v.to(torch.float32)) for k, v in params.items()],
                      {"format": "pt", "producer": "make_generate_reference.py"})
    with open(os.path.join(OUT, name, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{name}: seed {seed}, min margin {margin:.4f}, f32 == f64: {f32 == ref}")
    print(f"  {bytes(ref)!r}")
    return {"seed": seed, "prompt": PROMPT, "prompt_ids": prompt, "new_ids": ref,
            "min_margin_f64": margin, "f32_same_tokens": f32 == ref}


def main():
    torch.set_num_threads(1)
    ref = {"new_tokens": NEW,
           "gpt2": make("gpt2", GPT2, gpt2_params, gpt2_forward, 100),
           "llama": make("llama", LLAMA, llama_params, llama_forward, 200)}
    with open(os.path.join(OUT, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

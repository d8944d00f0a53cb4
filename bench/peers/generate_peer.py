"""The PyTorch peer of accel_bench_generate: greedy generation at batch 1 with a KV cache written
in plain torch (eager, no torch.compile), for the shape in a Hugging Face config.json (GPT-2 or
the Llama family), random weights. Prints one JSON line: prefill seconds, decode seconds and
new tokens per second (new tokens over prefill + decode, as the C++ side counts).

/usr/bin/python3 bench/peers/generate_peer.py --config config.json --dtype fp32 \
    --prompt 128 --new 128 --threads N
"""

import argparse
import json
import math
import time

import torch
import torch.nn.functional as F


class Gpt2:
    def __init__(self, c, dtype):
        self.C, self.H, self.L = c["n_embd"], c["n_head"], c["n_layer"]
        V, P, C = c["vocab_size"], c["n_positions"], self.C
        r = lambda *s: (torch.randn(*s) * 0.02).to(dtype)
        self.wte, self.wpe = r(V, C), r(P, C)
        self.blocks = [dict(ln1w=torch.ones(C, dtype=dtype), ln1b=torch.zeros(C, dtype=dtype),
                            attn_w=r(C, 3 * C), attn_b=r(3 * C), proj_w=r(C, C), proj_b=r(C),
                            ln2w=torch.ones(C, dtype=dtype), ln2b=torch.zeros(C, dtype=dtype),
                            fc_w=r(C, 4 * C), fc_b=r(4 * C), fcp_w=r(4 * C, C), fcp_b=r(C))
                       for _ in range(self.L)]
        self.lnfw, self.lnfb = torch.ones(C, dtype=dtype), torch.zeros(C, dtype=dtype)
        self.cache = [None] * self.L

    def step(self, ids, pos):
        C, H = self.C, self.H
        T = ids.shape[0]
        x = self.wte[ids] + self.wpe[pos:pos + T]
        for l, b in enumerate(self.blocks):
            h = F.layer_norm(x, (C,), b["ln1w"], b["ln1b"])
            q, k, v = torch.addmm(b["attn_b"], h, b["attn_w"]).split(C, dim=-1)
            q, k, v = (t.view(T, H, C // H).transpose(0, 1) for t in (q, k, v))
            if self.cache[l] is not None:
                k = torch.cat([self.cache[l][0], k], dim=1)
                v = torch.cat([self.cache[l][1], v], dim=1)
            self.cache[l] = (k, v)
            y = attend(q, k, v, pos)
            x = x + torch.addmm(b["proj_b"], y.transpose(0, 1).reshape(T, C), b["proj_w"])
            h = F.layer_norm(x, (C,), b["ln2w"], b["ln2b"])
            h = F.gelu(torch.addmm(b["fc_b"], h, b["fc_w"]), approximate="tanh")
            x = x + torch.addmm(b["fcp_b"], h, b["fcp_w"])
        x = F.layer_norm(x[-1:], (C,), self.lnfw, self.lnfb)
        return (x @ self.wte.T)[0]


class Llama:
    def __init__(self, c, dtype):
        C, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
        self.H, self.KV = c["num_attention_heads"], c["num_key_value_heads"]
        self.D = c.get("head_dim") or C // self.H
        self.L, self.eps = c["num_hidden_layers"], c.get("rms_norm_eps", 1e-6)
        Q, K = self.H * self.D, self.KV * self.D
        r = lambda *s: (torch.randn(*s) * 0.02).to(dtype)
        self.embed = r(V, C)
        self.head = self.embed if c.get("tie_word_embeddings", False) else r(V, C)
        self.blocks = [dict(n1=torch.ones(C, dtype=dtype), q=r(Q, C), k=r(K, C), v=r(K, C),
                            o=r(C, Q), n2=torch.ones(C, dtype=dtype), gate=r(I, C), up=r(I, C),
                            down=r(C, I)) for _ in range(self.L)]
        self.norm = torch.ones(C, dtype=dtype)
        P = c["max_position_embeddings"]
        inv = 1.0 / (c.get("rope_theta", 10000.0) ** (torch.arange(0, self.D, 2).double() / self.D))
        ang = torch.arange(P).double()[:, None] * inv[None, :]
        emb = torch.cat([ang, ang], dim=-1)
        self.cos, self.sin = emb.cos().to(dtype), emb.sin().to(dtype)
        self.cache = [None] * self.L

    def rms(self, x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def rope(self, t, pos, T):
        cos, sin = self.cos[pos:pos + T], self.sin[pos:pos + T]
        half = self.D // 2
        return t * cos + torch.cat([-t[..., half:], t[..., :half]], dim=-1) * sin

    def step(self, ids, pos):
        H, KV, D = self.H, self.KV, self.D
        T = ids.shape[0]
        x = self.embed[ids]
        for l, b in enumerate(self.blocks):
            n = self.rms(x, b["n1"])
            q = self.rope((n @ b["q"].T).view(T, H, D).transpose(0, 1), pos, T)
            k = self.rope((n @ b["k"].T).view(T, KV, D).transpose(0, 1), pos, T)
            v = (n @ b["v"].T).view(T, KV, D).transpose(0, 1)
            if self.cache[l] is not None:
                k = torch.cat([self.cache[l][0], k], dim=1)
                v = torch.cat([self.cache[l][1], v], dim=1)
            self.cache[l] = (k, v)
            y = attend(q, k.repeat_interleave(H // KV, 0), v.repeat_interleave(H // KV, 0), pos)
            x = x + y.transpose(0, 1).reshape(T, H * D) @ b["o"].T
            n = self.rms(x, b["n2"])
            x = x + (F.silu(n @ b["gate"].T) * (n @ b["up"].T)) @ b["down"].T
        return (self.rms(x[-1:], self.norm) @ self.head.T)[0]


def attend(q, k, v, pos):
    """q (H, T, D) at positions pos.., k, v (H, pos + T, D): causal softmax attention."""
    T, S = q.shape[1], k.shape[1]
    att = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if T > 1:
        mask = torch.ones(T, S, dtype=torch.bool).tril(diagonal=S - T)
        att = att.masked_fill(~mask, float("-inf"))
    return att.softmax(-1) @ v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    c = json.load(open(a.config))
    dtype = torch.float32 if a.dtype == "fp32" else torch.bfloat16
    model = (Gpt2 if c.get("model_type", "gpt2") == "gpt2" else Llama)(c, dtype)
    prompt = torch.randint(0, c["vocab_size"], (a.prompt,))
    with torch.inference_mode():
        t0 = time.perf_counter()
        logits = model.step(prompt, 0)
        t1 = time.perf_counter()
        pos = a.prompt
        for _ in range(a.new - 1):  # the last new token is not fed back, as in accel
            nxt = torch.argmax(logits).reshape(1)
            logits = model.step(nxt, pos)
            pos += 1
        t2 = time.perf_counter()
    print(json.dumps({"prefill_s": t1 - t0, "decode_s": t2 - t1,
                      "tokens_per_s": a.new / (t2 - t0), "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()

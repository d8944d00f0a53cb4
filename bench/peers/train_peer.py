"""The PyTorch peer of accel_bench_train and accel_bench_sharding: full GPT-2 training steps in
plain torch (eager nn.Module, nanoGPT layout: pre-LN blocks, hand-written causal attention, GELU
tanh MLP, lm_head tied to wte), random tokens, the benchmarks' shapes. A step is zero_grad,
forward, cross-entropy over B*T, backward (with DDP's gradient all-reduce over gloo), clipping at
1.0 and torch.optim.AdamW (lr 1e-4, betas .9/.999, weight decay 0.1 on matrices), then
loss.item(). bf16 is torch.autocast("cpu", torch.bfloat16) around forward and loss with fp32
masters, as accel's bf16 mixed precision keeps fp32 masters.

One rank with N threads, or R ranks (torch.multiprocessing.spawn, 1 thread each, DDP over gloo
on loopback; FSDP does not run on CPU in torch 1.13, so DDP is the peer of every strategy). A
step lasts as long as its slowest rank; tokens/s is R*B*T over the median step. Prints one JSON
line (--output text adds a readable line on stderr), with the BLAS that torch loaded: Debian's
python3-torch calls libblas.so.3, which is netlib's reference BLAS unless an optimised one
(OpenBLAS) is installed or put first on LD_LIBRARY_PATH.

/usr/bin/python3 bench/peers/train_peer.py --model small --dtype fp32 --threads 2
/usr/bin/python3 bench/peers/train_peer.py --model gpt2 --dtype bf16 --ranks 2 --batch 4 --seq 64
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

# name: (n_layer, n_head, n_embd, vocab_size, n_positions): bench/bench_models.cc's "small" and
# the engine's GPT-2 presets (engine/model/gpt2_config.cc).
MODELS = {
    "small": (4, 4, 256, 50257, 1024),
    "gpt2-tiny": (2, 4, 64, 256, 256),
    "gpt2-mini": (4, 4, 128, 256, 256),
    "gpt2": (12, 12, 768, 50257, 1024),
    "gpt2-medium": (24, 16, 1024, 50257, 1024),
}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="small", choices=sorted(MODELS))
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--batch", type=int, default=4, help="per rank")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5, help="timed steps (median reported)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    ap.add_argument("--ranks", type=int, default=1, help=">1: DDP over gloo, spawned processes")
    ap.add_argument("--port", type=int, default=29571)
    ap.add_argument("--output", default="json", choices=["json", "text"])
    return ap.parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    # Before torch loads: OpenMP and OpenBLAS size their pools at start-up. PASSIVE stops idle
    # OpenMP workers spinning against OpenBLAS's own threads (shared/reference/torch_peer.md:
    # 2 threads gave no speed-up without it).
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Block(nn.Module):
    def __init__(self, C, H, L):
        super().__init__()
        self.H = H
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.attn_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        for m in (self.attn_proj, self.mlp_proj):  # GPT-2's scaled init of residual projections
            nn.init.normal_(m.weight, std=0.02 / math.sqrt(2 * L))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(C // self.H)
        # Built per call: gloo cannot broadcast a bool buffer, which DDP would try at start-up.
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        y = att.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        x = x + self.attn_proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, L, H, C, V, P):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(P, C)
        self.blocks = nn.ModuleList(Block(C, H, L) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        for name, p in self.named_parameters():
            if p.dim() == 2 and "proj" not in name:
                nn.init.normal_(p, std=0.02)
            elif p.dim() == 1 and name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.T  # tied lm_head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.reshape(-1))


def loaded_blas():
    """The BLAS library this process mapped (torch loads it lazily with its first GEMM)."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "blas" in line.lower() and "/" in line}
    resolved = sorted({os.path.realpath(p) for p in paths})
    if not resolved:
        return "none mapped"
    main = [p for p in resolved if "openblas" in os.path.basename(p)] or [
        p for p in resolved if "libblas" in os.path.basename(p)] or resolved
    kind = "openblas" if "openblas" in main[0] else (
        "netlib reference" if "/blas/libblas" in main[0] else "other")
    return f"{kind} ({main[0]})"


def run_rank(rank, a, out_q):
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Gpt2(*MODELS[a.model])
    if a.ranks > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=rank,
                                world_size=a.ranks)
        model = nn.parallel.DistributedDataParallel(model)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    V = MODELS[a.model][3]
    gen = torch.Generator().manual_seed(1 + rank)
    times = []
    for step in range(a.warmup + a.steps):
        tokens = torch.randint(0, V, (a.batch, a.seq + 1), generator=gen)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
    if a.ranks > 1:
        import torch.distributed as dist
        t = torch.tensor(times, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # a step lasts as long as its slowest rank
        times = t.tolist()
        dist.destroy_process_group()
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        out_q.put((times, params, loaded_blas(), torch.get_num_threads()))


def main(a):
    if a.ranks > 1:
        import torch.multiprocessing as mp
        ctx = mp.get_context("spawn")
        q = ctx.SimpleQueue()
        mp.spawn(run_rank, args=(a, q), nprocs=a.ranks, join=True)
        times, params, blas, threads = q.get()
    else:
        import queue
        q = queue.SimpleQueue()
        run_rank(0, a, q)
        times, params, blas, threads = q.get()
    median = statistics.median(times)
    blas_info = [l.strip() for l in torch.__config__.show().splitlines() if "BLAS_INFO" in l]
    r = {"peer": "torch", "torch": torch.__version__, "blas": blas,
         "blas_info": blas_info[0].split(",")[0].split("=")[-1] if blas_info else "",
         "model": a.model, "params": params, "dtype": a.dtype, "ranks": a.ranks,
         "threads": threads, "batch": a.batch, "seq": a.seq, "steps": a.steps,
         "step_ms_median": median * 1e3, "step_ms_min": min(times) * 1e3,
         "tokens_per_s": a.ranks * a.batch * a.seq / median}
    print(json.dumps(r), flush=True)
    if a.output == "text":
        print(f"torch {a.model} {a.dtype} {a.ranks} rank(s) x {threads} thread(s): "
              f"{median * 1e3:.1f} ms/step, {r['tokens_per_s']:.1f} tok/s, BLAS {blas}",
              file=sys.stderr)


if __name__ == "__main__":
    main(ARGS)

"""accel against its PyTorch peer (train_peer.py) on one machine in one run, as a table.

Runs, for each model, in this order: accel_bench_train (1 rank x --threads threads, fp32 and
bf16; it also prints the CPU's model, key flags and the true FMA peak), then train_peer.py at
that setup; accel_bench_sharding (--ranks ranks x 1 thread, no_shard and full_shard, fp32 and
bf16), then train_peer.py with DDP over gloo, --ranks processes of 1 thread each. torch 1.13
cannot run FSDP on a CPU, so both accel strategies are compared with the DDP peer.

  bench/peers.sh [--models small] [--steps 3] [--peer-blas DIR] [--output text|json]
  bench/peers.sh --from-json saved.json      the table of an earlier --output json run

Columns: tok/s of each; accel/torch; accel bf16 over accel fp32 of the same setup; accel's
achieved GFLOP/s (6*N + attention per token, as accel_bench_train counts it) as a fraction of
the fp32 FMA peak of the threads in use (all of them at once).
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="small", help="comma list: small, gpt2, gpt2-mini")
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--threads", type=int, default=2, help="threads of the 1-rank setup")
    ap.add_argument("--ranks", type=int, default=2, help="ranks (1 thread each) of the DDP setup")
    ap.add_argument("--strategies", default="no_shard,full_shard")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3, help="timed steps, median reported")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--peer-steps", type=int, default=0, help="timed peer steps (0: --steps)")
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--python", default="/usr/bin/python3", help="the python that has torch")
    ap.add_argument("--peer-blas", default="",
                    help="a directory holding an optimised libblas.so.3 (e.g. OpenBLAS's), put "
                         "first on the peer's LD_LIBRARY_PATH")
    ap.add_argument("--skip-peer", action="store_true")
    ap.add_argument("--from-json", default="", help="print the table of a saved --output json run")
    ap.add_argument("--output", default="text", choices=["text", "json"])
    return ap.parse_args()


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_json(cmd, env=None):
    log("+ " + " ".join(cmd))
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, env=env, text=True).stdout
    return out


def accel_common(a, model):
    return ["--models", model, "--dtypes", a.dtypes, "--steps", str(a.steps), "--warmup",
            str(a.warmup), "--batch", str(a.batch), "--seq", str(a.seq), "--output", "json"]


def accel_train(a, model):
    return json.loads(run_json([os.path.join(a.build_dir, "bench", "accel_bench_train"),
                                "--threads", str(a.threads)] + accel_common(a, model)))


def accel_sharding(a, model):
    return json.loads(run_json([os.path.join(a.build_dir, "bench", "accel_bench_sharding"),
                                "--ranks", str(a.ranks), "--strategies", a.strategies]
                               + accel_common(a, model)))


def peer_run(a, model, dtype, ranks, threads, port):
    env = dict(os.environ)
    if a.peer_blas:
        env["LD_LIBRARY_PATH"] = a.peer_blas + (":" + env["LD_LIBRARY_PATH"]
                                                if env.get("LD_LIBRARY_PATH") else "")
    cmd = [a.python, os.path.join(ROOT, "bench", "peers", "train_peer.py"), "--model", model,
           "--dtype", dtype, "--ranks", str(ranks), "--threads", str(threads), "--batch",
           str(a.batch), "--seq", str(a.seq), "--steps", str(a.peer_steps or a.steps),
           "--warmup", str(a.warmup), "--port", str(port)]
    return json.loads(run_json(cmd, env).strip().splitlines()[-1])


def ratio(x, y):
    return x / y if x and y else None


def build_rows(a, model, train, shard, peers):
    """One row per (setup, dtype): accel and peer tokens/s and the ratios."""
    flops_per_token = {}  # dtype -> flops per token (the same count for every setup)
    rows = []
    for r in train["results"]:
        flops_per_token[r["dtype"]] = r["gflops"] * 1e9 / r["tokens_per_s"]
        rows.append({"model": model, "setup": f"1 rank x {a.threads} threads", "strategy": "-",
                     "dtype": r["dtype"], "accel_tok_s": r["tokens_per_s"],
                     "peer": ("single", 1, a.threads)})
    for r in shard:
        rows.append({"model": model, "setup": f"{a.ranks} ranks x 1 thread",
                     "strategy": r["strategy"], "dtype": r["dtype"],
                     "accel_tok_s": r["tokens_per_s"], "peer": ("ddp", a.ranks, 1)})
    peak = train["fma_peak"]
    for row in rows:
        cores = a.threads if row["peer"][0] == "single" else a.ranks
        peak_gflops = peak["per_core_gflops"] if cores == 1 else (
            peak["all_core_gflops"] if cores == peak["threads"] else None)
        p = peers.get((row["peer"], row["dtype"]))
        row["peer_tok_s"] = p["tokens_per_s"] if p else None
        row["peer_setup"] = "-" if not p else (
            f"1 x {p['threads']} thr" if p["ranks"] == 1 else f"DDP {p['ranks']} x 1 thr")
        row["accel_over_peer"] = ratio(row["accel_tok_s"], row["peer_tok_s"])
        fp32 = next((r for r in rows if r["dtype"] == "fp32" and r["setup"] == row["setup"]
                     and r["strategy"] == row["strategy"]), None)
        row["accel_bf16_over_fp32"] = (ratio(row["accel_tok_s"], fp32["accel_tok_s"])
                                       if row["dtype"] == "bf16" and fp32 else None)
        fpt = flops_per_token.get(row["dtype"]) or flops_per_token.get("fp32")
        row["accel_gflops"] = fpt * row["accel_tok_s"] / 1e9 if fpt else None
        row["accel_of_fp32_peak"] = ratio(row["accel_gflops"], peak_gflops)
        del row["peer"]
    return rows


def fmt(x, spec, suffix=""):
    return "-" if x is None else format(x, spec) + suffix


def print_text(machine, peer_info, rows):
    cpu, peak = machine["cpu"], machine["fma_peak"]
    print(f"cpu: {cpu['model_name']}, {cpu['logical_cpus']} logical CPUs")
    print(f"flags: {cpu['flags_line']}")
    print(f"fp32 FMA peak ({peak['isa']}, {peak['chains_per_thread']} chains/thread, best of "
          f"{peak['tries']}): {peak['per_core_gflops']:.1f} GFLOP/s on 1 core, "
          f"{peak['all_core_gflops']:.1f} on {peak['threads']} threads at once")
    if peer_info:
        print(f"peer: torch {peer_info['torch']}, BLAS {peer_info['blas']}")
        if peer_info["blas"].startswith("netlib"):
            print("note: the peer's fp32 GEMMs run on netlib's unoptimised reference BLAS; install "
                  "libopenblas0-pthread or pass --peer-blas DIR for a fair peer")
    head = ["model", "setup", "strategy", "dtype", "accel tok/s", "torch tok/s", "torch setup",
            "accel/torch", "accel bf16/fp32", "accel GFLOP/s", "of fp32 peak"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["model"], r["setup"], r["strategy"], r["dtype"], fmt(r["accel_tok_s"], ".0f"),
                 fmt(r["peer_tok_s"], ".1f"), r["peer_setup"],
                 fmt(r["accel_over_peer"], ".2f", "x"),
                 fmt(r["accel_bf16_over_fp32"], ".2f", "x"), fmt(r["accel_gflops"], ".0f"),
                 fmt(None if r["accel_of_fp32_peak"] is None else 100 * r["accel_of_fp32_peak"],
                     ".0f", "%")]
        print("| " + " | ".join(cells) + " |")


def main():
    a = parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            saved = json.load(f)
        print_text(saved["machine"], saved["peer"], saved["rows"])
        return
    dtypes = a.dtypes.split(",")
    machine, peer_info, rows, raw = None, None, [], []
    port = 29571
    for model in a.models.split(","):
        # Each accel setup is followed by its peer, so that a shared machine's load drifts as
        # little as possible between the two sides of a ratio.
        peers = {}
        for setup in (("single", 1, a.threads), ("ddp", a.ranks, 1)):
            if setup[0] == "single":
                train = accel_train(a, model)
            else:
                shard = accel_sharding(a, model)
            for dtype in dtypes if not a.skip_peer else []:
                port += 1
                p = peer_run(a, model, dtype, setup[1], setup[2], port)
                peers[(setup, dtype)] = p
                peer_info = {"torch": p["torch"], "blas": p["blas"]}
        machine = machine or {"cpu": train["cpu"], "fma_peak": train["fma_peak"]}
        rows += build_rows(a, model, train, shard, peers)
        raw.append({"model": model, "accel_train": train["results"], "accel_sharding": shard,
                    "peer": list(peers.values())})
    if a.output == "json":
        print(json.dumps({"machine": machine, "peer": peer_info, "rows": rows, "raw": raw},
                         indent=2))
    else:
        print_text(machine, peer_info, rows)


if __name__ == "__main__":
    main()

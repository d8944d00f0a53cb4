#!/usr/bin/env python3
"""Writes the committed seed corpora under fuzz/corpus/ (run from the repository root; needs
protoc for the RPC seeds). Seeds are small valid inputs of each format plus a few edge cases;
regression seeds found by fuzzing are added by hand beside them and are not touched here."""
import json
import os
import shutil
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def copy(target, paths):
    for p in paths:
        with open(os.path.join(ROOT, p), "rb") as f:
            put(target, os.path.basename(p), f.read())


# ---- safetensors ----------------------------------------------------------------------------
def safetensors(tensors, metadata=None, pad=True):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-(8 + len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + data


def seeds_safetensors():
    f32 = struct.pack("<6f", 1, -2, 3.5, 0, float("inf"), -0.0)
    put("safetensors", "f32_2x3", safetensors([("w", "F32", [2, 3], f32)], {"format": "pt"}))
    put("safetensors", "mixed", safetensors([
        ("a.bf16", "BF16", [2], b"\x80\x3f\x00\xc0"), ("b.f16", "F16", [1, 2], b"\x00\x3c\x00\xbc"),
        ("c.i64", "I64", [1], struct.pack("<q", -5)), ("d.bool", "BOOL", [3], b"\x01\x00\x01")]))
    put("safetensors", "empty_tensors", safetensors([("z", "F32", [0, 4], b""),
                                                     ("s", "F16", [], b"\x00\x3c")]))
    put("safetensors", "header_only", safetensors([], pad=False))
    whole = safetensors([("w", "F32", [2, 3], f32)])
    put("safetensors", "truncated", whole[:-5])
    overlap = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},' \
              b'"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
    put("safetensors", "overlap", struct.pack("<Q", len(overlap)) + overlap + b"\0" * 8)
    put("safetensors", "huge_header_len", struct.pack("<Q", 1 << 62) + b"{}")
    big = b'{"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}'
    put("safetensors", "overflow_shape", struct.pack("<Q", len(big)) + big + b"\0" * 4)


# ---- rank files (engine/checkpoint/rank_file.cc, docs/checkpoint_format.md) -------------------
def rank_file(step, rank, ranges, block_bytes=64):
    header_len = 40 + 40 * len(ranges)
    data_begin = 16 + header_len + 4
    data_bytes = sum(12 * (e - b) for b, e in ranges)
    h = b"ACCELRNK" + struct.pack("<II", 1, header_len)
    h += struct.pack("<qiIIIQQ", step, rank, len(ranges), block_bytes, 0, data_begin, data_bytes)
    cursor, data = data_begin, b""
    for b, e in ranges:
        sec = 4 * (e - b)
        h += struct.pack("<qqQQQ", b, e, cursor, cursor + sec, cursor + 2 * sec)
        cursor += 3 * sec
        for s in range(3):
            data += struct.pack("<%df" % (e - b), *[s + 0.25 * i for i in range(e - b)])
    h += struct.pack("<I", crc32c(h))
    crcs = [crc32c(data[i:i + block_bytes]) for i in range(0, len(data), block_bytes)]
    table = b"".join(struct.pack("<I", c) for c in crcs)
    tail = table + struct.pack("<II", crc32c(table, crc32c(h)), len(crcs)) + b"ACCELEND"
    return h + data + tail


def seeds_rank_file():
    one = rank_file(3, 0, [(0, 10)])
    two = rank_file(7, 1, [(10, 16), (20, 40)], block_bytes=128)
    empty = rank_file(0, 2, [(5, 5)])
    for prefix, tag in ((b"\x00", "raw"), (b"\x03", "repair")):
        put("rank_file", "one_range_" + tag, prefix + one)
        put("rank_file", "two_ranges_" + tag, prefix + two)
        put("rank_file", "empty_range_" + tag, prefix + empty)
    put("rank_file", "truncated_raw", b"\x00" + one[:-9])
    flipped = bytearray(one)
    flipped[100] ^= 0x10
    put("rank_file", "flipped_data_raw", b"\x00" + bytes(flipped))


# ---- checkpoint metadata (engine/checkpoint/checkpoint_metadata.cc) ---------------------------
def metadata(root):
    body = json.dumps(root, separators=(",", ":"), ensure_ascii=False)
    root = dict(root)
    root["checksum"] = "crc32c:%08x" % crc32c(body.encode())
    return json.dumps(root, indent=2, ensure_ascii=False)


def seeds_checkpoint_metadata():
    sharded = {
        "format": "accel-sharded-checkpoint", "format_version": 1, "step": 20,
        "data_position": 40, "optimizer_step": 20, "world_size": 2, "strategy": "full_shard",
        "model_config": {"n_layer": 1, "n_head": 2}, "train_config": {"lr": 0.001},
        "layout": {"dtype": "F32", "num_params": 12, "units": [[0, 8], [8, 4]],
                   "tensors": [{"name": "wte", "shape": [2, 4], "offset": 0, "numel": 8, "unit": 0},
                               {"name": "ln.w", "shape": [4], "offset": 8, "numel": 4, "unit": 1}]},
        "ranks": [{"rank": 0, "file": "rank_0.bin", "ranges": [[0, 6]], "bytes": 200,
                   "crc32c": "0a1b2c3d"},
                  {"rank": 1, "file": "rank_1.bin", "ranges": [[6, 12]], "bytes": 200,
                   "crc32c": "ffffffff"}]}
    full = dict(sharded, kind="full", world_size=1, ranks=[],
                model_files=[{"file": "model.safetensors", "dtype": "BF16", "bytes": 100,
                              "crc32c": "12345678"}],
                model_config="not json", loss_scaler={"scale": 65536})
    for name, root in (("sharded", sharded), ("full", full)):
        put("checkpoint_metadata", name + "_raw", b"\x00" + metadata(root).encode())
        put("checkpoint_metadata", name + "_fix", b"\x01" + json.dumps(root).encode())
    gap = dict(sharded, ranks=[dict(sharded["ranks"][0], ranges=[[0, 5]]), sharded["ranks"][1]])
    put("checkpoint_metadata", "gap_fix", b"\x01" + json.dumps(gap).encode())
    put("checkpoint_metadata", "bad_checksum_raw", b"\x00" + json.dumps(sharded).encode())
    put("checkpoint_metadata", "not_object_fix", b"\x01[1, 2]")


# ---- token shards (engine/data/token_source.h) -------------------------------------------------
# llm.c's two headers (dev/data/data_common.py): GPT-2 = magic 20240520, version 1, uint16
# tokens; Llama 3 = magic 20240801, version 7, uint32 tokens. The magic picks the token width;
# version defaults to the magic's own.
GPT2_MAGIC, LLAMA3_MAGIC = 20240520, 20240801


def shard(tokens, magic=GPT2_MAGIC, version=None, count=None):
    if version is None:
        version = 7 if magic == LLAMA3_MAGIC else 1
    header = struct.pack("<3i", magic, version, len(tokens) if count is None else count)
    fmt = "<%dI" if magic == LLAMA3_MAGIC else "<%dH"
    return header + b"\0" * (1024 - 12) + struct.pack(fmt % len(tokens), *tokens)


def seeds_token_shard():
    put("token_shard", "shard_small", shard([50256, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]))
    put("token_shard", "shard_one_token", shard([7]))
    put("token_shard", "shard_count_too_big", shard([1, 2, 3], count=4))
    put("token_shard", "shard_bad_version", shard([1, 2, 3], version=2))
    put("token_shard", "shard_negative_count", shard([], count=-1))
    put("token_shard", "text_short", "In the beginning God created the heaven and the earth.\n")
    put("token_shard", "text_binary", bytes(range(256)))
    put("token_shard", "magic_only", struct.pack("<i", 20240520))
    put("token_shard", "shard32_small", shard([128000, 9906, 1917, 0, 65536, 128255, 1, 2, 3],
                                              magic=LLAMA3_MAGIC))
    put("token_shard", "shard32_id_above_int32", shard([1, 2**31, 3], magic=LLAMA3_MAGIC))
    put("token_shard", "shard32_gpt2_version", shard([1, 2, 3], magic=LLAMA3_MAGIC, version=1))
    put("token_shard", "shard32_count_too_big", shard([1, 2, 3], magic=LLAMA3_MAGIC, count=4))
    put("token_shard", "magic32_only", struct.pack("<i", LLAMA3_MAGIC))


# ---- job files, configs ----------------------------------------------------------------------
def seeds_job_file():
    copy("job_file", ["configs/jobs/job_default.yaml"])
    put("job_file", "full_example.yaml", """name: tiny-fsdp
model: {preset: gpt2-tiny}
data: {path: data/train.bin, shuffle_seed: 7}
train: {steps: 50, micro_batch: 4, grad_accum: 1, seq_len: 64, lr: 3.0e-4, schedule: cosine,
        warmup: 5, weight_decay: 0.1, beta1: 0.9, beta2: 0.95, eps: 1.0e-8, grad_clip: 1.0,
        seed: 1, log_every: 1, max_nonfinite_steps: 5}
checkpoint: {dir: ckpt/, every_n_steps: 20, keep_last: 2}
resources: {num_processes: 2, device: cpu, threads_per_process: 1}
sharding: {strategy: hybrid_shard, hybrid_group_size: 2, forward_prefetch: true,
           backward_prefetch: backward_post, reshard_after_forward: false,
           sync_module_states: true}
max_restarts: 3
priority: -4
comm_timeout_s: 30.5
heartbeat_timeout_s: 10
stop_grace_s: 2
""")
    put("job_file", "minimal.yaml", "data: {path: /d.txt}\nmodel: gpt2-tiny\n")
    put("job_file", "block_style.yaml", "model:\n  config: cfg/config.json\n  init_weights: "
        "w.safetensors\ndata:\n  path: t.txt\ntrain:\n  steps: 3\n  lr: .5\n")
    put("job_file", "bad_types.yaml", "data: {path: [a]}\ntrain: {steps: 4294967297, lr: .inf}\n"
        "resources: {num_processes: 4294967297}\nunknown_key: 1\n")
    put("job_file", "anchors.yaml", "x: &a {path: /d}\ndata: *a\n? [complex]\n: key\n")
    put("job_file", "nested.yaml", "data: " + "[" * 200 + "]" * 200 + "\n")
    put("job_file", "configs.yaml", "data: {path: /d}\naccelerate_config: /nonexistent/a.yaml\n"
        "deepspeed_config: ds.json\n")


def seeds_configs():
    copy("accelerate_yaml", ["configs/fsdp_full_shard.yaml", "configs/fsdp_hybrid.yaml",
                             "configs/fsdp_offload.yaml", "configs/ds_zero3_offload.yaml",
                             "configs/ds_zero3_nvme.yaml", "configs/multi_node.yaml",
                             "tests/config/trl_fsdp2.yaml", "tests/config/accelerate_tp_hsdp.yaml",
                             "tests/config/accelerate_sagemaker.yaml", "tests/config/0_11_0.yaml",
                             "tests/config/invalid_keys.yaml"])
    put("accelerate_yaml", "alias_bomb.yaml",
        "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n")
    put("accelerate_yaml", "huge_processes.yaml",
        "distributed_type: FSDP\nnum_processes: 2147483647\nfsdp_config: {fsdp_version: 2}\n")
    copy("deepspeed_json", ["configs/ds_zero3_nvme.json", "tests/config/ds_config_zero2.json",
                            "tests/config/ds_config_zero3.json",
                            "tests/config/scenario3_all_auto.json",
                            "tests/config/zero_stage3_offload_config.json",
                            "tests/config/ds_zero2_duplicate_stage.json",
                            "tests/config/ds_squad_adam_no_bias_correction.json"])
    put("deepspeed_json", "deep.json", "[" * 100 + "]" * 100)
    put("deepspeed_json", "numbers.json",
        '{"train_batch_size": 1e400, "gradient_accumulation_steps": -9223372036854775808,'
        ' "zero_optimization": {"stage": 18446744073709551615}}')


# ---- RPC requests (encoded with protoc) ---------------------------------------------------------
def encode(message, text):
    out = subprocess.run(["protoc", "--encode=accel.v1." + message, "-I", "proto",
                          "accel/v1/coordinator.proto", "accel/v1/worker.proto"],
                         input=text.encode(), capture_output=True, check=True, cwd=ROOT)
    return out.stdout


def seeds_rpc():
    spec = """spec { name: "job" model { preset: "gpt2-tiny" } data { path: "/tmp/d.txt" }
  train { steps: 10 micro_batch: 2 grad_accum: 1 seq_len: 16 lr: 0.001 schedule: "cosine"
          beta1: 0.9 beta2: 0.999 eps: 1e-8 grad_clip: 1 log_every: 1 }
  resources { device: "cpu" threads_per_process: 1 %s }
  sharding { strategy: "%s" backward_prefetch: "backward_pre" hybrid_group_size: %d }
  comm_timeout_s: 60 %s }"""
    put("rpc_request", "submit_default", b"\x00" + encode("SubmitJobRequest",
                                                         spec % ("", "no_shard", 0, "")))
    put("rpc_request", "submit_hybrid", b"\x00" + encode("SubmitJobRequest", spec % (
        "num_processes: 4", "hybrid_shard", 2, "")))
    put("rpc_request", "submit_with_config", b"\x00" + encode("SubmitJobRequest", spec % (
        "", "full_shard", 0,
        'accelerate_config_text: "distributed_type: FSDP\\nnum_processes: 2\\nfsdp_config:'
        ' {fsdp_sharding_strategy: FULL_SHARD}\\n"')))
    put("rpc_request", "submit_empty", b"\x00")
    put("rpc_request", "job_id", b"\x01" + encode("WatchJobRequest", 'job_id: "job-12"'))
    put("rpc_request", "job_id_long", b"\x01" + encode("WatchJobRequest",
                                                      'job_id: "%s"' % ("x" * 129)))
    put("rpc_request", "event_metrics", b"\x02" + encode(
        "WorkerEvent", "rank: 1 metrics { step: 3 loss: nan lr: inf grad_norm: -inf }"))
    put("rpc_request", "event_checkpoint", b"\x02" + encode(
        "WorkerEvent", 'checkpoint { step: 5 path: "/c/step_5" kind: "sharded" bytes: 99 '
                       'rank_bytes: [1, 2] }'))
    put("rpc_request", "event_log", b"\x02" + encode(
        "WorkerEvent", 'log { stream: "stderr" line: "\\001\\033[31m" }'))


# ---- token and PEM files (rpc/credential_files.h) ---------------------------------------------
def seeds_token_file():
    put("token_file", "acceld_made", "0123456789abcdef" * 4 + "\n")
    put("token_file", "spaced_crlf", "  s3cret-Token_1 \r\n")
    put("token_file", "newline_inside", "abc\ndef\n")
    put("token_file", "two_words", "two words\n")
    put("token_file", "non_ascii", "s\u00e9cret\n")
    put("token_file", "nul_inside", b"ab\x00cd\n")
    put("token_file", "empty", "")
    put("token_file", "whitespace_only", " \t\n")
    put("token_file", "longest", "x" * 4096 + "\n")
    put("token_file", "one_too_long", "x" * 4097)
    put("token_file", "over_file_cap", "y" * 8193)
    put("token_file", "certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    put("token_file", "private_key", "-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n")

def seeds_http():
    put("http_request", "get_events", b"GET /api/v1/jobs/job-1/events?after=3&limit=2 HTTP/1.1\r\n"
        b"Host: 127.0.0.1:9090\r\nAuthorization: Bearer s3cret\r\nCookie: a=1; accel_token=t\r\n\r\n")
    put("http_request", "login", b"GET /?token=a%2Bb+c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    put("http_request", "post_body", b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
    put("http_request", "bare_lf", b"HEAD /healthz HTTP/1.1\nConnection: close\n\n")
    put("http_request", "bad_percent", b"GET /api/v1/jobs/job-%ff HTTP/1.1\r\n\r\n")
    put("http_request", "utf8_path", b"GET /jobs/%C3%A9t%C3%A9 HTTP/1.1\r\n\r\n")
    put("http_request", "chunked", b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    put("http_request", "two_lengths", b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
    put("http_request", "too_large", b"GET / HTTP/1.1\r\nContent-Length: 400000000\r\n\r\n")
    put("http_request", "folded", b"GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n")
    put("http_request", "long_line", b"GET /" + b"a" * 3000 + b" HTTP/1.1\r\n\r\n")
    put("http_request", "http2", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")


if __name__ == "__main__":
    seeds_safetensors()
    seeds_rank_file()
    seeds_checkpoint_metadata()
    seeds_token_shard()
    seeds_job_file()
    seeds_configs()
    seeds_rpc()
    seeds_token_file()
    seeds_http()

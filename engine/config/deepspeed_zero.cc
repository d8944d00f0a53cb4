// zero_optimization (with offload_param / offload_optimizer) and aio of a DeepSpeed JSON.
#include "absl/strings/str_cat.h"
#include "engine/config/deepspeed_json.h"
#include "engine/config/values.h"

namespace accel::config {
namespace {

using nlohmann::json;

const std::string kZero = "zero_optimization";

KeyPath Z(const char* key) { return {kZero, key}; }

// DeepSpeed accepts both spellings of these (pydantic aliases); giving both is ambiguous.
// Returns the path of whichever is present.
std::optional<KeyPath> Aliased(Reader& r, const char* name, const char* alias) {
  const bool a = r.Find(Z(name)) != nullptr || r.IsAuto(Z(name));
  const bool b = r.Find(Z(alias)) != nullptr || r.IsAuto(Z(alias));
  if (a && b) {
    r.Error(Z(alias), absl::StrCat("given together with ", name, " (the same setting)"));
    return std::nullopt;
  }
  if (a) return Z(name);
  if (b) return Z(alias);
  return std::nullopt;
}

Autoable<int64_t> AutoCount(Reader& r, const std::optional<KeyPath>& path) {
  if (!path) return {};
  return ReadAutoable<int64_t>(r.IsAuto(*path), r.Has(*path), [&] { return r.Int(*path, 0); });
}

void ReadOffload(Reader& r, const char* section, bool param, DsOffload* out) {
  const KeyPath base = Z(section);
  if (r.Object(base) == nullptr) return;
  out->present = true;
  std::vector<std::string_view> known = {"device", "nvme_path", "pin_memory", "buffer_count"};
  if (param) {
    known.insert(known.end(), {"buffer_size", "max_in_cpu"});
  } else {
    known.insert(known.end(), {"pipeline_read", "pipeline_write", "fast_init", "ratio",
                               "super_offload", "cpuadam_cores_perc", "pipeline"});
  }
  r.CheckKeys(base, known);
  auto key = [&](const char* k) { return KeyPath{kZero, section, k}; };
  out->device = ReadAutoable<OffloadDevice>(r.IsAuto(key("device")), r.Has(key("device")), [&] {
    return r.Enum(key("device"), OffloadDeviceNames());
  });
  out->nvme_path = ReadAutoable<std::string>(r.IsAuto(key("nvme_path")), r.Has(key("nvme_path")),
                                             [&] { return r.String(key("nvme_path")); });
  out->pin_memory = r.Bool(key("pin_memory"));
  out->buffer_count = r.Int(key("buffer_count"), 1, 1024);
  // The swap-buffer knobs size DeepSpeed's pools; here the update streams offloaded state tile
  // by tile through two staging sets (docs/sharding.md, "NVMe offload"), so each is named with
  // what holds. pin_memory locks those staging buffers under NVMe offload.
  const bool nvme = out->device.has_value() && out->device.value == OffloadDevice::kNvme;
  if (out->pin_memory.value_or(false) && !nvme) {
    r.Warn(key("pin_memory"), "no pinned pool here: offloaded state lives in host memory, and "
                              "CPU ranks compute in host memory already");
  }
  if (out->buffer_count) {
    r.Warn(key("buffer_count"), "no swap-buffer pool here: the update streams through two "
                                "staging sets of one tile (sub_group_size elements, at most 1M)");
  }
  if (param) {
    out->buffer_size = r.Int(key("buffer_size"), 1);
    out->max_in_cpu = r.Int(key("max_in_cpu"), 0);
    if (out->buffer_size) {
      r.Warn(key("buffer_size"), "no parameter swap buffers here: each unit's shard is read "
                                 "from its file when its all-gather is issued");
    }
    if (out->max_in_cpu.value_or(0) > 0) {
      r.Warn(key("max_in_cpu"), "every parameter shard goes to the files (as max_in_cpu: 0); "
                                "none is kept in host memory");
    }
    return;
  }
  for (const char* k : {"pipeline_read", "pipeline_write", "fast_init", "pipeline"}) {
    r.Bool(key(k));
  }
  r.Number(key("cpuadam_cores_perc"), 0.0, 1.0);
  if (auto ratio = r.Number(key("ratio"), 0.0, 1.0); ratio && *ratio < 1.0) {
    r.Error(key("ratio"), "partial optimizer offload (ratio < 1) is not supported by this engine");
  }
  if (r.Bool(key("super_offload")).value_or(false)) {
    r.Error(key("super_offload"), "is not supported by this engine");
  }
}

void ReadLegacyOffload(Reader& r, DeepSpeedJson* out) {
  // cpu_offload / cpu_offload_param: DeepSpeed's old booleans for the offload sections.
  struct Legacy {
    const char* key;
    const char* section;
    DsOffload* target;
  };
  for (const Legacy& l : {Legacy{"cpu_offload", "offload_optimizer", &out->zero.offload_optimizer},
                          Legacy{"cpu_offload_param", "offload_param", &out->zero.offload_param}}) {
    auto on = r.Bool(Z(l.key));
    if (!on.has_value()) continue;
    if (l.target->present) {
      r.Warn(Z(l.key), absl::StrCat("legacy key ignored: ", l.section, " is also given"));
    } else if (*on) {
      l.target->present = true;
      l.target->device = Autoable<OffloadDevice>::Of(OffloadDevice::kCpu);
      r.Warn(Z(l.key), absl::StrCat("legacy key; read as ", l.section, ".device: cpu"));
    }
  }
  r.Bool(Z("cpu_offload_use_pin_memory"));
}

void ReadUnsupportedZero(Reader& r) {
  if (auto hpz = r.Int(Z("zero_hpz_partition_size"), 1); hpz && *hpz > 1) {
    r.Error(Z("zero_hpz_partition_size"),
            "ZeRO++ hierarchical partitioning is not supported by this engine (use FSDP "
            "HYBRID_SHARD for node-local sharding)");
  }
  for (const char* k : {"zero_quantized_weights", "zero_quantized_nontrainable_weights",
                        "zero_quantized_gradients"}) {
    if (r.Bool(Z(k)).value_or(false)) r.Error(Z(k), "ZeRO++ quantisation is not supported");
  }
  if (auto mics = r.Int(Z("mics_shard_size")); mics && *mics > 0) {
    r.Error(Z("mics_shard_size"), "MiCS is not supported by this engine");
  }
  for (const char* k : {"reduce_scatter", "allgather_partitions", "load_from_fp32_weights",
                        "elastic_checkpoint", "ignore_unused_parameters", "round_robin_gradients",
                        "use_multi_rank_bucket_allreduce", "mics_hierarchical_params_gather",
                        "memory_efficient_linear", "pipeline_loading_checkpoint",
                        "override_module_apply", "stage3_use_all_reduce_for_fetch_params",
                        "stage3_allgather_sequential", "log_trace_cache_warnings"}) {
    r.Bool(Z(k));
  }
  for (const char* k : {"stage3_model_persistence_threshold", "model_persistence_threshold",
                        "stage3_module_granularity_threshold"}) {
    r.Int(Z(k), 0);
  }
}

}  // namespace

void ReadAioSection(Reader& r, const KeyPath& path, DsAio* out) {
  r.CheckKeys(path, {"block_size", "queue_depth", "intra_op_parallelism", "thread_count",
                     "single_submit", "overlap_events", "use_gds"});
  auto key = [&](const char* k) {
    KeyPath p = path;
    p.push_back(k);
    return p;
  };
  out->block_size = r.Int(key("block_size"), 4096, int64_t{1} << 30);
  out->queue_depth = r.Int(key("queue_depth"), 1, 4096);
  out->intra_op_parallelism = r.Int(key("intra_op_parallelism"), 1, 1024);
  if (r.Has(key("thread_count"))) {
    auto threads = r.Int(key("thread_count"), 1, 1024);
    if (threads && out->intra_op_parallelism) {
      r.Warn(key("thread_count"), "legacy key ignored: intra_op_parallelism is also given");
    } else if (threads) {
      out->intra_op_parallelism = threads;
      r.Warn(key("thread_count"),
             absl::StrCat("legacy key; read as intra_op_parallelism: ", *threads,
                          " (DeepSpeed renamed it and now ignores thread_count)"));
    }
  }
  out->single_submit = r.Bool(key("single_submit"));
  out->overlap_events = r.Bool(key("overlap_events"));
  if (r.Bool(key("use_gds")).value_or(false)) {
    r.Error(key("use_gds"), "GPUDirect Storage is not supported by this engine");
  }
  // block_size, queue_depth, single_submit and overlap_events drive the transfers of NVMe
  // offload (io::AsyncIo); only the number of submitting threads differs.
  for (const char* k : {"intra_op_parallelism", "thread_count"}) {
    if (r.Has(key(k))) {
      r.Warn(key(k), "one thread per rank submits the transfers; up to queue_depth of them run "
                     "at once");
    }
  }
}

void ReadZeroSection(Reader& r, DeepSpeedJson* out) {
  const KeyPath base = {kZero};
  if (r.Object(base) == nullptr) return;
  DsZero& z = out->zero;
  z.present = true;
  r.CheckKeys(base, {
      "stage", "offload_param", "offload_optimizer", "overlap_comm", "contiguous_gradients",
      "reduce_bucket_size", "allgather_bucket_size", "reduce_scatter", "allgather_partitions",
      "stage3_prefetch_bucket_size", "prefetch_bucket_size",
      "stage3_param_persistence_threshold", "param_persistence_threshold",
      "stage3_model_persistence_threshold", "model_persistence_threshold",
      "stage3_max_live_parameters", "max_live_parameters", "stage3_max_reuse_distance",
      "max_reuse_distance", "stage3_gather_16bit_weights_on_model_save",
      "gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save",
      "sub_group_size", "load_from_fp32_weights", "elastic_checkpoint",
      "ignore_unused_parameters", "round_robin_gradients", "use_multi_rank_bucket_allreduce",
      "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_nontrainable_weights",
      "zero_quantized_gradients", "mics_shard_size", "mics_hierarchical_params_gather",
      "memory_efficient_linear", "pipeline_loading_checkpoint", "override_module_apply",
      "stage3_module_granularity_threshold", "stage3_use_all_reduce_for_fetch_params",
      "stage3_allgather_sequential", "log_trace_cache_warnings", "cpu_offload",
      "cpu_offload_param", "cpu_offload_use_pin_memory", "aio"});
  z.stage = ReadAutoable<int64_t>(r.IsAuto(Z("stage")), r.Has(Z("stage")),
                                  [&] { return r.Int(Z("stage"), 0, 3); });
  ReadOffload(r, "offload_param", true, &z.offload_param);
  ReadOffload(r, "offload_optimizer", false, &z.offload_optimizer);
  ReadLegacyOffload(r, out);
  z.overlap_comm = r.Bool(Z("overlap_comm"));
  z.contiguous_gradients = r.Bool(Z("contiguous_gradients"));
  z.reduce_bucket_size = AutoCount(r, Z("reduce_bucket_size"));
  z.allgather_bucket_size = r.Int(Z("allgather_bucket_size"), 1);
  z.stage3_prefetch_bucket_size =
      AutoCount(r, Aliased(r, "stage3_prefetch_bucket_size", "prefetch_bucket_size"));
  z.stage3_param_persistence_threshold = AutoCount(
      r, Aliased(r, "stage3_param_persistence_threshold", "param_persistence_threshold"));
  if (auto p = Aliased(r, "stage3_max_live_parameters", "max_live_parameters")) {
    z.stage3_max_live_parameters = r.Int(*p, 0);
  }
  if (auto p = Aliased(r, "stage3_max_reuse_distance", "max_reuse_distance")) {
    z.stage3_max_reuse_distance = r.Int(*p, 0);
  }
  // DeepSpeed declares it ge=0; 0 makes every tensor its own sub-group there. Here it bounds
  // the tile the offloaded update streams in (0: the default tile), which sets memory, not bits.
  z.sub_group_size = r.Int(Z("sub_group_size"), 0);

  std::optional<KeyPath> gather = Aliased(r, "stage3_gather_16bit_weights_on_model_save",
                                          "gather_16bit_weights_on_model_save");
  if (r.Has(Z("stage3_gather_fp16_weights_on_model_save")) ||
      r.IsAuto(Z("stage3_gather_fp16_weights_on_model_save"))) {
    if (gather) {
      r.Warn(Z("stage3_gather_fp16_weights_on_model_save"),
             "legacy key ignored: stage3_gather_16bit_weights_on_model_save is also given");
    } else {
      gather = Z("stage3_gather_fp16_weights_on_model_save");
      r.Warn(*gather, "legacy key; read as stage3_gather_16bit_weights_on_model_save");
    }
  }
  if (gather) {
    z.stage3_gather_16bit_weights_on_model_save = ReadAutoable<bool>(
        r.IsAuto(*gather), r.Has(*gather), [&] { return r.Bool(*gather); });
  }
  ReadUnsupportedZero(r);
  if (r.Object(Z("aio")) != nullptr) {
    if (r.Has({"aio"})) {
      r.Error(Z("aio"), "aio is given both here and at the top level");
    } else {
      r.Warn(Z("aio"), "DeepSpeed reads aio at the top level; taken as the top-level aio section");
      ReadAioSection(r, Z("aio"), &out->aio);
    }
  }
}

}  // namespace accel::config

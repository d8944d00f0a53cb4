// Top level of the Accelerate YAML; fsdp_config and deepspeed_config are in
// accelerate_sections.cc.
#include "engine/config/accelerate_yaml.h"

#include "absl/strings/str_cat.h"
#include "engine/config/values.h"

namespace accel::config {
namespace {

using nlohmann::json;

const std::vector<EnumName<DistributedType>>& DistributedTypeNames() {
  static const auto* names = new std::vector<EnumName<DistributedType>>{
      {"NO", DistributedType::kNo},
      {"MULTI_CPU", DistributedType::kMultiCpu},
      {"MULTI_GPU", DistributedType::kMultiGpu},
      {"FSDP", DistributedType::kFsdp},
      {"DEEPSPEED", DistributedType::kDeepSpeed},
  };
  return *names;
}

// Accelerate backends this engine does not implement: named, so the error says "not supported"
// rather than "unknown".
constexpr std::string_view kUnsupportedTypes[] = {
    "MULTI_XPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA",
    "MULTI_HPU", "MULTI_NEURON", "XLA", "TPU", "MEGATRON_LM", "TP"};

void ReadDistributedType(Reader& r, AccelerateConfig* out) {
  const KeyPath path = {"distributed_type"};
  const json* v = r.Find(path);
  if (v == nullptr) {
    r.diagnostics()->Error(r.doc().source, "distributed_type",
                           "A distributed_type must be specified in the config file "
                           "(one of NO, MULTI_CPU, MULTI_GPU, FSDP, DEEPSPEED)");
    return;
  }
  if (v->is_boolean() && !v->get<bool>()) {  // unquoted NO is YAML 1.1 false
    out->distributed_type = DistributedType::kNo;
    return;
  }
  if (v->is_string()) {
    for (std::string_view name : kUnsupportedTypes) {
      if (EqualsIgnoreCase(name, v->get_ref<const std::string&>())) {
        r.Error(path, absl::StrCat(r.Show(*v),
                                   " is not supported by this engine (supported: NO, "
                                   "MULTI_CPU, MULTI_GPU, FSDP, DEEPSPEED)"));
        return;
      }
    }
  }
  out->distributed_type = r.Enum(path, DistributedTypeNames());
}

void ReadMixedPrecision(Reader& r, AccelerateConfig* out) {
  const KeyPath path = {"mixed_precision"};
  const json* v = r.Find(path);
  const json* legacy = r.Find({"fp16"});
  if (legacy != nullptr) {
    auto fp16 = r.Bool({"fp16"});
    if (fp16.has_value() && v == nullptr) {
      out->mixed_precision = *fp16 ? PrecisionMode::kFp16 : PrecisionMode::kNo;
      out->mixed_precision_given = true;
      r.Warn({"fp16"}, absl::StrCat("legacy key; read as mixed_precision: ",
                                    *fp16 ? "fp16" : "no"));
    } else if (fp16.has_value()) {
      r.Warn({"fp16"}, "legacy key ignored: mixed_precision is also given");
    }
  }
  if (v == nullptr) return;
  out->mixed_precision_given = true;
  if (v->is_boolean() && !v->get<bool>()) {  // unquoted no
    out->mixed_precision = PrecisionMode::kNo;
    return;
  }
  if (v->is_string() && EqualsIgnoreCase(v->get_ref<const std::string&>(), "fp8")) {
    r.Error(path, "\"fp8\" is not supported by this engine (use bf16)");
    return;
  }
  static const std::vector<EnumName<PrecisionMode>> kNames = {
      {"no", PrecisionMode::kNo}, {"fp16", PrecisionMode::kFp16}, {"bf16", PrecisionMode::kBf16}};
  out->mixed_precision = r.Enum(path, kNames);
}

std::optional<int> ToInt(std::optional<int64_t> v) {
  if (!v.has_value()) return std::nullopt;
  return static_cast<int>(*v);
}

void ReadParallelism(Reader& r, ParallelismSection* out) {
  const KeyPath base = {"parallelism_config"};
  const json* obj = r.Object(base);
  if (obj == nullptr || obj->empty()) return;
  auto size = [&](const char* key) {
    return ToInt(r.Int({"parallelism_config", key}, 1, 1 << 20));
  };
  // Sequence parallelism (TRL's Ulysses sp_* keys, FSDP2 context parallelism cp_*) splits each
  // sequence over ranks. One line says so; the rest of the section (sizes that no longer add up,
  // the FSDP2 requirement, sp_* keys) would only be consequences of it.
  const std::optional<int> sp = size("parallelism_config_sp_size");
  const std::optional<int> cp = size("parallelism_config_cp_size");
  for (const auto& [key, n] : {std::pair{"parallelism_config_sp_size", sp},
                               std::pair{"parallelism_config_cp_size", cp}}) {
    if (n.value_or(1) > 1) {
      r.Error({"parallelism_config", key},
              absl::StrCat(*n, ": sequence parallelism is not supported by this engine"));
      return;
    }
  }
  out->present = true;
  r.CheckKeys(base, {"parallelism_config_dp_replicate_size", "parallelism_config_dp_shard_size",
                     "parallelism_config_tp_size", "parallelism_config_cp_size",
                     "parallelism_config_cp_comm_strategy", "parallelism_config_cp_backend",
                     "parallelism_config_sp_size", "parallelism_config_sp_backend",
                     "parallelism_config_sp_seq_length_is_variable",
                     "parallelism_config_sp_attn_implementation"});
  out->dp_replicate_size = size("parallelism_config_dp_replicate_size");
  out->dp_shard_size = size("parallelism_config_dp_shard_size");
  out->tp_size = size("parallelism_config_tp_size");
  out->cp_size = cp;
  for (const char* key : {"parallelism_config_cp_comm_strategy", "parallelism_config_cp_backend",
                          "parallelism_config_sp_backend",
                          "parallelism_config_sp_attn_implementation"}) {
    r.String({"parallelism_config", key});
  }
  r.Bool({"parallelism_config", "parallelism_config_sp_seq_length_is_variable"});
}

// mpirun_config (MULTI_CPU launched through mpirun with a hostfile): accepted, so that the
// file's training settings still apply, and warned, since the workers here are started by this
// engine (one per process of num_processes), never by mpirun.
void ReadMpirun(Reader& r) {
  const KeyPath base = {"mpirun_config"};
  const json* obj = r.Object(base);
  if (obj == nullptr || obj->empty()) return;
  r.CheckKeys(base, {"mpirun_hostfile", "mpirun_ccl"});
  auto hostfile = r.String({"mpirun_config", "mpirun_hostfile"});
  r.Int({"mpirun_config", "mpirun_ccl"}, 0, 1 << 16);
  r.Warn(base, absl::StrCat("ignored: this engine launches its own processes, so mpirun "
                            "settings (mpirun_hostfile",
                            hostfile ? absl::StrCat(" ", *hostfile) : "",
                            ", mpirun_ccl) do nothing here"));
}

void ReadIgnoredSections(Reader& r) {
  // Accepted so that generated files load; they carry nothing this engine uses.
  if (const json* dynamo = r.Object({"dynamo_config"}); dynamo != nullptr && !dynamo->empty()) {
    r.CheckKeys({"dynamo_config"}, {"dynamo_backend", "dynamo_mode", "dynamo_use_fullgraph",
                                    "dynamo_use_dynamic", "dynamo_use_regional_compilation"});
    auto backend = r.String({"dynamo_config", "dynamo_backend"});
    if (backend.has_value() && !EqualsIgnoreCase(*backend, "no")) {
      r.Warn({"dynamo_config", "dynamo_backend"},
             "torch.compile settings do not apply to this engine; ignored");
    }
  }
  if (r.Has({"dynamo_backend"})) {
    auto backend = r.String({"dynamo_backend"});
    if (backend.has_value() && !EqualsIgnoreCase(*backend, "no")) {
      r.Warn({"dynamo_backend"},
             "legacy key (now dynamo_config.dynamo_backend); torch.compile does not apply to "
             "this engine; ignored");
    }
  }
  for (const char* key : {"fp8_config", "megatron_lm_config"}) {
    const json* obj = r.Object({key});
    if (obj != nullptr && !obj->empty()) {
      r.Error({key}, "is not supported by this engine (remove it, or leave it empty)");
    }
  }
  r.Object({"ipex_config"});
  ReadMpirun(r);
  for (const char* key : {"debug", "enable_cpu_affinity", "tpu_use_cluster", "tpu_use_sudo"}) {
    r.Bool({key});
  }
  if (r.Has({"downcast_bf16"})) r.Bool({"downcast_bf16"});  // 'no' / 'yes' / bool
  auto env = r.String({"compute_environment"});
  if (env.has_value() && !EqualsIgnoreCase(*env, "LOCAL_MACHINE")) {
    r.Error({"compute_environment"},
            absl::StrCat(r.Show(*env), " is not one of LOCAL_MACHINE, AMAZON_SAGEMAKER"));
  }
}

// A SageMaker config describes a SageMaker training job (instance type, IAM role, region,
// estimator arguments), not a training setup: one error says so, instead of a list of its
// unknown keys or repeated additional_args blocks.
bool IsSageMaker(Reader& r) {
  const json* env = r.Find({"compute_environment"});
  if (env == nullptr || !env->is_string() ||
      !EqualsIgnoreCase(env->get_ref<const std::string&>(), "AMAZON_SAGEMAKER")) {
    return false;
  }
  r.Error({"compute_environment"},
          "\"AMAZON_SAGEMAKER\" is not supported by this engine: it does not launch SageMaker "
          "training jobs; use a LOCAL_MACHINE config (accelerate config, \"This machine\")");
  return true;
}

}  // namespace

const std::vector<std::string_view>& AccelerateTopLevelKeys() {
  static const auto* keys = new std::vector<std::string_view>{
      "compute_environment", "distributed_type", "mixed_precision", "use_cpu", "debug",
      "num_processes", "machine_rank", "num_machines", "gpu_ids", "main_process_ip",
      "main_process_port", "rdzv_backend", "same_network", "main_training_function",
      "enable_cpu_affinity", "downcast_bf16", "deepspeed_config", "fsdp_config",
      "parallelism_config", "megatron_lm_config", "fp8_config", "dynamo_config", "ipex_config",
      "mpirun_config", "tpu_name", "tpu_zone", "tpu_use_cluster", "tpu_use_sudo", "command_file",
      "commands", "tpu_vm", "tpu_env",
      // legacy
      "fp16", "dynamo_backend"};
  return *keys;
}

AccelerateConfig ReadAccelerateConfig(const Document& doc, Diagnostics* diag) {
  AccelerateConfig out;
  out.source = doc.source;
  Reader r(doc, diag);
  if (!doc.root.is_object()) {
    diag->Error(doc.source, "",
                doc.root.is_null() ? "the file is empty; expected a mapping of Accelerate keys"
                                   : "expected a mapping of Accelerate keys at the top level");
    return out;
  }
  if (IsSageMaker(r)) return out;
  diag->DuplicateKeys(doc);
  r.CheckKeys({}, AccelerateTopLevelKeys());
  ReadDistributedType(r, &out);
  ReadMixedPrecision(r, &out);

  if (auto n = r.Int({"num_processes"}, -1, 1 << 20); n.has_value()) {
    if (*n == 0) {
      r.Error({"num_processes"}, "must be at least 1 (or -1 for \"pass --num-processes\")");
    } else if (*n > 0) {
      out.num_processes = static_cast<int>(*n);
    }
  }
  out.num_machines = ToInt(r.Int({"num_machines"}, 1, 1 << 16));
  out.machine_rank = ToInt(r.Int({"machine_rank"}, 0, 1 << 16));
  out.main_process_ip = r.String({"main_process_ip"});
  out.main_process_port = ToInt(r.Int({"main_process_port"}, 0, 65535));
  out.rdzv_backend = r.String({"rdzv_backend"});
  if (out.rdzv_backend.has_value()) {
    static const std::vector<std::string_view> kBackends = {"static", "c10d", "etcd", "etcd-v2"};
    bool known = false;
    for (std::string_view b : kBackends) known = known || *out.rdzv_backend == b;
    if (!known) {
      r.Error({"rdzv_backend"},
              absl::StrCat(r.Show(*out.rdzv_backend), " is not one of ", JoinNames(kBackends),
                           r.Hint(*out.rdzv_backend, kBackends)));
    }
  }
  out.same_network = r.Bool({"same_network"});
  out.use_cpu = r.Bool({"use_cpu"});
  for (const char* key : {"main_training_function", "tpu_name", "tpu_zone", "command_file"}) {
    r.String({key});
  }
  ReadIgnoredSections(r);
  ReadParallelism(r, &out.parallelism);
  ReadFsdpSection(r, &out.fsdp);
  ReadDeepSpeedSection(r, &out.deepspeed);
  return out;
}

}  // namespace accel::config

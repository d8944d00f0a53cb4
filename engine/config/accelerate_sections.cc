// fsdp_config and deepspeed_config of the Accelerate YAML.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/config/accelerate_yaml.h"
#include "engine/config/batch_bounds.h"
#include "engine/config/values.h"

namespace accel::config {
namespace {

using nlohmann::json;

const KeyPath kFsdp = {"fsdp_config"};
const KeyPath kDs = {"deepspeed_config"};

KeyPath Fsdp(const std::string& key) { return {"fsdp_config", key}; }
KeyPath Ds(const std::string& key) { return {"deepspeed_config", key}; }

// Accelerate adds the fsdp_ prefix to nested keys that lack it; so do we. Returns the key as
// written in the file for each canonical name present.
std::map<std::string, std::string> CanonicalFsdpKeys(Reader& r, const json& obj) {
  std::map<std::string, std::string> written;  // canonical -> as written
  std::vector<std::string_view> known = FsdpConfigKeys();
  for (const auto& [key, value] : obj.items()) {
    std::string canonical = key.rfind("fsdp_", 0) == 0 ? key : "fsdp_" + key;
    bool found = false;
    for (std::string_view k : known) found = found || k == canonical;
    if (!found) {
      // Suggest against both spellings.
      std::string hint = r.Hint(key, known);
      if (hint.empty()) hint = r.Hint(canonical, known);
      r.UnknownKey(Fsdp(key), hint);
      continue;
    }
    if (written.count(canonical) > 0) {
      r.Error(Fsdp(key), absl::StrCat("given twice (also as ", written[canonical], ")"));
      continue;
    }
    written[canonical] = key;
  }
  return written;
}

std::vector<std::string> SplitClassList(Reader& r, const KeyPath& path) {
  const json* v = r.Find(path);
  std::vector<std::string> raw;
  if (v->is_array()) {
    for (const json& item : *v) {
      if (!item.is_string()) {
        r.Error(path, absl::StrCat("expected class names, got ", r.Show(item)));
        return {};
      }
      raw.push_back(item.get<std::string>());
    }
  } else if (auto s = r.String(path); s.has_value()) {
    raw = absl::StrSplit(*s, ',');
  } else {
    return {};
  }
  std::vector<std::string> names;
  bool stripped = false;
  for (const std::string& name : raw) {
    const size_t b = name.find_first_not_of(" \t");
    const size_t e = name.find_last_not_of(" \t");
    std::string trimmed = b == std::string::npos ? "" : name.substr(b, e - b + 1);
    stripped = stripped || trimmed != name;
    if (trimmed.empty()) {
      r.Error(path, "empty class name in the list");
      return {};
    }
    names.push_back(trimmed);
  }
  if (stripped) {
    std::string list;
    for (const std::string& n : names) absl::StrAppend(&list, list.empty() ? "" : ",", n);
    r.Warn(path, absl::StrCat("spaces around class names removed; read as ", r.Show(list),
                              " (Accelerate would look for the names with the spaces and "
                              "fail to find them)"));
  }
  return names;
}

}  // namespace

const std::vector<std::string_view>& FsdpConfigKeys() {
  static const auto* keys = new std::vector<std::string_view>{
      "fsdp_version", "fsdp_sharding_strategy", "fsdp_reshard_after_forward",
      "fsdp_offload_params", "fsdp_auto_wrap_policy", "fsdp_transformer_layer_cls_to_wrap",
      "fsdp_min_num_params", "fsdp_backward_prefetch", "fsdp_forward_prefetch",
      "fsdp_state_dict_type", "fsdp_use_orig_params", "fsdp_cpu_ram_efficient_loading",
      "fsdp_sync_module_states", "fsdp_activation_checkpointing", "fsdp_ignored_modules",
      // legacy
      "fsdp_backward_prefetch_policy"};
  return *keys;
}

const std::vector<std::string_view>& DeepSpeedConfigKeys() {
  static const auto* keys = new std::vector<std::string_view>{
      "zero_stage", "offload_optimizer_device", "offload_param_device",
      "offload_optimizer_nvme_path", "offload_param_nvme_path", "gradient_accumulation_steps",
      "gradient_clipping", "zero3_init_flag", "zero3_save_16bit_model", "deepspeed_config_file",
      "deepspeed_multinode_launcher", "deepspeed_hostfile", "deepspeed_exclusion_filter",
      "deepspeed_inclusion_filter", "deepspeed_moe_layer_cls_names"};
  return *keys;
}

void ReadFsdpSection(Reader& r, FsdpSection* out) {
  const json* obj = r.Object(kFsdp);
  if (obj == nullptr || obj->empty()) return;
  out->present = true;
  std::map<std::string, std::string> keys = CanonicalFsdpKeys(r, *obj);
  auto path = [&](const char* canonical) -> std::optional<KeyPath> {
    auto it = keys.find(canonical);
    if (it == keys.end()) return std::nullopt;
    return Fsdp(it->second);
  };
  auto boolean = [&](const char* canonical) -> std::optional<bool> {
    auto p = path(canonical);
    return p ? r.Bool(*p) : std::nullopt;
  };

  if (auto p = path("fsdp_version")) {
    auto v = r.Int(*p, 1, 2);
    if (v) out->version = static_cast<int>(*v);
  }
  if (auto p = path("fsdp_sharding_strategy")) out->sharding_strategy = r.Enum(*p, FsdpStrategyNames());
  if (auto p = path("fsdp_reshard_after_forward"); p && r.Has(*p)) {
    const json& v = *r.Find(*p);
    bool b = false;
    std::string ignored;
    if (ParseBoolValue(v, &b, &ignored) && !(v.is_number_integer() && v.get<int64_t>() == 1)) {
      out->reshard_after_forward = b;  // an integer 1 is FULL_SHARD's code, not true
    } else {
      out->reshard_after_forward_strategy = r.Enum(*p, FsdpStrategyNames());
    }
  }
  out->offload_params = boolean("fsdp_offload_params");
  if (auto p = path("fsdp_auto_wrap_policy")) out->auto_wrap_policy = r.Enum(*p, WrapPolicyNames());
  if (auto p = path("fsdp_transformer_layer_cls_to_wrap"); p && r.Has(*p)) {
    out->transformer_layer_cls_to_wrap = SplitClassList(r, *p);
  }
  if (auto p = path("fsdp_min_num_params")) out->min_num_params = r.Int(*p, 0);
  if (auto p = path("fsdp_backward_prefetch")) {
    out->backward_prefetch = r.Enum(*p, BackwardPrefetchNames());
  }
  if (auto p = path("fsdp_backward_prefetch_policy"); p && r.Has(*p)) {
    auto legacy = r.Enum(*p, BackwardPrefetchNames());
    if (legacy && out->backward_prefetch) {
      r.Warn(*p, "legacy key ignored: fsdp_backward_prefetch is also given");
    } else if (legacy) {
      out->backward_prefetch = legacy;
      r.Warn(*p, absl::StrCat(
                     "legacy key; read as fsdp_backward_prefetch: ",
                     r.Find(*p)->is_string() ? r.Find(*p)->get<std::string>() : r.Show(*r.Find(*p)),
                     " (Accelerate 1.x ignores this key and would not prefetch)"));
    }
  }
  out->forward_prefetch = boolean("fsdp_forward_prefetch");
  if (auto p = path("fsdp_state_dict_type")) out->state_dict_type = r.Enum(*p, StateDictTypeNames());
  out->use_orig_params = boolean("fsdp_use_orig_params");
  out->cpu_ram_efficient_loading = boolean("fsdp_cpu_ram_efficient_loading");
  out->sync_module_states = boolean("fsdp_sync_module_states");
  out->activation_checkpointing = boolean("fsdp_activation_checkpointing");
  if (auto p = path("fsdp_ignored_modules")) out->ignored_modules = r.String(*p);
}

void ReadDeepSpeedSection(Reader& r, DeepSpeedSection* out) {
  const json* obj = r.Object(kDs);
  if (obj == nullptr || obj->empty()) return;
  out->present = true;
  r.CheckKeys(kDs, DeepSpeedConfigKeys());
  for (const auto& [key, value] : obj->items()) {
    if (!value.is_null()) out->keys.insert(key);
  }
  if (auto v = r.Int(Ds("zero_stage"), 0, 3)) out->zero_stage = static_cast<int>(*v);
  out->offload_optimizer_device = r.Enum(Ds("offload_optimizer_device"), OffloadDeviceNames());
  out->offload_param_device = r.Enum(Ds("offload_param_device"), OffloadDeviceNames());
  out->offload_optimizer_nvme_path = r.String(Ds("offload_optimizer_nvme_path"));
  out->offload_param_nvme_path = r.String(Ds("offload_param_nvme_path"));
  // "auto" is what the plugin holds when nothing was set; read it as absent.
  if (!r.IsAuto(Ds("gradient_accumulation_steps"))) {
    out->gradient_accumulation_steps = r.Int(Ds("gradient_accumulation_steps"), 1, kMaxGradAccum);
  }
  if (!r.IsAuto(Ds("gradient_clipping"))) {
    out->gradient_clipping = r.Number(Ds("gradient_clipping"), 0.0);
  }
  out->zero3_init_flag = r.Bool(Ds("zero3_init_flag"));
  out->zero3_save_16bit_model = r.Bool(Ds("zero3_save_16bit_model"));
  out->deepspeed_config_file = r.String(Ds("deepspeed_config_file"));
  out->multinode_launcher = r.String(Ds("deepspeed_multinode_launcher"));
  if (out->multinode_launcher) {
    static const std::vector<std::string_view> kLaunchers = {
        "pdsh", "standard", "openmpi", "mvapich", "mpich", "nossh", "slurm"};
    bool known = false;
    for (std::string_view l : kLaunchers) known = known || *out->multinode_launcher == l;
    if (!known) {
      r.Error(Ds("deepspeed_multinode_launcher"),
              absl::StrCat(r.Show(*out->multinode_launcher), " is not one of ",
                           JoinNames(kLaunchers), r.Hint(*out->multinode_launcher, kLaunchers)));
    }
  }
  out->hostfile = r.String(Ds("deepspeed_hostfile"));
  r.String(Ds("deepspeed_exclusion_filter"));
  r.String(Ds("deepspeed_inclusion_filter"));
  if (auto moe = r.String(Ds("deepspeed_moe_layer_cls_names"))) {
    r.Warn(Ds("deepspeed_moe_layer_cls_names"),
           "mixture-of-experts layers are not part of this engine's models; ignored");
  }
}

}  // namespace accel::config

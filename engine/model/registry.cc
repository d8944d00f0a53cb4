#include "engine/model/registry.h"

#include <algorithm>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace accel::model {
namespace {

struct Registry {
  absl::Mutex mu;
  std::vector<const Architecture*> entries ABSL_GUARDED_BY(mu);
};

// The built-in families are listed here, once; tests add theirs with RegisterArchitecture.
Registry& TheRegistry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    absl::MutexLock lock(&reg->mu);
    reg->entries = {&Gpt2Config::Family(), &LlamaConfig::Family()};
    return reg;
  }();
  return *r;
}

bool Reads(const Architecture& a, std::string_view model_type) {
  return std::find(a.model_types.begin(), a.model_types.end(), model_type) != a.model_types.end();
}

}  // namespace

bool Architecture::TrainsOn(std::string_view device) const {
  return std::find(devices.begin(), devices.end(), device) != devices.end();
}

std::vector<const Architecture*> Architectures() {
  Registry& r = TheRegistry();
  absl::MutexLock lock(&r.mu);
  return r.entries;
}

const Architecture* FindArchitecture(std::string_view model_type) {
  for (const Architecture* a : Architectures()) {
    if (Reads(*a, model_type)) return a;
  }
  return nullptr;
}

std::vector<std::string> SupportedModelTypes() {
  std::vector<std::string> names;
  for (const Architecture* a : Architectures()) {
    names.insert(names.end(), a->model_types.begin(), a->model_types.end());
  }
  return names;
}

std::vector<std::string> FamiliesOn(std::string_view device) {
  std::vector<std::string> names;
  for (const Architecture* a : Architectures()) {
    if (a->TrainsOn(device)) names.push_back(a->display.name);
  }
  return names;
}

absl::Status RegisterArchitecture(const Architecture* entry) {
  const std::pair<const char*, bool> required[] = {
      {"name", !entry->name.empty()},
      {"model_types", !entry->model_types.empty()},
      {"from_json", static_cast<bool>(entry->from_json)},
      {"to_json", static_cast<bool>(entry->to_json)},
      {"param_specs", static_cast<bool>(entry->param_specs)},
      {"activation_bytes", static_cast<bool>(entry->activation_bytes)},
      {"bf16_only_ranges", static_cast<bool>(entry->bf16_only_ranges)},
      {"cpu_runner", static_cast<bool>(entry->cpu_runner)},
      {"hf.is_buffer", static_cast<bool>(entry->hf.is_buffer)}};
  for (const auto& [field, present] : required) {
    if (!present) {
      return absl::InvalidArgumentError(
          absl::StrCat("architecture ", entry->name, ": ", field, " is missing"));
    }
  }
  Registry& r = TheRegistry();
  absl::MutexLock lock(&r.mu);
  for (const Architecture* a : r.entries) {
    for (const std::string& t : entry->model_types) {
      if (Reads(*a, t)) {
        return absl::AlreadyExistsError(absl::StrCat("architecture ", entry->name, ": model_type ",
                                                     t, " is already read by ", a->name));
      }
    }
    if (entry->reads_untyped_files && a->reads_untyped_files) {
      return absl::AlreadyExistsError(absl::StrCat(
          "architecture ", entry->name, ": files without model_type are already ", a->name, "'s"));
    }
  }
  r.entries.push_back(entry);
  return absl::OkStatus();
}

bool IsBlockClass(std::string_view cls) {
  if (cls == "Block") return true;  // nanoGPT's
  for (const Architecture* a : Architectures()) {
    if (std::find(a->block_classes.begin(), a->block_classes.end(), cls) !=
        a->block_classes.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace accel::model

#include "rpc/job_file.h"

#include <yaml-cpp/yaml.h>

#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "rpc/job_placement.h"

namespace accel::rpc {
namespace {

namespace fs = std::filesystem;
using accel::v1::JobSpec;

struct Ctx {
  std::string source;
  std::string base_dir;
  FileAccess access;
  bool quote() const { return access.echo == Echo::kContent; }
};

std::string Where(const Ctx& c, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return c.source;
  return absl::StrCat(c.source, ":", m.line + 1, ":", m.column + 1);
}

absl::Status Bad(const Ctx& c, const YAML::Node& n, const std::string& path,
                 const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(Where(c, n), ": ", path, ": ", what));
}

// ", got <what n is>": the value itself only when the file's content may be quoted.
std::string Got(const Ctx& c, const YAML::Node& n) {
  if (n.IsScalar()) return c.quote() ? absl::StrCat(", got '", n.Scalar(), "'") : "";
  if (n.IsMap()) return ", got a mapping";
  if (n.IsSequence()) return ", got a list";
  return ", got nothing";
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    prev.swap(cur);
  }
  return prev[b.size()];
}

using Handler = std::function<absl::Status(const YAML::Node&, const std::string& path)>;

// Walks a mapping: every key must have a handler.
absl::Status Walk(const Ctx& c, const YAML::Node& node, const std::string& prefix,
                  const std::map<std::string, Handler>& handlers) {
  const std::string where = prefix.empty() ? "the job file" : prefix;
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsMap()) return Bad(c, node, where, absl::StrCat("must be a mapping", Got(c, node)));
  // yaml-cpp keeps every pair of a mapping that repeats a key, and node[key] would see only the
  // first: a second value must be an error, not silently ignored.
  std::map<std::string, int> first_line;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string path = prefix.empty() ? key : absl::StrCat(prefix, ".", key);
    const auto [seen, inserted] = first_line.emplace(key, it->first.Mark().line + 1);
    if (!inserted) {
      return Bad(c, it->first, path,
                 absl::StrCat("duplicate key (first given on line ", seen->second, ")"));
    }
    auto h = handlers.find(key);
    if (h == handlers.end() && !c.quote()) {
      // The key is the file's, not ours: its position only (an unknown key ends the walk
      // before a repeat of it could be reported as a duplicate).
      return Bad(c, it->first, where, "unknown key (docs/job.md lists the keys)");
    }
    if (h == handlers.end()) {
      std::string best;
      size_t best_d = 3;
      std::vector<std::string> known;
      for (const auto& [k, unused] : handlers) {
        known.push_back(k);
        size_t d = EditDistance(key, k);
        if (d < best_d) best_d = d, best = k;
      }
      return Bad(c, it->first, path,
                 best.empty() ? absl::StrCat("unknown key; known keys: ", absl::StrJoin(known, ", "))
                              : absl::StrCat("unknown key (did you mean ",
                                             prefix.empty() ? best : absl::StrCat(prefix, ".", best),
                                             "?)"));
    }
    ACCEL_RETURN_IF_ERROR(h->second(it->second, path));
  }
  return absl::OkStatus();
}

// Scalar readers bound to a destination.
Handler Int(const Ctx& c, std::function<void(int64_t)> set, int64_t min = INT64_MIN,
            int64_t max = INT64_MAX) {
  return [&c, set, min, max](const YAML::Node& n, const std::string& path) -> absl::Status {
    int64_t v;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v)) {
      return Bad(c, n, path, absl::StrCat("must be an integer", Got(c, n)));
    }
    if (v < min || v > max) {
      return Bad(c, n, path, absl::StrCat("must be an integer from ", min, " to ", max, Got(c, n)));
    }
    set(v);
    return absl::OkStatus();
  };
}
// An int32 field of the spec: a value outside int32 is an error, never truncated.
Handler Int32(const Ctx& c, std::function<void(int32_t)> set) {
  return Int(c, [set](int64_t v) { set(static_cast<int32_t>(v)); }, INT32_MIN, INT32_MAX);
}
Handler Real(const Ctx& c, std::function<void(double)> set) {
  return [&c, set](const YAML::Node& n, const std::string& path) -> absl::Status {
    double v;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) {
      return Bad(c, n, path, absl::StrCat("must be a number", Got(c, n)));
    }
    if (!std::isfinite(v)) {
      return Bad(c, n, path, absl::StrCat("must be a finite number", Got(c, n)));
    }
    set(v);
    return absl::OkStatus();
  };
}
Handler Bool(const Ctx& c, std::function<void(bool)> set) {
  return [&c, set](const YAML::Node& n, const std::string& path) -> absl::Status {
    bool v;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      return Bad(c, n, path, absl::StrCat("must be true or false", Got(c, n)));
    }
    set(v);
    return absl::OkStatus();
  };
}
Handler Str(const Ctx& c, std::function<void(const std::string&)> set) {
  return [&c, set](const YAML::Node& n, const std::string& path) -> absl::Status {
    if (!n.IsScalar()) return Bad(c, n, path, absl::StrCat("must be text", Got(c, n)));
    set(n.Scalar());
    return absl::OkStatus();
  };
}
std::string Resolve(const Ctx& c, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(c.base_dir) / p).lexically_normal().string();
}
Handler Path(const Ctx& c, std::function<void(const std::string&)> set) {
  return Str(c, [&c, set](const std::string& p) { set(Resolve(c, p)); });
}
// A launcher's settings: a mapping of known keys to text (numbers read as written).
Handler Settings(const Ctx& c, const std::vector<std::string>& keys,
                 google::protobuf::Map<std::string, std::string>* out) {
  std::map<std::string, Handler> handlers;
  for (const std::string& key : keys) {
    handlers[key] = Str(c, [out, key](const std::string& v) { (*out)[key] = v; });
  }
  return [&c, handlers](const YAML::Node& n, const std::string& path) {
    return Walk(c, n, path, handlers);
  };
}

// Errors in a section are reported where the section starts when the key is absent.
Handler Section(const Ctx& c, std::map<std::string, Handler> handlers) {
  return [&c, handlers](const YAML::Node& n, const std::string& path) {
    return Walk(c, n, path, handlers);
  };
}

absl::Status ParseInto(const Ctx& c, const YAML::Node& root, JobSpec& s) {
  auto* m = s.mutable_model();
  auto* d = s.mutable_data();
  auto* t = s.mutable_train();
  auto* k = s.mutable_checkpoint();
  auto* r = s.mutable_resources();
  auto* sh = s.mutable_sharding();
  std::map<std::string, Handler> model = {
      {"preset", Str(c, [m](const std::string& v) { m->set_preset(v); })},
      {"config", Path(c, [m](const std::string& v) { m->set_config(v); })},
      {"init_weights", Path(c, [m](const std::string& v) { m->set_init_weights(v); })},
  };
  std::map<std::string, Handler> top = {
      {"name", Str(c, [&s](const std::string& v) { s.set_name(v); })},
      // `model: gpt2-mini` is short for `model: {preset: gpt2-mini}`.
      {"model",
       [&c, m, model](const YAML::Node& n, const std::string& path) -> absl::Status {
         if (n.IsScalar()) {
           m->set_preset(n.Scalar());
           return absl::OkStatus();
         }
         return Walk(c, n, path, model);
       }},
      {"data", Section(c, {{"path", Path(c, [d](const std::string& v) { d->set_path(v); })},
                           {"shuffle_seed", Int(c, [d](int64_t v) { d->set_shuffle_seed(v); })}})},
      {"train",
       Section(c, {{"steps", Int(c, [t](int64_t v) { t->set_steps(v); })},
                   {"micro_batch", Int(c, [t](int64_t v) { t->set_micro_batch(v); })},
                   {"grad_accum", Int(c, [t](int64_t v) { t->set_grad_accum(v); })},
                   {"seq_len", Int(c, [t](int64_t v) { t->set_seq_len(v); })},
                   {"lr", Real(c, [t](double v) { t->set_lr(v); })},
                   {"min_lr", Real(c, [t](double v) { t->set_min_lr(v); })},
                   {"schedule", Str(c, [t](const std::string& v) { t->set_schedule(v); })},
                   {"warmup", Int(c, [t](int64_t v) { t->set_warmup(v); })},
                   {"weight_decay", Real(c, [t](double v) { t->set_weight_decay(v); })},
                   {"beta1", Real(c, [t](double v) { t->set_beta1(v); })},
                   {"beta2", Real(c, [t](double v) { t->set_beta2(v); })},
                   {"eps", Real(c, [t](double v) { t->set_eps(v); })},
                   {"grad_clip", Real(c, [t](double v) { t->set_grad_clip(v); })},
                   {"seed", Int(c, [t](int64_t v) { t->set_seed(v); })},
                   {"log_every", Int(c, [t](int64_t v) { t->set_log_every(v); })},
                   {"max_nonfinite_steps",
                    Int(c, [t](int64_t v) { t->set_max_nonfinite_steps(v); })},
                   {"activation_checkpointing",
                    Bool(c, [t](bool v) { t->set_activation_checkpointing(v); })},
                   {"ignore_memory_plan",
                    Bool(c, [t](bool v) { t->set_ignore_memory_plan(v); })}})},
      {"checkpoint",
       Section(c, {{"dir", Path(c, [k](const std::string& v) { k->set_dir(v); })},
                   {"every_n_steps", Int(c, [k](int64_t v) { k->set_every_n_steps(v); })},
                   {"keep_last", Int32(c, [k](int32_t v) { k->set_keep_last(v); })}})},
      {"resources",
       Section(c, {{"num_processes", Int32(c, [r](int32_t v) { r->set_num_processes(v); })},
                   {"device", Str(c, [r](const std::string& v) { r->set_device(v); })},
                   {"threads_per_process",
                    Int32(c, [r](int32_t v) { r->set_threads_per_process(v); })},
                   {"launcher", Str(c, [r](const std::string& v) { r->set_launcher(v); })},
                   {"nodes", Int32(c, [r](int32_t v) { r->set_nodes(v); })},
                   {"slurm", Settings(c, SlurmSettingKeys(), r->mutable_slurm())},
                   {"kubernetes", Settings(c, KubernetesSettingKeys(), r->mutable_kubernetes())}})},
      {"sharding",
       Section(c, {{"strategy", Str(c, [sh](const std::string& v) { sh->set_strategy(v); })},
                   {"hybrid_group_size",
                    Int32(c, [sh](int32_t v) { sh->set_hybrid_group_size(v); })},
                   {"forward_prefetch", Bool(c, [sh](bool v) { sh->set_forward_prefetch(v); })},
                   {"backward_prefetch",
                    Str(c, [sh](const std::string& v) { sh->set_backward_prefetch(v); })},
                   {"reshard_after_forward",
                    Bool(c, [sh](bool v) { sh->set_reshard_after_forward(v); })},
                   {"sync_module_states", Bool(c, [sh](bool v) { sh->set_sync_module_states(v); })}})},
      {"accelerate_config",
       Path(c, [&s](const std::string& v) { s.set_accelerate_config_path(v); })},
      {"deepspeed_config",
       Path(c, [&s](const std::string& v) { s.set_deepspeed_config_path(v); })},
      {"max_restarts", Int32(c, [&s](int32_t v) { s.set_max_restarts(v); })},
      {"priority", Int32(c, [&s](int32_t v) { s.set_priority(v); })},
      {"comm_timeout_s", Real(c, [&s](double v) { s.set_comm_timeout_s(v); })},
      {"heartbeat_timeout_s", Real(c, [&s](double v) { s.set_heartbeat_timeout_s(v); })},
      {"stop_grace_s", Real(c, [&s](double v) { s.set_stop_grace_s(v); })},
  };
  return Walk(c, root, "", top);
}

// A job's files travel inside its spec, which acceld caps at 1 MiB.
constexpr uintmax_t kMaxJobFileBytes = 1 << 20;

// Only a regular file is read: a FIFO would block accelctl forever and /dev/zero would fill
// its memory (both were accepted as accelerate_config).
absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  if (!fs::is_regular_file(st)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": not a regular file"));
  }
  const uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxJobFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", size,
                                                   " bytes; a job's files are at most ",
                                                   kMaxJobFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// An Accelerate config that names its DeepSpeed JSON (deepspeed_config.deepspeed_config_file)
// while the spec carries none: read it here, where the file is (beside the YAML first, then as
// given, as `accelerate launch` does), so acceld and the workers get its text. A YAML that does
// not parse is left to acceld's resolver, which names the problem.
absl::Status AttachNamedDeepSpeedJson(JobSpec& spec, const FileAccess& access) {
  if (!spec.deepspeed_config_text().empty() || spec.accelerate_config_text().empty()) {
    return absl::OkStatus();
  }
  std::string named;
  try {
    const YAML::Node root = YAML::Load(spec.accelerate_config_text());
    const YAML::Node ds = root.IsMap() ? root["deepspeed_config"] : YAML::Node();
    const YAML::Node file = ds.IsMap() ? ds["deepspeed_config_file"] : YAML::Node();
    if (file.IsScalar()) named = file.Scalar();
  } catch (const YAML::Exception&) {
    return absl::OkStatus();
  }
  if (named.empty() || named == "none") return absl::OkStatus();
  fs::path path(named);
  if (path.is_relative()) {
    const fs::path beside = fs::path(spec.accelerate_config_path()).parent_path() / path;
    path = fs::exists(beside) ? beside : fs::absolute(path);
  }
  ACCEL_RETURN_IF_ERROR(access.Check("accelerate_config: deepspeed_config.deepspeed_config_file",
                                     path.lexically_normal().string()));
  absl::StatusOr<std::string> text = ReadText(path.lexically_normal().string());
  if (!text.ok()) {
    return Invalid("accelerate_config", absl::StrCat("deepspeed_config.deepspeed_config_file: ",
                                                     text.status().message()));
  }
  spec.set_deepspeed_config_path(path.lexically_normal().string());
  spec.set_deepspeed_config_text(*text);
  return absl::OkStatus();
}

}  // namespace

JobSpec DefaultJobSpec() {
  JobSpec s;
  s.set_name("job");
  s.mutable_model()->set_preset("gpt2-mini");
  auto* t = s.mutable_train();
  t->set_steps(100);
  t->set_micro_batch(4);
  t->set_grad_accum(1);
  t->set_seq_len(64);
  t->set_lr(3e-4);
  t->set_min_lr(0);
  t->set_schedule("cosine");
  t->set_warmup(0);
  t->set_weight_decay(0);
  t->set_beta1(0.9);
  t->set_beta2(0.999);
  t->set_eps(1e-8);
  t->set_grad_clip(1.0);
  t->set_seed(1337);
  t->set_log_every(10);
  auto* r = s.mutable_resources();
  r->set_device("cpu");
  r->set_threads_per_process(1);
  auto* sh = s.mutable_sharding();
  sh->set_strategy("no_shard");
  sh->set_backward_prefetch("backward_pre");
  s.set_max_restarts(0);
  s.set_priority(0);
  s.set_comm_timeout_s(120);
  s.set_heartbeat_timeout_s(60);
  s.set_stop_grace_s(10);
  return s;
}

absl::StatusOr<JobSpec> ParseJobYaml(const std::string& text, const std::string& source,
                                     const std::string& base_dir, const FileAccess& access) {
  Ctx c{source, base_dir, access};
  JobSpec spec = DefaultJobSpec();
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's message can carry a character of the text ("unknown escape character: x").
    return absl::InvalidArgumentError(absl::StrCat(source, ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1, ": malformed YAML",
                                                   c.quote() ? absl::StrCat(": ", e.msg) : ""));
  }
  try {
    ACCEL_RETURN_IF_ERROR(ParseInto(c, root, spec));
  } catch (const YAML::Exception& e) {
    if (!c.quote()) return absl::InvalidArgumentError(absl::StrCat(source, ": unreadable YAML"));
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
  if (!spec.accelerate_config_path().empty()) {
    ACCEL_RETURN_IF_ERROR(access.Check("accelerate_config", spec.accelerate_config_path()));
    absl::StatusOr<std::string> cfg = ReadText(spec.accelerate_config_path());
    if (!cfg.ok()) {
      return Invalid("accelerate_config", std::string(cfg.status().message()));
    }
    spec.set_accelerate_config_text(*cfg);
  }
  if (!spec.deepspeed_config_path().empty()) {
    ACCEL_RETURN_IF_ERROR(access.Check("deepspeed_config", spec.deepspeed_config_path()));
    absl::StatusOr<std::string> cfg = ReadText(spec.deepspeed_config_path());
    if (!cfg.ok()) {
      return Invalid("deepspeed_config", std::string(cfg.status().message()));
    }
    spec.set_deepspeed_config_text(*cfg);
  }
  if (spec.data().path().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": data.path: required (an llm.c "
                                                   "token shard or a text file)"));
  }
  return spec;
}

absl::StatusOr<JobSpec> ParseJobFile(const std::string& path, const std::string& accelerate_config,
                                     const std::string& deepspeed_config,
                                     const FileAccess& access) {
  ACCEL_RETURN_IF_ERROR(access.Check("job_file", path));
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  const std::string base = fs::absolute(fs::path(path)).parent_path().string();
  ACCEL_ASSIGN_OR_RETURN(JobSpec spec, ParseJobYaml(text, path, base, access));
  if (!accelerate_config.empty()) {
    const std::string abs = fs::absolute(fs::path(accelerate_config)).lexically_normal().string();
    ACCEL_RETURN_IF_ERROR(access.Check("accelerate_config", abs));
    absl::StatusOr<std::string> cfg = ReadText(abs);
    if (!cfg.ok()) return Invalid("--config", std::string(cfg.status().message()));
    spec.set_accelerate_config_path(abs);
    spec.set_accelerate_config_text(*cfg);
  }
  if (!deepspeed_config.empty()) {
    const std::string abs = fs::absolute(fs::path(deepspeed_config)).lexically_normal().string();
    ACCEL_RETURN_IF_ERROR(access.Check("deepspeed_config", abs));
    absl::StatusOr<std::string> cfg = ReadText(abs);
    if (!cfg.ok()) return Invalid("--deepspeed-config", std::string(cfg.status().message()));
    spec.set_deepspeed_config_path(abs);
    spec.set_deepspeed_config_text(*cfg);
  }
  ACCEL_RETURN_IF_ERROR(AttachNamedDeepSpeedJson(spec, access));
  return spec;
}

}  // namespace accel::rpc

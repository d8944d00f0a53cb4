// ValidateJobSpec (the keys' ranges and names, and optionally the files they point at) and the
// job spec's JSON form, as acceld stores it. Parsing the YAML job file is job_file.cc.
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/path_checks.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/hf_model_file.h"
#include "engine/checkpoint/hf_shards.h"
#include "engine/config/train_plan.h"
#include "engine/model/model_config.h"
#include "engine/shard/shard_plan.h"
#include "job/job_file.h"
#include "job/job_placement.h"
#include "job/settings.h"

namespace accel::job {
namespace {

namespace fs = std::filesystem;
using accel::v1::JobSpec;

constexpr size_t kMaxSpecBytes = 1 << 20;
constexpr size_t kMaxNameBytes = 256;

// Well-formed UTF-8 as protobuf checks it when a string field is parsed: no overlong forms,
// no surrogates, nothing above U+10FFFF. A spec that fails it cannot reach acceld (gRPC drops
// it with an opaque parse error), so it is refused here naming the key.
bool IsValidUtf8(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const int extra = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2
                                               : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
    if (extra < 0 || text.size() - i <= static_cast<size_t>(extra)) return false;
    // The second byte's range depends on the first (RFC 3629 table).
    const unsigned char c1 = static_cast<unsigned char>(text[i + 1]);
    const unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (c1 < lo || c1 > hi) return false;
    for (int k = 2; k <= extra; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return false;
    }
    i += 1 + extra;
  }
  return true;
}

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// What the loader opens for init_weights (hf_model_file.h): a file, or a directory's index and
// every shard it names, or its model.safetensors; each must be a readable regular file (a FIFO
// shard blocked a rank past its heartbeat deadline).
absl::Status CheckWeightsFiles(const std::string& path) {
  std::error_code ec;
  const bool directory = fs::is_directory(path, ec);
  if (!directory) ACCEL_RETURN_IF_ERROR(CheckReadableFile(path));
  ACCEL_ASSIGN_OR_RETURN(const std::vector<std::string> files,
                         checkpoint::HfWeightsFiles(Env::Default(), path));
  if (directory && files == std::vector<std::string>{path}) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": a directory without ", checkpoint::kHfIndexFileName, " or model.safetensors"));
  }
  for (const std::string& f : files) ACCEL_RETURN_IF_ERROR(CheckReadableFile(f));
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateJobId(const std::string& id) {
  if (id.empty()) return Invalid("job_id", "required");
  if (id.size() > kMaxJobIdBytes) {
    return Invalid("job_id", absl::StrCat(id.size(), " bytes; job ids are at most ",
                                          kMaxJobIdBytes, " (job-<number>)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateJobSpec(const JobSpec& s, bool check_files, Echo echo) {
  const auto& t = s.train();
  const auto& r = s.resources();
  const auto& sh = s.sharding();
  const auto& k = s.checkpoint();
  // Sizes a client can send are capped, so one job can never make `accelctl list` too large to
  // receive, and names print as one line.
  if (const size_t bytes = s.ByteSizeLong(); bytes > kMaxSpecBytes) {
    return Invalid("spec", absl::StrCat(bytes, " bytes; at most ", kMaxSpecBytes));
  }
  if (s.name().size() > kMaxNameBytes) {
    return Invalid("name", absl::StrCat(s.name().size(), " bytes; at most ", kMaxNameBytes));
  }
  for (const unsigned char ch : s.name()) {
    if (ch < 0x20 || ch == 0x7f) {
      return Invalid("name", "control characters are not allowed (names print on one line)");
    }
  }
  // Every text field (found by fuzz/job_file_fuzz.cc: only the name was checked, so a data.path
  // with a byte 0xff validated, then could not be sent).
  for (const auto& [key, text] :
       {std::pair<const char*, const std::string&>{"name", s.name()},
        {"model.preset", s.model().preset()},
        {"model.config", s.model().config()},
        {"model.init_weights", s.model().init_weights()},
        {"data.path", s.data().path()},
        {"eval.data.path", s.eval().data().path()},
        {"data.tokenizer", s.data().tokenizer()},
        {"data.text_field", s.data().text_field()},
        {"data.validation", s.data().validation()},
        {"data.cache_dir", s.data().cache_dir()},
        {"train.schedule", s.train().schedule()},
        {"train.sample_prompt", s.train().sample_prompt()},
        {"checkpoint.dir", s.checkpoint().dir()},
        {"resources.device", s.resources().device()},
        {"sharding.strategy", s.sharding().strategy()},
        {"sharding.backward_prefetch", s.sharding().backward_prefetch()},
        {"accelerate_config", s.accelerate_config_path()},
        {"accelerate_config (its text)", s.accelerate_config_text()},
        {"deepspeed_config", s.deepspeed_config_path()},
        {"deepspeed_config (its text)", s.deepspeed_config_text()}}) {
    if (!IsValidUtf8(text)) return Invalid(key, "not valid UTF-8");
  }
  if (s.model().preset().empty() && s.model().config().empty()) {
    return Invalid("model", "give model.preset or model.config");
  }
  if (s.model().config().empty()) {
    const std::vector<std::string> presets = model::ModelPresetNames();
    if (std::find(presets.begin(), presets.end(), s.model().preset()) == presets.end()) {
      return Invalid(
          "model.preset",
          absl::StrCat("unknown preset",
                       echo == Echo::kContent ? absl::StrCat(" '", s.model().preset(), "'") : "",
                       "; known: ", absl::StrJoin(presets, ", ")));
    }
  }
  if (s.data().path().empty() && s.data().mix().empty()) return Invalid("data.path", "required");
  for (const auto& m : s.data().mix()) {
    if (!IsValidUtf8(m.path())) return Invalid("data.mix", "a path is not valid UTF-8");
  }
  if (!s.data().mix().empty() && s.data().format().empty()) {
    return Invalid("data.mix", "needs data.format (a mixture of datasets; token shards are one "
                               "data.path)");
  }
  // Ranges, finite reals and enum names, from the settings table (job/settings.h).
  ACCEL_RETURN_IF_ERROR(CheckSettings(s, echo));
  if (t.min_lr() > t.lr()) {
    return Invalid("train.min_lr", absl::StrCat("must be at most train.lr (", t.lr(), "), got ",
                                                t.min_lr()));
  }
  const int num_processes = r.has_num_processes() ? r.num_processes() : 1;
  ACCEL_RETURN_IF_ERROR(ValidatePlacement(r, num_processes));
  absl::StatusOr<shard::Strategy> strategy = shard::ParseStrategy(sh.strategy());
  if (!strategy.ok()) {
    return Invalid("sharding.strategy", echo == Echo::kContent
                                            ? std::string(strategy.status().message())
                                            : "not a strategy this engine knows (docs/job.md)");
  }
  // Across nodes a hybrid job with no group size shards within a node (FSDP's rule).
  if (shard::IsHybrid(*strategy) && !(NodesOf(r) > 1 && sh.hybrid_group_size() == 0)) {
    if (sh.hybrid_group_size() < 1 || num_processes % sh.hybrid_group_size() != 0) {
      return Invalid("sharding.hybrid_group_size",
                     absl::StrCat("hybrid sharding needs a group size that divides "
                                  "resources.num_processes (", num_processes, "), got ",
                                  sh.hybrid_group_size()));
    }
  }
  if (absl::StatusOr<shard::BackwardPrefetch> bp =
          config::ParseBackwardPrefetch(sh.backward_prefetch());
      !bp.ok()) {
    return Invalid("sharding.backward_prefetch",
                   echo == Echo::kContent ? std::string(bp.status().message())
                                          : "must be backward_pre, backward_post or none");
  }
  if (k.dir().empty() && k.every_n_steps() > 0) {
    return Invalid("checkpoint.dir", "required when checkpoint.every_n_steps is set");
  }
  const bool held_out = !s.data().validation().empty() || s.data().validation_fraction() > 0;
  if (held_out && s.data().format().empty()) {
    return Invalid(s.data().validation().empty() ? "data.validation_fraction" : "data.validation",
                   "needs data.format (a dataset to split; a token shard's held-out data is "
                   "eval.data)");
  }
  if (s.eval().data().path().empty() && !held_out) {
    for (const auto& [key, set] : {std::pair<const char*, bool>{"eval.every_n_steps",
                                                                s.eval().every_n_steps() > 0},
                                   {"eval.at_start", s.eval().at_start()},
                                   {"checkpoint.keep_best", k.keep_best() > 0}}) {
      if (set) return Invalid(key, "needs eval.data (the held-out tokens to evaluate on)");
    }
  }
  if (s.heartbeat_timeout_s() != 0 && !(s.heartbeat_timeout_s() >= kMinHeartbeatTimeoutS)) {
    return Invalid("heartbeat_timeout_s",
                   absl::StrCat("must be 0 (acceld's --heartbeat-timeout) or at least ",
                                kMinHeartbeatTimeoutS, " seconds (ranks report every 2 s; a "
                                "shorter deadline fails healthy ranks), got ",
                                s.heartbeat_timeout_s()));
  }
  if (check_files) {
    // What a rank opens: regular files to read (a FIFO would block it forever), a directory it
    // can write checkpoints into.
    for (const auto& [key, path] :
         {std::pair<const char*, std::string>{"data.path", s.data().path()},
          {"eval.data.path", s.eval().data().path()},
          {"data.validation", s.data().validation()},
          {"model.config", s.model().config()}}) {
      if (path.empty()) continue;
      // A dataset's sources may be globs: the dataset check at lowering expands and reads them.
      if (!s.data().format().empty() && key != std::string("model.config") &&
          key != std::string("eval.data.path") && path.find_first_of("*?[") != std::string::npos) {
        continue;
      }
      if (absl::Status f = CheckReadableFile(path); !f.ok()) {
        return Invalid(key, std::string(f.message()));
      }
    }
    if (!s.model().init_weights().empty()) {
      if (absl::Status f = CheckWeightsFiles(s.model().init_weights()); !f.ok()) {
        return Invalid("model.init_weights", std::string(f.message()));
      }
    }
    if (!k.dir().empty()) {
      if (absl::Status d = CheckWritableDirectory(k.dir()); !d.ok()) {
        return Invalid("checkpoint.dir", std::string(d.message()));
      }
    }
  }
  return absl::OkStatus();
}

std::string JobSpecToJson(const JobSpec& spec) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(spec, &out, opts);
  return out;
}

absl::StatusOr<JobSpec> JobSpecFromJson(const std::string& json) {
  JobSpec spec;
  auto s = google::protobuf::util::JsonStringToMessage(json, &spec);
  if (!s.ok()) {
    return absl::DataLossError(absl::StrCat("stored job spec is not readable: ", s.ToString()));
  }
  return spec;
}

}  // namespace accel::job

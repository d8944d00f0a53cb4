#include "client/config_command.h"

#include <cmath>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "engine/config/convert.h"
#include "engine/config/document.h"
#include "engine/config/plan_json.h"
#include "engine/config/resolve.h"

namespace accel::client {
namespace {

void PrintStatus(const absl::Status& s, std::ostream& err) {
  err << "error: " << s.message() << "\n";
}

absl::StatusOr<config::PrecisionMode> ParsePrecision(const std::string& s) {
  if (s == "no") return config::PrecisionMode::kNo;
  if (s == "fp16") return config::PrecisionMode::kFp16;
  if (s == "bf16") return config::PrecisionMode::kBf16;
  return absl::InvalidArgumentError(
      absl::StrCat("--mixed-precision: \"", s, "\" is not one of no, fp16, bf16"));
}

// A DeepSpeed JSON on its own: resolved under a minimal Accelerate YAML.
absl::StatusOr<config::TrainPlan> ResolveLoneJson(const std::string& path,
                                                  const config::ConfigInputs& inputs, Env* fs) {
  auto text = ReadFileToString(fs, path);
  if (!text.ok()) return text.status();
  auto json = config::ParseJsonDocument(*text, path);
  if (!json.ok()) return json.status();
  auto yaml = config::ParseYamlDocument("distributed_type: DEEPSPEED\nnum_processes: 1\n",
                                        "(implied accelerate config)");
  if (!yaml.ok()) return yaml.status();
  return config::ResolveDocuments(*yaml, &*json, inputs);
}

}  // namespace

int ConfigExplain(const ExplainArgs& args, const config::EnvMap& env, std::ostream& out,
                  std::ostream& err, Env* fs) {
  config::ConfigInputs inputs;
  inputs.accelerate_config = args.file;
  inputs.deepspeed_config = args.deepspeed_config;
  inputs.env = env;
  inputs.job = args.job;
  inputs.num_processes = args.num_processes;
  inputs.defaults =
      args.library_defaults ? config::DefaultProfile::kLibrary : config::DefaultProfile::kLauncher;
  if (!args.mixed_precision.empty()) {
    auto mp = ParsePrecision(args.mixed_precision);
    if (!mp.ok()) {
      PrintStatus(mp.status(), err);
      return kExitInvalid;
    }
    inputs.mixed_precision = *mp;
  }
  if (args.output != "text" && args.output != "json") {
    err << "error: --output: \"" << args.output << "\" is not one of text, json\n";
    return kExitInvalid;
  }
  auto plan = config::ResolvePlan(inputs, fs);
  if (!plan.ok()) {
    PrintStatus(plan.status(), err);
    return kExitInvalid;
  }
  if (args.output == "json") {
    out << config::PlanToJsonText(*plan) << "\n";
  } else {
    out << config::PlanToText(*plan);
  }
  return kExitOk;
}

int ConfigValidate(const std::vector<std::string>& files, std::optional<int> num_processes,
                   const config::EnvMap& env, std::ostream& out, std::ostream& err, Env* fs) {
  if (files.empty()) {
    err << "error: no files given\n";
    return kExitInvalid;
  }
  int invalid = 0;
  for (const std::string& file : files) {
    config::ConfigInputs inputs;
    inputs.accelerate_config = file;
    inputs.env = env;
    inputs.num_processes = num_processes;
    absl::StatusOr<config::TrainPlan> plan =
        absl::EndsWith(file, ".json") ? ResolveLoneJson(file, inputs, fs)
                                      : config::ResolvePlan(inputs, fs);
    if (!plan.ok()) {
      ++invalid;
      out << "invalid: " << file << "\n";
      std::string message(plan.status().message());
      size_t start = 0;
      while (start <= message.size()) {
        size_t end = message.find('\n', start);
        if (end == std::string::npos) end = message.size();
        out << "  " << message.substr(start, end - start) << "\n";
        start = end + 1;
      }
      continue;
    }
    out << "ok: " << file << " (" << config::Name(plan->distributed_type) << ", "
        << config::Name(plan->strategy) << ")\n";
    for (const std::string& w : plan->warnings) out << "  warning: " << w << "\n";
  }
  if (invalid > 0) {
    err << invalid << " of " << files.size() << " file(s) invalid\n";
    return kExitInvalid;
  }
  return kExitOk;
}

int ConfigConvert(const ConvertArgs& args, const config::EnvMap& env, std::ostream& out,
                  std::ostream& err, Env* fs) {
  config::ConfigInputs inputs;
  inputs.accelerate_config = args.file;
  inputs.deepspeed_config = args.deepspeed_config;
  inputs.env = env;
  inputs.num_processes = args.num_processes;
  auto plan = config::ResolvePlan(inputs, fs);
  if (!plan.ok()) {
    PrintStatus(plan.status(), err);
    return kExitInvalid;
  }
  std::string to = args.to;
  if (to.empty()) {
    to = plan->distributed_type == config::DistributedType::kDeepSpeed ? "fsdp" : "deepspeed";
  }
  if (to != "deepspeed" && to != "fsdp") {
    err << "error: --to: \"" << to << "\" is not one of deepspeed, fsdp\n";
    return kExitInvalid;
  }
  const std::string json_name =
      args.output_prefix.empty() ? "deepspeed_config.json"
                                 : absl::StrCat(args.output_prefix, ".json");
  // The YAML refers to the JSON by its file name (resolved beside the YAML).
  const size_t slash = json_name.rfind('/');
  const std::string json_ref = slash == std::string::npos ? json_name : json_name.substr(slash + 1);
  auto converted = to == "deepspeed" ? config::ConvertToDeepSpeed(*plan, json_ref)
                                     : config::ConvertToFsdp(*plan);
  if (!converted.ok()) {
    PrintStatus(converted.status(), err);
    return kExitInvalid;
  }
  for (const std::string& note : converted->notes) err << "note: " << note << "\n";
  if (args.output_prefix.empty()) {
    out << "# Accelerate config\n" << converted->accelerate_yaml;
    if (!converted->deepspeed_json.empty()) {
      out << "# " << json_ref << "\n" << converted->deepspeed_json;
    }
    return kExitOk;
  }
  const std::string yaml_path = absl::StrCat(args.output_prefix, ".yaml");
  absl::Status s = WriteFileAtomic(fs, yaml_path, converted->accelerate_yaml);
  if (s.ok() && !converted->deepspeed_json.empty()) {
    s = WriteFileAtomic(fs, json_name, converted->deepspeed_json);
  }
  if (!s.ok()) {
    PrintStatus(s, err);
    return kExitFailure;
  }
  out << "wrote " << yaml_path;
  if (!converted->deepspeed_json.empty()) out << " and " << json_name;
  out << "\n";
  return kExitOk;
}

void AddConfigCommand(CLI::App& app, ConfigCommand* c) {
  CLI::App* config = app.add_subcommand("config", "explain, validate or convert config files");
  config->require_subcommand(1);

  CLI::App* explain = config->add_subcommand("explain", "print the resolved training plan");
  explain->add_option("file", c->explain.file, "Accelerate config YAML")->required();
  explain->add_option("--deepspeed-config", c->explain.deepspeed_config,
                      "DeepSpeed JSON (wins over deepspeed_config_file)");
  explain->add_option("--num-processes", c->explain_num_processes, "total processes");
  explain->add_option("--mixed-precision", c->explain.mixed_precision, "no | fp16 | bf16");
  explain->add_option("--output", c->explain.output, "text | json")->capture_default_str();
  explain->add_option("--micro-batch", c->micro_batch, "job: micro batch per process");
  explain->add_option("--grad-accum", c->grad_accum, "job: gradient accumulation steps");
  explain->add_option("--grad-clip", c->grad_clip, "job: gradient clipping norm");
  explain->add_option("--hidden-size", c->hidden_size, "job: model hidden size");
  explain->add_option("--lr", c->lr, "job: learning rate");
  explain->add_option("--steps", c->steps, "job: optimizer steps");
  explain->add_flag("--library-defaults", c->explain.library_defaults,
                    "use the plugin's own defaults instead of accelerate launch's");
  explain->callback([c] { c->chosen = "explain"; });

  CLI::App* validate = config->add_subcommand("validate", "check config files");
  validate->add_option("files", c->validate_files, "YAML or DeepSpeed JSON files")->required();
  validate->add_option("--num-processes", c->validate_num_processes_raw, "total processes");
  validate->callback([c] { c->chosen = "validate"; });

  CLI::App* convert =
      config->add_subcommand("convert", "write the other backend's files (FSDP <-> DeepSpeed)");
  convert->add_option("file", c->convert.file, "Accelerate config YAML")->required();
  convert->add_option("--deepspeed-config", c->convert.deepspeed_config, "DeepSpeed JSON");
  convert->add_option("--num-processes", c->convert_num_processes, "total processes");
  convert->add_option("--to", c->convert.to, "deepspeed | fsdp (default: the other one)");
  convert->add_option("-o,--output-prefix", c->convert.output_prefix,
                      "write PREFIX.yaml (and PREFIX.json); default: print");
  convert->callback([c] { c->chosen = "convert"; });
}

int RunParsedConfigCommand(ConfigCommand& c, const config::EnvMap& env, std::ostream& out,
                           std::ostream& err) {
  auto positive = [](int64_t v) { return v > 0 ? std::optional<int64_t>(v) : std::nullopt; };
  auto finite = [](double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); };
  if (c.chosen == "explain") {
    if (c.explain_num_processes > 0) c.explain.num_processes = c.explain_num_processes;
    c.explain.job.micro_batch_size = positive(c.micro_batch);
    c.explain.job.gradient_accumulation_steps = positive(c.grad_accum);
    c.explain.job.gradient_clipping = finite(c.grad_clip);
    c.explain.job.hidden_size = positive(c.hidden_size);
    c.explain.job.lr = finite(c.lr);
    c.explain.job.steps = positive(c.steps);
    return ConfigExplain(c.explain, env, out, err);
  }
  if (c.chosen == "validate") {
    std::optional<int> n;
    if (c.validate_num_processes_raw > 0) n = c.validate_num_processes_raw;
    return ConfigValidate(c.validate_files, n, env, out, err);
  }
  if (c.chosen == "convert") {
    if (c.convert_num_processes > 0) c.convert.num_processes = c.convert_num_processes;
    return ConfigConvert(c.convert, env, out, err);
  }
  err << "error: no config subcommand\n";
  return kExitInvalid;
}

}  // namespace accel::client

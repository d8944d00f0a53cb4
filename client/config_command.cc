#include "client/config_command.h"

#include <cmath>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "engine/config/convert.h"
#include "engine/config/lower.h"
#include "engine/config/mode.h"
#include "engine/config/plan_json.h"
#include "engine/config/resolve.h"
#include "engine/kernels/matmul_bf16.h"
#include "nlohmann/json.hpp"

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

// The one lowering (engine/config/lower.h) of what `inputs` names (a YAML, or a DeepSpeed JSON
// alone) for a job of the default options with the job values given: what a worker would
// run. Files the options name are not checked (the machine that runs the job may differ).
// Whether `file`, given where an Accelerate YAML goes, is a DeepSpeed JSON (resolve.h): it then
// runs under an implied DEEPSPEED config, as `accel-worker --deepspeed-config` runs it.
bool IsJsonConfig(const std::string& file, Env* fs) {
  absl::StatusOr<std::string> text = ReadFileToString(fs, file);
  return config::IsDeepSpeedJsonFile(file, text.ok() ? *text : std::string());
}

absl::StatusOr<config::LoweredJob> LowerFile(const config::ConfigInputs& inputs, Env* fs) {
  config::LoweringInputs in;
  const std::string& file = inputs.accelerate_config;
  if (inputs.deepspeed_config.empty() && IsJsonConfig(file, fs)) {
    in.deepspeed = {file, ""};
  } else {
    in.accelerate = {file, ""};
    if (!inputs.deepspeed_config.empty()) in.deepspeed = {inputs.deepspeed_config, ""};
  }
  in.env = inputs.env;
  in.launcher_world = inputs.num_processes;
  in.mixed_precision = inputs.mixed_precision;
  in.defaults = inputs.defaults;
  const config::JobSettings& job = inputs.job;
  in.job.data = "(explain: no data)";  // the lowering needs a job; no file is opened
  if (job.micro_batch_size) in.job.batch = *job.micro_batch_size;
  if (job.gradient_accumulation_steps) in.job.grad_accum = *job.gradient_accumulation_steps;
  if (job.gradient_clipping) in.job.grad_clip = static_cast<float>(*job.gradient_clipping);
  if (job.lr) in.job.schedule.base_lr = static_cast<float>(*job.lr);
  if (job.steps) in.job.steps = *job.steps;
  // No job value given at all (`config validate`): the defaults stand in for one, and nothing
  // is reported as kept over or overriding them.
  in.job_stand_in = !job.micro_batch_size && !job.gradient_accumulation_steps &&
                    !job.gradient_clipping && !job.lr && !job.steps;
  in.accumulation_given = job.gradient_accumulation_steps.has_value();
  in.clipping_given = job.gradient_clipping.has_value();
  in.check_files = false;
  in.model_given = false;  // the default preset stands in for whatever model the file serves
  return config::Lower(in, fs);
}

// What `config validate` assumed for a file, since it takes no job: the world it checked the
// batch rule against and the job values that fill "auto", and how to give real ones.
void PrintAssumed(const std::string& file, bool json, std::optional<int> num_processes,
                  std::ostream& out) {
  const config::TrainOptions defaults;
  std::string world;
  if (num_processes) {
    world = absl::StrCat(*num_processes, " process(es) (--num-processes)");
  } else if (json) {
    world = "1 process (a DeepSpeed JSON names no count; pass --num-processes N)";
  } else {
    world = "the file's num_processes (--num-processes N overrides it)";
  }
  out << "  assumed: " << world << "; no job, so values the file leaves \"auto\" take the "
      << "defaults (micro batch " << defaults.batch << ", accumulation " << defaults.grad_accum
      << ", lr " << defaults.schedule.base_lr << ", steps " << defaults.steps
      << "); check a job's own with `accelctl config explain " << file
      << " --micro-batch N --grad-accum N --lr X --steps N`\n";
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
  // What the engine runs from it: the lowering every worker and acceld's submit call.
  absl::StatusOr<config::LoweredJob> lowered = LowerFile(inputs, fs);
  if (!lowered.ok()) {
    PrintStatus(absl::Status(lowered.status().code(),
                             absl::StrCat("the engine cannot run this plan: ",
                                          lowered.status().message())),
                err);
    return kExitInvalid;
  }
  std::optional<accel::plan::MemoryPlan> memory;
  if (args.memory.wanted()) {
    absl::StatusOr<accel::plan::MemoryPlan> m = ExplainMemory(args.memory, *lowered, fs);
    if (!m.ok()) {
      PrintStatus(m.status(), err);
      return kExitInvalid;
    }
    memory = std::move(*m);
  }
  if (args.output == "json") {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(config::PlanToJsonText(*plan));
    j["engine"] = nlohmann::ordered_json::parse(
        config::ModeJson(lowered->options, lowered->source, {}));
    j["engine"].erase("event");
    j["engine"].erase("notes");
    const nlohmann::ordered_json sections = config::OptimizerPlanJson(*plan);
    // Under "engine" (what runs: they replace the job's optimizer and schedule), and only the
    // sections the DeepSpeed file has; the contract's top-level keys stay as they are.
    for (const auto& [key, value] : sections.items()) {
      if (!value.is_null()) j["engine"][key] = value;
    }
    if (memory) {
      j["memory_plan"] = nlohmann::ordered_json::parse(accel::plan::MemoryPlanJson(*memory));
    }
    if (lowered->options.shard.param_dtype == DType::kBF16) {
      const kernels::Bf16MatmulChoice& here = kernels::ChosenBf16Matmul();
      j["engine"]["matmuls_here"] = {{"bf16", here.native},
                                     {"bf16_over_fp32", here.measured_speedup},
                                     {"reason", here.reason}};
    }
    out << j.dump() << "\n";
  } else {
    out << config::PlanToText(*plan);
    out << "engine: " << config::DescribeMode(lowered->options) << "\n";
    // Decided per machine at each rank's start (kernels::ChosenBf16Matmul); this is this one's.
    if (lowered->options.shard.param_dtype == DType::kBF16) {
      out << "matmuls on this machine's CPU: " << kernels::ChosenBf16Matmul().reason << "\n";
    }
    if (memory) out << accel::plan::MemoryPlanTable(*memory);
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
    absl::StatusOr<config::LoweredJob> lowered = LowerFile(inputs, fs);
    const bool json = IsJsonConfig(file, fs);
    if (!lowered.ok()) {
      ++invalid;
      out << "invalid: " << file << "\n";
      std::string message(lowered.status().message());
      size_t start = 0;
      while (start <= message.size()) {
        size_t end = message.find('\n', start);
        if (end == std::string::npos) end = message.size();
        out << "  " << message.substr(start, end - start) << "\n";
        start = end + 1;
      }
      PrintAssumed(file, json, num_processes, out);
      continue;
    }
    const config::TrainPlan& plan = *lowered->plan;
    out << "ok: " << file << " (" << config::Name(plan.distributed_type) << ", "
        << config::Name(plan.strategy) << ")\n";
    for (const std::string& w : lowered->notes) out << "  warning: " << w << "\n";
    PrintAssumed(file, json, num_processes, out);
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
  explain->add_option("file", c->explain.file,
                      "Accelerate config YAML, or a DeepSpeed JSON (run as DEEPSPEED)")
      ->required();
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
  explain->add_option("--model", c->explain.memory.model,
                      "print the memory plan for this model preset (gpt2, gpt2-medium, ...)");
  explain->add_option("--model-config", c->explain.memory.model_config,
                      "print the memory plan for this Hugging Face config.json");
  explain->add_option("--seq", c->seq, "memory plan: sequence length");
  explain->add_option("--world", c->world, "memory plan: ranks (default: the config's processes)");
  explain->add_option("--ranks-per-machine", c->ranks_per_machine,
                      "memory plan: ranks sharing one machine (default: all)");
  explain->add_flag("--library-defaults", c->explain.library_defaults,
                    "use the plugin's own defaults instead of accelerate launch's");
  explain->callback([c] { c->chosen = "explain"; });

  CLI::App* validate = config->add_subcommand("validate", "check config files");
  validate->add_option("files", c->validate_files, "YAML or DeepSpeed JSON files")->required();
  validate->add_option("--num-processes", c->validate_num_processes_raw, "total processes");
  validate->callback([c] { c->chosen = "validate"; });

  CLI::App* convert =
      config->add_subcommand("convert", "write the other backend's files (FSDP <-> DeepSpeed)");
  convert->add_option("file", c->convert.file,
                      "Accelerate config YAML, or a DeepSpeed JSON (run as DEEPSPEED)")
      ->required();
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
    if (c.world > 0 && c.explain_num_processes <= 0) c.explain.num_processes = c.world;
    if (c.seq > 0) c.explain.memory.seq = c.seq;
    if (c.ranks_per_machine > 0) c.explain.memory.ranks_per_machine = c.ranks_per_machine;
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

// `accelctl config ...`: explain, validate and convert Accelerate/DeepSpeed config files.
//
//   accelctl config explain FILE [--deepspeed-config JSON] [--num-processes N]
//                                [--mixed-precision no|fp16|bf16] [--output text|json]
//                                [--micro-batch N --grad-accum N --grad-clip X --hidden-size H
//                                 --lr X --steps N] [--library-defaults]
//   accelctl config validate FILE...          (a .json file is checked as a DeepSpeed config)
//   accelctl config convert FILE [--deepspeed-config JSON] [--to deepspeed|fsdp] [-o PREFIX]
//
// Exit codes: 0 valid, 2 invalid input (bad file, unknown key, conflict, no equivalent, bad
// flags), 1 an I/O failure writing output. The functions below are what the subcommands run,
// callable from tests with their own streams and environment.
#pragma once

#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "engine/base/env.h"
#include "client/explain_memory.h"
#include "engine/config/inputs.h"

namespace accel::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitInvalid = 2;

struct ExplainArgs {
  std::string file;
  std::string deepspeed_config;
  std::optional<int> num_processes;
  std::string mixed_precision;  // empty = not given
  std::string output = "text";  // "text" or "json"
  config::JobSettings job;
  bool library_defaults = false;
  MemoryExplainArgs memory;  // --model / --model-config: the memory plan too
};

struct ConvertArgs {
  std::string file;
  std::string deepspeed_config;
  std::optional<int> num_processes;
  std::string to;             // "deepspeed", "fsdp", or empty = the other one
  std::string output_prefix;  // writes PREFIX.yaml (+ PREFIX.json); empty = stdout
};

int ConfigExplain(const ExplainArgs& args, const config::EnvMap& env, std::ostream& out,
                  std::ostream& err, Env* fs = Env::Default());
int ConfigValidate(const std::vector<std::string>& files, std::optional<int> num_processes,
                   const config::EnvMap& env, std::ostream& out, std::ostream& err,
                   Env* fs = Env::Default());
int ConfigConvert(const ConvertArgs& args, const config::EnvMap& env, std::ostream& out,
                  std::ostream& err, Env* fs = Env::Default());

// The flags of every config subcommand, as CLI11 fills them (0 / NaN = not given).
struct ConfigCommand {
  std::string chosen;  // "explain", "validate", "convert"; empty until one is parsed
  ExplainArgs explain;
  int explain_num_processes = 0;
  int64_t micro_batch = 0, grad_accum = 0, hidden_size = 0, steps = 0, seq = 0;
  int world = 0, ranks_per_machine = 0;
  double grad_clip = NAN, lr = NAN;
  std::vector<std::string> validate_files;
  int validate_num_processes_raw = 0;
  ConvertArgs convert;
  int convert_num_processes = 0;
};
// Registers `config` and its subcommands on `app`, filling *command when parsed. `command`
// must outlive `app`.
void AddConfigCommand(CLI::App& app, ConfigCommand* command);
// Runs the subcommand that app.parse() chose.
int RunParsedConfigCommand(ConfigCommand& command, const config::EnvMap& env, std::ostream& out,
                           std::ostream& err);

}  // namespace accel::client

// `accelctl ckpt ...`: offline tools for sharded checkpoints (engine/checkpoint).
//
//   accelctl ckpt consolidate STEP_DIR OUT.safetensors [--dtype fp32|bf16|fp16]
//       One Hugging Face model file (+ config.json beside it) from a sharded step,
//       streamed tensor by tensor (DeepSpeed's zero_to_fp32.py, `accelerate merge-weights`).
//       STEP_DIR may also be a checkpoint directory: its `latest` step is used.
//   accelctl ckpt inspect DIR [--output text|json] [--no-verify]
//       Steps, sizes, world size, strategy, `latest`; verifies every checksum unless
//       --no-verify (which reads only the metadata).
//
// Exit codes (as for `accelctl config`): 0 success; 1 a corrupt checkpoint (DataLoss) or an I/O
// failure; 2 invalid input (bad flags, missing directory, no model config in the checkpoint).
#pragma once

#include <iosfwd>
#include <string>

#include "CLI/CLI.hpp"
#include "engine/base/env.h"

namespace accel::client {

struct CkptCommand {
  std::string chosen;  // "consolidate" or "inspect"; empty until one is parsed
  // consolidate
  std::string step_dir;
  std::string out_path;
  std::string dtype = "fp32";
  // inspect
  std::string dir;
  std::string output = "text";
  bool no_verify = false;
};

// Registers `ckpt` and its subcommands on `app`, filling *command when parsed. `command` must
// outlive `app`.
void AddCkptCommands(CLI::App& app, CkptCommand* command);
// Runs the subcommand that app.parse() chose.
int RunParsedCkptCommand(const CkptCommand& command, std::ostream& out, std::ostream& err,
                         Env* fs = Env::Default());

int CkptConsolidate(const std::string& step_dir, const std::string& out_path,
                    const std::string& dtype, std::ostream& out, std::ostream& err,
                    Env* fs = Env::Default());
int CkptInspect(const std::string& dir, const std::string& output, bool verify, std::ostream& out,
                std::ostream& err, Env* fs = Env::Default());

}  // namespace accel::client

// accelctl's job commands, talking to acceld over gRPC (accel.v1.Coordinator):
//
//   accelctl [--server ADDR] [--token-file F] [--tls-ca PEM] COMMAND ...
//     submit JOB.yaml [--config accelerate.yaml] [--wait [--verbose]]   queue a job (--wait:
//                                   watch it to the end; exit 0 only if it SUCCEEDED)
//     status ID | list [--state S]... [--limit N] | cancel ID
//     delete ID...                  forget ended jobs (record, events, logs; not checkpoints)
//     watch ID [--from-seq N] [--verbose]   live progress, memory, checkpoints, state changes:
//                                   on a terminal one block redrawn in place (watch_view.h)
//     logs ID [-f] [--rank R]       the workers' output
//     checkpoints ID | cluster
//   Every command takes --output text|json (json: one object per line). watch and submit --wait
//   draw a live block when stdout is a terminal (ACCEL_FORCE_TTY=1/0 overrides; watch_view.h).
// --server defaults to $ACCEL_SERVER, else 127.0.0.1:7070; --token-file to $ACCEL_TOKEN_FILE,
// else ~/.local/state/accel/token (what acceld writes on its first start).
//
// Exit codes: 0 success; 2 invalid input (bad job file or flags, INVALID_ARGUMENT from acceld);
// 1 anything else (acceld unreachable, unknown job, a --wait job that did not succeed).
// watch and logs -f reconnect after a dropped connection (acceld restarting) and resume from
// the last sequence number they printed, so nothing is missed or repeated.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace accel::client {

struct JobCommand {
  std::string chosen;  // the subcommand that was parsed; empty until then
  // Global flags.
  std::string server;
  std::string token_file;
  std::string tls_ca;
  // Per command.
  std::string output = "text";
  std::string job_file;
  std::string accelerate_config;
  std::string deepspeed_config;
  bool wait = false;
  std::string job_id;
  std::vector<std::string> job_ids;  // delete
  int64_t from_seq = 0;
  bool follow = false;
  int rank = -1;
  std::vector<std::string> states;
  int limit = 0;
  bool verbose = false;  // watch, submit --wait: every event as a line (no block, no summaries)
  // Set by RunParsedJobCommand (IsTerminal): whether `out` is a terminal, and its columns.
  bool terminal = false;
  int terminal_width = 100;
  // How long watch / logs -f keep trying to reconnect to a restarting acceld.
  double reconnect_s = 120;
};

// Registers the global flags and the job subcommands on `app`; `command` must outlive `app`.
void AddJobCommands(CLI::App& app, JobCommand* command);
// Runs the subcommand app.parse() chose; returns the exit code.
int RunParsedJobCommand(JobCommand& command, std::ostream& out, std::ostream& err);

}  // namespace accel::client

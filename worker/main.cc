// accel-worker: one training rank. `--standalone` trains in this process without a coordinator;
// without it the worker runs under acceld (worker/daemon.h): register, rendezvous through the
// coordinator, train, stream events. `--generate` (first) generates text in this process
// instead, with `accelctl generate`'s flags (client/generate_command.h, docs/generate.md).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/generate_command.h"
#include "engine/base/logging.h"
#include "worker/daemon.h"
#include "worker/node_launcher.h"
#include "worker/standalone_config.h"
#include "worker/standalone.h"

int main(int argc, char** argv) {
  // accel-worker --generate ...: generation without acceld (client/generate_command.h).
  if (argc > 1 && std::string(argv[1]) == "--generate") {
    return accel::client::RunGenerateCommand(
        std::vector<std::string>(argv + 2, argv + argc), "accel-worker --generate", std::cout,
        std::cerr, {.chat_template = accel::client::DefaultChatTemplateLoader()});
  }
  CLI::App app{"accel-worker: one accel training rank"};
  // A flag given twice takes the last value (scripts append overrides to a default line).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  bool standalone = false;
  std::string log_level = "info";
  accel::worker::StandaloneFlags flags;
  flags.train.data = ACCEL_DEFAULT_DATA;
  app.add_flag("--standalone", standalone, "train in this process, without acceld");
  app.add_option("--log-level", log_level, "trace | debug | info | warn | error")
      ->capture_default_str();
  int nproc_per_node = 0;
  app.add_option("--nproc-per-node", nproc_per_node,
                 "run this node's K ranks as child processes (a pod or one Slurm task per "
                 "node; docs/worker.md)");
  accel::worker::AddStandaloneFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  if (!accel::SetLogLevel(log_level)) {
    std::fprintf(stderr, "accel-worker: unknown --log-level %s\n", log_level.c_str());
    return 2;
  }
  if (nproc_per_node > 0) {
    std::optional<accel::worker::MultiNodeKeys> keys;
    if (!flags.config.empty()) keys = accel::worker::PeekMultiNodeKeys(flags.config);
    absl::StatusOr<std::vector<accel::worker::LaunchVars>> ranks = accel::worker::NodeRankVars(
        accel::worker::ProcessLaunchVars(), nproc_per_node, keys);
    if (!ranks.ok()) {
      std::fprintf(stderr, "accel-worker: %s\n", std::string(ranks.status().message()).c_str());
      return 2;
    }
    return accel::worker::RunNodeLauncher(std::vector<std::string>(argv, argv + argc), *ranks);
  }
  if (!standalone) {
    // Daemon mode: started by acceld with the job's environment (ACCEL_COORDINATOR, RANK, ...).
    absl::StatusOr<accel::worker::DaemonEnv> env = accel::worker::DaemonEnvFromEnvironment();
    if (!env.ok()) {
      std::fprintf(stderr, "accel-worker: %s\n", std::string(env.status().message()).c_str());
      return 2;
    }
    absl::StatusOr<accel::worker::DaemonOutcome> outcome = accel::worker::RunDaemonWorker(*env);
    if (!outcome.ok()) {
      std::fprintf(stderr, "accel-worker: error: %s\n",
                   std::string(outcome.status().message()).c_str());
      return 1;
    }
    // acceld tells "checkpointed and stopped as asked" from success and from failure by this.
    return *outcome == accel::worker::DaemonOutcome::kCheckpointedOnRequest
               ? accel::worker::kExitCheckpointed
               : 0;
  }
  absl::Status status = accel::worker::RunStandalone(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "accel-worker: error: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}

// acceld: the accel coordinator daemon. Takes jobs over gRPC (accel.v1.Coordinator), runs each
// as a gang of accel-worker processes, and keeps every job, event and checkpoint record in
// SQLite under --state-dir. SIGTERM / SIGINT: stop the workers (SIGTERM, grace, SIGKILL) and
// exit; unfinished jobs resume on the next start. Flags: acceld_flags.h.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "engine/base/logging.h"
#include "server/acceld.h"
#include "server/acceld_flags.h"

int main(int argc, char** argv) {
  accel::server::AcceldOptions o;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (const int code = accel::server::ParseAcceldFlags(args, &o, std::cout, std::cerr);
      code != accel::server::kStartAcceld) {
    return code;
  }

  // Every thread inherits this mask, so the signals arrive only at sigwait below. Workers get
  // a clean mask (Supervisor).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<std::unique_ptr<accel::server::Acceld>> daemon = accel::server::Acceld::Start(o);
  if (!daemon.ok()) {
    std::fprintf(stderr, "acceld: error: %s\n", std::string(daemon.status().message()).c_str());
    // Input that cannot work (a taken state directory or socket, bad flags) is 2, as for flags.
    const absl::StatusCode code = daemon.status().code();
    return code == absl::StatusCode::kFailedPrecondition ||
                   code == absl::StatusCode::kInvalidArgument
               ? 2
               : 1;
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  ACCEL_LOG(info, "acceld: signal {}: stopping the workers and exiting", sig);
  (*daemon)->Shutdown();
  daemon->reset();
  return 0;
}

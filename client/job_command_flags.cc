// accelctl's job subcommands and their flags (the commands themselves: job_commands.cc).
#include <cstdlib>
#include <string>

#include "client/job_commands.h"

namespace accel::client {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

}  // namespace

void AddJobCommands(CLI::App& app, JobCommand* c) {
  c->server = EnvOr("ACCEL_SERVER", "");
  c->token_file = EnvOr("ACCEL_TOKEN_FILE", "");
  app.add_option("--server", c->server,
                 "acceld address: host:port or unix:/path (default $ACCEL_SERVER, else 127.0.0.1:7070)");
  app.add_option("--token-file", c->token_file,
                 "client token (default $ACCEL_TOKEN_FILE, else ~/.local/state/accel/token)");
  app.add_option("--tls-ca", c->tls_ca, "PEM CA certificate: connect with TLS");
  auto output = [c](CLI::App* sub) {
    sub->add_option("--output", c->output, "text | json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  };
  auto chosen = [c](CLI::App* sub, const char* name) {
    sub->callback([c, name] { c->chosen = name; });
  };
  CLI::App* submit = app.add_subcommand("submit", "queue a job described by a job file");
  submit->add_option("job_file", c->job_file, "job file (YAML; docs/job.md)")->required();
  submit->add_option("--config", c->accelerate_config,
                     "Accelerate config (overrides the job file's accelerate_config)");
  submit->add_option("--deepspeed-config", c->deepspeed_config,
                     "DeepSpeed JSON (overrides the job file's deepspeed_config)");
  submit->add_flag("--wait", c->wait, "watch the job to its end; exit 0 only if it SUCCEEDED");
  submit->add_flag("--verbose", c->verbose,
                   "with --wait: every event as a line (memory: one per rank), no live block");
  output(submit);
  chosen(submit, "submit");
  struct Simple {
    const char* name;
    const char* help;
  };
  for (const Simple& s : {Simple{"status", "show one job"}, Simple{"cancel", "cancel a job"},
                          Simple{"checkpoints", "list a job's checkpoints"}}) {
    const char* name = s.name;
    const char* help = s.help;
    CLI::App* sub = app.add_subcommand(name, help);
    sub->add_option("job_id", c->job_id, "job id (job-N)")->required();
    output(sub);
    chosen(sub, name);
  }
  CLI::App* del = app.add_subcommand(
      "delete", "forget ended jobs: record, events, logs (checkpoint files are kept)");
  del->add_option("job_ids", c->job_ids, "job ids (job-N); each must have ended")->required();
  output(del);
  chosen(del, "delete");
  CLI::App* list = app.add_subcommand("list", "list jobs, newest first");
  list->add_option("--state", c->states, "only jobs in this state (repeatable)");
  list->add_option("--limit", c->limit, "at most this many");
  output(list);
  chosen(list, "list");
  CLI::App* watch = app.add_subcommand("watch", "follow a job's progress, memory, checkpoints");
  watch->add_option("job_id", c->job_id, "job id")->required();
  watch->add_option("--from-seq", c->from_seq, "start after this event sequence number");
  watch->add_flag("--verbose", c->verbose,
                  "every event as a line (memory: one per rank), no live block on a terminal");
  output(watch);
  chosen(watch, "watch");
  CLI::App* logs = app.add_subcommand("logs", "the workers' output");
  logs->add_option("job_id", c->job_id, "job id")->required();
  logs->add_flag("-f,--follow", c->follow, "keep following until the job ends");
  logs->add_option("--rank", c->rank, "only this rank");
  logs->add_option("--from-seq", c->from_seq, "start after this event sequence number");
  output(logs);
  chosen(logs, "logs");
  CLI::App* cluster = app.add_subcommand("cluster", "slots, allocations and the queue");
  output(cluster);
  chosen(cluster, "cluster");
}

}  // namespace accel::client

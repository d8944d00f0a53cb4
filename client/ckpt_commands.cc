#include "client/ckpt_commands.h"

#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/consolidate.h"
#include "engine/checkpoint/inspect.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/tensor/dtype.h"

namespace accel::client {
namespace {

constexpr int kOk = 0;
constexpr int kFailure = 1;
constexpr int kInvalid = 2;

// DataLoss and I/O failures are 1; what the user asked for being wrong is 2.
int Fail(const absl::Status& s, std::ostream& err) {
  err << "error: " << s.message() << "\n";
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
      return kInvalid;
    default:
      return kFailure;
  }
}

}  // namespace

void AddCkptCommands(CLI::App& app, CkptCommand* c) {
  CLI::App* ckpt = app.add_subcommand("ckpt", "consolidate or inspect sharded checkpoints");
  ckpt->require_subcommand(1);

  CLI::App* consolidate = ckpt->add_subcommand(
      "consolidate",
      "write a Hugging Face model.safetensors (+ config.json) from a step; above 5 GB the "
      "sharded form: model-0000k-of-0000n.safetensors + model.safetensors.index.json beside OUT");
  consolidate->add_option("step_dir", c->step_dir, "DIR/step_N (or DIR: its latest step)")
      ->required();
  consolidate->add_option("out", c->out_path, "output .safetensors file")->required();
  consolidate->add_option("--dtype", c->dtype, "fp32 | bf16 | fp16")->capture_default_str();
  consolidate->callback([c] { c->chosen = "consolidate"; });

  CLI::App* inspect =
      ckpt->add_subcommand("inspect", "list steps, sizes, world size, strategy; verify checksums");
  inspect->add_option("dir", c->dir, "checkpoint directory or one step directory")->required();
  inspect->add_option("--output", c->output, "text | json")->capture_default_str();
  inspect->add_flag("--no-verify", c->no_verify, "read only the metadata, skip the checksums");
  inspect->callback([c] { c->chosen = "inspect"; });
}

int RunParsedCkptCommand(const CkptCommand& c, std::ostream& out, std::ostream& err, Env* fs) {
  if (c.chosen == "consolidate")
    return CkptConsolidate(c.step_dir, c.out_path, c.dtype, out, err, fs);
  if (c.chosen == "inspect") return CkptInspect(c.dir, c.output, !c.no_verify, out, err, fs);
  err << "error: no ckpt subcommand\n";
  return kInvalid;
}

int CkptConsolidate(const std::string& step_dir, const std::string& out_path,
                    const std::string& dtype, std::ostream& out, std::ostream& err, Env* fs) {
  absl::StatusOr<DType> parsed = ParseDType(dtype);
  if (!parsed.ok()) {
    err << "error: --dtype: \"" << dtype << "\" is not one of fp32, bf16, fp16\n";
    return kInvalid;
  }
  std::string source = step_dir;
  if (!fs->FileExists(JoinPath(step_dir, checkpoint::kMetadataFileName)) &&
      fs->FileExists(JoinPath(step_dir, checkpoint::kLatestFileName))) {
    absl::StatusOr<std::string> latest = checkpoint::LatestStepDir(fs, step_dir);
    if (!latest.ok()) return Fail(latest.status(), err);
    source = *latest;
  }
  const int64_t start = fs->NowMicros();
  checkpoint::ConsolidateOptions options;
  options.dtype = *parsed;
  absl::StatusOr<checkpoint::ConsolidateStats> stats =
      checkpoint::ConsolidateToSafetensors(fs, source, out_path, options);
  if (!stats.ok()) return Fail(stats.status(), err);
  const double seconds = (fs->NowMicros() - start) / 1e6;
  out << absl::StrFormat(
      "wrote %s: %d tensors, %d parameters, %s, %.1f MB, from step %d (world size %d) in %.2f s "
      "(%.0f MB/s); config.json beside it\n",
      stats->files.size() > 1
          ? absl::StrCat(stats->files.size() - 1, " shards and ", checkpoint::kHfIndexFileName,
                         " in ", DirName(out_path))
          : out_path,
      stats->tensors, stats->params, DTypeName(*parsed), stats->bytes_written / 1e6,
      stats->step, stats->world_size, seconds,
      seconds > 0 ? stats->bytes_written / 1e6 / seconds : 0.0);
  return kOk;
}

int CkptInspect(const std::string& dir, const std::string& output, bool verify, std::ostream& out,
                std::ostream& err, Env* fs) {
  if (output != "text" && output != "json") {
    err << "error: --output: \"" << output << "\" is not one of text, json\n";
    return kInvalid;
  }
  absl::StatusOr<checkpoint::InspectReport> report =
      checkpoint::InspectCheckpoints(fs, dir, verify);
  if (!report.ok()) return Fail(report.status(), err);
  if (output == "json") {
    out << checkpoint::InspectReportToJson(*report) << "\n";
  } else {
    out << checkpoint::InspectReportToText(*report);
  }
  return report->ok() ? kOk : kFailure;
}

}  // namespace accel::client

// The standalone run's terminal (terminal_sink.h).
#include "worker/terminal_sink.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/status_macros.h"
#include "engine/generate/training_sample.h"
#include "engine/train/metrics.h"

namespace accel::worker {
namespace {

std::string FormatDuration(double seconds) {
  int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

}  // namespace

std::string FormatProgress(const train::StepMetrics& m) {
  return absl::StrFormat(
      "step %*d/%d | loss %.4f | lr %.2e | grad norm %.3f%s | %.0f tok/s | %.0f ms/step | ETA %s",
      static_cast<int>(std::to_string(m.total_steps).size()), m.step + 1, m.total_steps, m.loss,
      m.lr, m.grad_norm, m.skipped ? " (skipped: non-finite)" : "", m.tokens_per_s,
      m.step_seconds * 1e3, FormatDuration(m.eta_seconds));
}

namespace {

// "resident 851204 kB, peak 2201004 kB" from /proc/self/status (VmRSS, VmHWM): what the kernel
// says this process holds in RAM, which offload to files lowers and the ledger cannot show.
std::string ResidentSetSummary() {
  std::ifstream status("/proc/self/status");
  std::string line, rss = "?", hwm = "?";
  while (std::getline(status, line)) {
    auto value = [&](const char* key) {
      return absl::StartsWith(line, key)
                 ? std::string(absl::StripAsciiWhitespace(line.substr(std::strlen(key))))
                 : std::string();
    };
    if (std::string v = value("VmRSS:"); !v.empty()) rss = v;
    if (std::string v = value("VmHWM:"); !v.empty()) hwm = v;
  }
  return absl::StrCat("resident ", rss, ", peak ", hwm);
}

// This process's bytes read from and written to storage so far (/proc/self/io read_bytes,
// write_bytes): what offload to files costs the disk. {-1, -1} where the kernel does not say.
std::pair<int64_t, int64_t> ProcessDiskBytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0, read = -1, written = -1;
  while (io >> key >> value) {
    if (key == "read_bytes:") read = value;
    if (key == "write_bytes:") written = value;
  }
  return {read, written};
}

// The terminal: rank 0 speaks for the gang (progress, metrics file, checkpoints, the saved
// model); text lines, or JSON lines with --output json.
class TerminalSink final : public RankSink {
 public:
  TerminalSink(const StandaloneFlags& f, int rank, int threads, DType save_dtype)
      : f_(f), speaker_(rank == 0), json_(f.output == "json"), threads_(threads),
        save_dtype_(save_dtype) {}

  absl::Status Started(const RankContext& rank) override {
    const train::Trainer& trainer = *rank.trainer;
    const model::ModelConfig& config = trainer.layout().config();
    if (!json_ && speaker_) {
      std::printf("accel-worker standalone: %s on %s, model %s (%lld params: %s), data %s, "
                  "B=%lld T=%lld accum=%lld, %d threads\n",
                  trainer.sharded().plan().Describe().c_str(), trainer.device().c_str(),
                  config.name().c_str(), static_cast<long long>(config.NumParams()),
                  config.Describe().c_str(), f_.train.data.c_str(),
                  static_cast<long long>(f_.train.batch), static_cast<long long>(f_.train.seq),
                  static_cast<long long>(f_.train.grad_accum), threads_);
      if (!trainer.matmuls().empty()) std::printf("matmuls: %s\n", trainer.matmuls().c_str());
      if (trainer.step() > 0) {
        std::printf("resumed at step %lld from %s\n", static_cast<long long>(trainer.step()),
                    f_.train.resume_dir.c_str());
      }
      std::fflush(stdout);
    }
    disk_before_ = ProcessDiskBytes();
    if (!f_.metrics_out.empty() && speaker_) {
      ACCEL_ASSIGN_OR_RETURN(metrics_,
                             train::MetricsWriter::Open(Env::Default(), f_.metrics_out));
    }
    return absl::OkStatus();
  }

  absl::Status Step(const train::StepMetrics& m) override {
    if (metrics_) ACCEL_RETURN_IF_ERROR(metrics_->Write(m));
    if (!speaker_) return absl::OkStatus();
    const bool last = m.step + 1 == m.total_steps;
    // Offload to files: what this rank's step read from and wrote to the disk.
    std::pair<int64_t, int64_t> disk = {-1, -1};
    if (!f_.train.shard.offload_dir.empty() || !f_.train.shard.offload_param_dir.empty()) {
      const auto now = ProcessDiskBytes();
      if (now.first >= 0 && disk_before_.first >= 0) {
        disk = {now.first - disk_before_.first, now.second - disk_before_.second};
      }
      disk_before_ = now;
    }
    if (json_) {
      std::string line = train::StepMetricsToJson(m);
      if (disk.first >= 0 && !line.empty() && line.back() == '}') {
        line.pop_back();
        absl::StrAppend(&line, ",\"disk_read_bytes\":", disk.first, ",\"disk_write_bytes\":",
                        disk.second, "}");
      }
      std::printf("%s\n", line.c_str());
    } else if (m.step == 0 || last || (m.step + 1) % f_.spec.train().log_every() == 0) {
      std::printf("%s%s\n", FormatProgress(m).c_str(),
                  disk.first < 0 ? ""
                                 : absl::StrFormat(" | disk read %.2f GB, written %.2f GB",
                                                   disk.first / 1e9, disk.second / 1e9)
                                       .c_str());
    }
    std::fflush(stdout);
    return absl::OkStatus();
  }

  absl::Status Checkpoint(const train::CheckpointEvent& e) override {
    if (!speaker_) return absl::OkStatus();
    if (json_) {
      std::string rank_bytes;
      for (size_t r = 0; r < e.rank_bytes.size(); ++r) {
        absl::StrAppend(&rank_bytes, r == 0 ? "" : ",", e.rank_bytes[r]);
      }
      std::printf("{\"event\":\"checkpoint\",\"step\":%lld,\"path\":\"%s\",\"kind\":\"%s\","
                  "\"bytes\":%lld,\"rank_bytes\":[%s],\"seconds\":%.3f}\n",
                  static_cast<long long>(e.step), e.path.c_str(), e.kind.c_str(),
                  static_cast<long long>(e.bytes), rank_bytes.c_str(), e.seconds);
    } else {
      std::printf("checkpoint step %lld -> %s (%s, %.1f MB over %zu ranks, %.1f MB on rank 0, "
                  "%.2f s)\n",
                  static_cast<long long>(e.step), e.path.c_str(), e.kind.c_str(), e.bytes / 1e6,
                  e.rank_bytes.size(), e.rank_bytes.empty() ? 0.0 : e.rank_bytes[0] / 1e6,
                  e.seconds);
    }
    std::fflush(stdout);
    return absl::OkStatus();
  }

  absl::Status Eval(const train::EvalMetrics& e) override {
    if (!speaker_) return absl::OkStatus();
    if (json_) {
      std::printf("{\"event\":\"eval\",%s\n", train::EvalMetricsToJson(e).substr(1).c_str());
    } else {
      std::printf("eval step %lld: loss %.6f perplexity %.3f (%lld targets, %lld batches, "
                  "%.0f tok/s)\n",
                  static_cast<long long>(e.step), e.loss, e.perplexity,
                  static_cast<long long>(e.tokens), static_cast<long long>(e.batches),
                  e.tokens_per_s);
    }
    std::fflush(stdout);
    return absl::OkStatus();
  }

  absl::Status Sample(const train::SampleResult& s) override {
    if (json_) {
      std::printf("{\"event\":\"sample\",%s\n", train::SampleResultToJson(s).substr(1).c_str());
    } else {
      std::printf("%s\n", generate::SampleLine(s.step, s.text).c_str());
    }
    std::fflush(stdout);
    return absl::OkStatus();
  }

  absl::Status Finished(const RankContext& rank) override {
    if (metrics_) ACCEL_RETURN_IF_ERROR(metrics_->Close());
    if (!f_.save_final.empty()) {
      ACCEL_RETURN_IF_ERROR(rank.trainer->SaveWeights(f_.save_final, save_dtype_));
      if (!json_ && speaker_) std::printf("saved %s\n", f_.save_final.c_str());
    }
    if (!json_ && speaker_) {
      std::printf("memory (bytes): %s\n", rank.trainer->ledger()->ToJson().c_str());
      std::printf("process memory: %s\n", ResidentSetSummary().c_str());
    }
    return absl::OkStatus();
  }

 private:
  const StandaloneFlags& f_;
  const bool speaker_;
  const bool json_;
  const int threads_;
  const DType save_dtype_;
  std::unique_ptr<train::MetricsWriter> metrics_;
  std::pair<int64_t, int64_t> disk_before_ = {-1, -1};  // ProcessDiskBytes at the last step
};

}  // namespace

std::unique_ptr<RankSink> MakeTerminalSink(const StandaloneFlags& f, int rank, int threads,
                                           DType save_dtype) {
  return std::make_unique<TerminalSink>(f, rank, threads, save_dtype);
}

}  // namespace accel::worker

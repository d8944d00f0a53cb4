// Activation checkpointing: what per-block recompute saves and what it costs. One process trains
// a GPT-2 shape at B×T with the activations kept and with every block checkpointed
// (TrainOptions::activation_checkpointing), and prints for each the median step time, the
// activation bytes the ledger charged (its peak, device pool), the process's peak RSS, and
// the ratios against the run that keeps the activations (the baseline, same run).
//
//   accel_bench_activation_checkpointing [--model gpt2] [--batch 8] [--seq 1024] [--threads 2]
//                                        [--steps 2] [--warmup 0] [--output text|json]
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "engine/kernels/threading.h"
#include "engine/train/trainer.h"
#include "nlohmann/json.hpp"

namespace {

struct Result {
  double step_seconds = 0;      // median
  int64_t activation_peak = 0;  // bytes, the ledger's device/activations peak
  double peak_rss_gb = 0;       // the process's, after this run
};

double PeakRssGb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0 / 1e9;
}

absl::StatusOr<Result> Run(const std::string& model, const std::string& data, int64_t batch,
                           int64_t seq, int64_t warmup, int64_t steps, bool checkpoint) {
  accel::train::TrainOptions o;
  o.model = model;
  o.data = data;
  o.batch = batch;
  o.seq = seq;
  o.steps = warmup + steps;
  o.schedule.base_lr = 1e-4f;
  o.activation_checkpointing = checkpoint;
  o.rank_stats_every = 1;
  // A ledger of its own: the peaks are this run's alone.
  accel::MemoryLedger ledger;
  auto trainer = accel::train::Trainer::Create(o, {}, accel::Env::Default(), &ledger);
  if (!trainer.ok()) return trainer.status();
  std::vector<double> times;
  Result r;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    std::fprintf(stderr, "  %s step %lld/%lld\n", checkpoint ? "checkpointed" : "kept",
                 static_cast<long long>(s + 1), static_cast<long long>(warmup + steps));
    auto m = (*trainer)->TrainStep();
    if (!m.ok()) return m.status();
    if (s >= warmup) times.push_back(m->step_seconds);
    const auto& memory = m->ranks.at(0).memory;
    r.activation_peak = std::max(
        r.activation_peak,
        memory[static_cast<int>(accel::MemoryPool::kDevice) * accel::kNumMemoryCategories +
               static_cast<int>(accel::MemoryCategory::kActivations)]
            .peak);
  }
  std::sort(times.begin(), times.end());
  r.step_seconds = times[times.size() / 2];
  r.peak_rss_gb = PeakRssGb();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"accel activation checkpointing benchmark"};
  std::string model = "gpt2", data = ACCEL_DEFAULT_DATA, output = "text";
  int64_t batch = 8, seq = 1024, steps = 2, warmup = 0;
  int threads = 2;
  app.add_option("--model", model)->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--seq", seq)->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  app.add_option("--steps", steps, "timed steps (median reported)")->capture_default_str();
  app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str();
  app.add_option("--data", data)->capture_default_str();
  app.add_option("--output", output, "text | json")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (steps < 1) {
    std::fprintf(stderr, "error: --steps must be at least 1\n");
    return 2;
  }
  accel::kernels::SetNumThreads(threads);

  // Kept first: it is the baseline, and the peak RSS only grows, so the checkpointed run's RSS
  // column is the larger of the two (its own activations are in the ledger column).
  auto kept = Run(model, data, batch, seq, warmup, steps, false);
  if (!kept.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(kept.status().message()).c_str());
    return 1;
  }
  auto recomputed = Run(model, data, batch, seq, warmup, steps, true);
  if (!recomputed.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(recomputed.status().message()).c_str());
    return 1;
  }
  nlohmann::json results = nlohmann::json::array();
  for (const auto& [name, r] : {std::pair("kept", *kept), std::pair("checkpointed", *recomputed)}) {
    results.push_back({{"model", model}, {"batch", batch}, {"seq", seq}, {"threads", threads},
                       {"activations", name}, {"step_s_median", r.step_seconds},
                       {"activation_peak_bytes", r.activation_peak},
                       {"time_vs_kept", r.step_seconds / kept->step_seconds},
                       {"activations_vs_kept",
                        static_cast<double>(r.activation_peak) / kept->activation_peak},
                       {"process_peak_rss_gb", r.peak_rss_gb}});
  }
  if (output == "json") {
    std::printf("%s\n", results.dump(2).c_str());
    return 0;
  }
  std::printf("%-13s %10s %16s %12s %14s\n", "activations", "step s", "activations GB",
              "time ×kept", "activations ×");
  for (const auto& r : results) {
    std::printf("%-13s %10.2f %16.2f %12.2f %14.3f\n",
                r["activations"].get<std::string>().c_str(), r["step_s_median"].get<double>(),
                r["activation_peak_bytes"].get<int64_t>() / 1e9, r["time_vs_kept"].get<double>(),
                r["activations_vs_kept"].get<double>());
  }
  return 0;
}

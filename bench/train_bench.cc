// Training throughput: tokens/s of full optimizer steps (forward, backward, clipping, AdamW) for
// GPT-2 shapes at B=4, T=64 on 1 and 2 threads, with achieved GFLOP/s (6·N·tokens + attention)
// beside this machine's fp32 FMA peak measured in the same run (the baseline: fraction of peak;
// the CPU's model, key ISA flags and the peak per core and on all threads are printed first).
// --dtypes fp32,bf16 adds bf16 mixed precision (bf16 params and matmuls where the CPU has bf16
// dot products, fp32 masters) with its speed against fp32 in the same run ("vs fp32").
//
//   accel_bench_train [--models gpt2,small] [--threads 1,2] [--dtypes fp32] [--steps 5]
//                     [--warmup 1] [--batch 4] [--seq 64] [--output text|json]
// "small" is L=4, C=256, NH=4, V=50257 (the llm.c comparison shape); any preset of any
// architecture works (docs/models.md), e.g. --models gpt2,smollm-135m --batch 4 --seq 256 for the
// Llama-family figure next to GPT-2's. Data: the bundled text.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "bench/bench_models.h"
#include "bench/machine.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/kernels/threading.h"
#include "engine/model/model_config.h"
#include "engine/train/trainer.h"
#include "nlohmann/json.hpp"

namespace {

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// Sorted step seconds of `steps` timed steps after `warmup` untimed ones.
absl::StatusOr<std::vector<double>> TimeSteps(const std::string& config_path,
                                              const std::string& data, int64_t batch, int64_t seq,
                                              int64_t warmup, int64_t steps, accel::DType dtype) {
  accel::train::TrainOptions o;
  o.model_config = config_path;
  o.data = data;
  o.batch = batch;
  o.seq = seq;
  o.steps = warmup + steps;
  o.schedule.base_lr = 1e-4f;
  o.adamw.weight_decay = 0.1f;
  o.shard.param_dtype = o.shard.reduce_dtype = dtype;
  auto trainer = accel::train::Trainer::Create(o);
  if (!trainer.ok()) return trainer.status();
  std::vector<double> times;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    auto m = (*trainer)->TrainStep();
    if (!m.ok()) return m.status();
    if (s >= warmup) times.push_back(m->step_seconds);
  }
  std::sort(times.begin(), times.end());
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"accel training throughput benchmark"};
  std::string models = "small,gpt2", threads_list = "1,2", dtypes = "fp32", output = "text";
  std::string data = ACCEL_DEFAULT_DATA, scratch = "/tmp";
  int64_t steps = 5, warmup = 1, batch = 4, seq = 64;
  app.add_option("--models", models)->capture_default_str();
  app.add_option("--threads", threads_list)->capture_default_str();
  app.add_option("--dtypes", dtypes, "fp32, bf16 (mixed precision)")->capture_default_str();
  app.add_option("--steps", steps, "timed steps (median reported)")->capture_default_str();
  app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--seq", seq)->capture_default_str();
  app.add_option("--data", data)->capture_default_str();
  app.add_option("--scratch", scratch, "directory for the temporary config.json")->capture_default_str();
  app.add_option("--output", output, "text | json")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const bool json = output == "json";

  std::vector<int> thread_counts;
  for (const std::string& t : std::vector<std::string>(absl::StrSplit(threads_list, ','))) {
    thread_counts.push_back(std::stoi(t));
  }
  // The peak on the most threads asked for (all started together) and on one core; another
  // thread count in between gets its own concurrent measurement below.
  const int max_threads = *std::max_element(thread_counts.begin(), thread_counts.end());
  const accel::bench::Machine machine = accel::bench::MeasureMachine(max_threads);
  auto peak_for = [&](int threads) {
    if (threads == 1) return machine.peak.per_core_gflops;
    if (threads == max_threads) return machine.peak.all_core_gflops;
    return accel::bench::MeasureFmaPeak(threads).all_core_gflops;
  };
  nlohmann::json results = nlohmann::json::array();
  if (!json) {
    std::printf("%s", accel::bench::MachineText(machine).c_str());
    std::printf("%-12s %3s %-5s %10s %10s %10s %10s %8s %8s %9s\n", "model", "thr", "dtype",
                "step ms", "tok/s", "GFLOP/s", "FMA peak", "of peak", "vs fp32", "RSS MiB");
  }
  for (const int threads : thread_counts) {
    accel::kernels::SetNumThreads(threads);
    const double peak = peak_for(threads);
    for (const std::string& name : std::vector<std::string>(absl::StrSplit(models, ','))) {
      // A preset of any architecture (smollm-135m next to gpt2 compares the two at one size).
      auto written = accel::bench::WriteBenchModel(name, scratch, "");
      if (!written.ok()) {
        std::fprintf(stderr, "error: %s\n", std::string(written.status().message()).c_str());
        return 1;
      }
      const accel::model::ModelConfig* config = &written->first;
      const std::string& cfg_path = written->second;
      double fp32_tok_s = 0;
      for (const std::string& dtype : std::vector<std::string>(absl::StrSplit(dtypes, ','))) {
        auto param_dtype = accel::ParseDType(dtype);
        if (!param_dtype.ok()) {
          std::fprintf(stderr, "error: --dtypes: %s\n",
                       std::string(param_dtype.status().message()).c_str());
          return 1;
        }
        auto times = TimeSteps(cfg_path, data, batch, seq, warmup, steps, *param_dtype);
        if (!times.ok()) {
          std::fprintf(stderr, "error: %s\n", std::string(times.status().message()).c_str());
          return 1;
        }
        const double median = (*times)[times->size() / 2];
        const double tok_s = static_cast<double>(batch * seq) / median;
        const double gflops = config->TrainFlopsPerToken(seq) * tok_s * 1e-9;
        if (*param_dtype == accel::DType::kF32) fp32_tok_s = tok_s;
        const double vs_fp32 = fp32_tok_s > 0 ? tok_s / fp32_tok_s : 0;
        const bool bf16_matmuls =
            *param_dtype == accel::DType::kBF16 && accel::kernels::Bf16MatmulIsNative();
        nlohmann::json r = {{"model", name},         {"params", config->NumParams()},
                            {"threads", threads},    {"dtype", dtype},
                            {"bf16_matmuls", bf16_matmuls},
                            {"batch", batch},        {"seq", seq},
                            {"step_ms_median", median * 1e3},
                            {"step_ms_min", times->front() * 1e3},
                            {"tokens_per_s", tok_s}, {"gflops", gflops},
                            {"fma_peak_gflops", peak}, {"fraction_of_peak", gflops / peak},
                            {"vs_fp32", vs_fp32},    {"peak_rss_mib", PeakRssMiB()}};
        results.push_back(r);
        if (!json) {
          std::printf("%-12s %3d %-5s %10.1f %10.1f %10.1f %10.1f %7.1f%% %7.2fx %9.0f\n",
                      name.c_str(), threads, dtype.c_str(), median * 1e3, tok_s, gflops, peak,
                      100.0 * gflops / peak, vs_fp32, PeakRssMiB());
          std::fflush(stdout);
        }
      }
    }
  }
  if (json) {
    nlohmann::json out = accel::bench::MachineJson(machine);
    out["results"] = results;
    std::printf("%s\n", out.dump(2).c_str());
  }
  return 0;
}

// Evaluation throughput against training throughput (issue 31): in one run and one trainer, the
// tokens/s of full optimizer steps (forward, backward, clipping, AdamW) and of evaluation
// (Trainer::Evaluate: forward only, no backward, no optimizer) at the same (B, T) and model,
// and their ratio (the goal: evaluation at least 2.5× training).
//
//   accel_bench_eval [--models gpt2-tiny,small] [--dtypes fp32] [--threads 2] [--steps 5]
//                    [--eval-batches 10] [--batch 4] [--seq 64] [--output text|json]
// Data: the bundled text (training and evaluation read it; evaluation its first batches).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "bench/bench_models.h"
#include "engine/kernels/threading.h"
#include "engine/train/trainer.h"
#include "nlohmann/json.hpp"

namespace {

struct Throughput {
  double train_tok_s = 0, eval_tok_s = 0;
};

// Median tokens/s of `steps` training steps (after one untimed) and of `repeats` evaluations of
// `eval_batches` batches (after one untimed), on one trainer.
absl::StatusOr<Throughput> Measure(const std::string& config_path, const std::string& data,
                                   int64_t batch, int64_t seq, int64_t steps,
                                   int64_t eval_batches, accel::DType dtype) {
  accel::train::TrainOptions o;
  o.model_config = config_path;
  o.data = o.eval.data = data;
  o.eval.max_batches = eval_batches;
  o.batch = batch;
  o.seq = seq;
  o.steps = steps + 1;
  o.schedule.base_lr = 1e-4f;
  o.shard.param_dtype = o.shard.reduce_dtype = dtype;
  auto trainer = accel::train::Trainer::Create(o);
  if (!trainer.ok()) return trainer.status();
  std::vector<double> train, eval;
  for (int64_t s = 0; s <= steps; ++s) {
    auto m = (*trainer)->TrainStep();
    if (!m.ok()) return m.status();
    if (s > 0) train.push_back(m->tokens_per_s);
  }
  for (int r = 0; r <= 3; ++r) {
    auto e = (*trainer)->Evaluate();
    if (!e.ok()) return e.status();
    if (r > 0) eval.push_back(e->tokens_per_s);
  }
  std::sort(train.begin(), train.end());
  std::sort(eval.begin(), eval.end());
  return Throughput{train[train.size() / 2], eval[eval.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"accel evaluation vs training throughput"};
  std::string models = "gpt2-tiny,small", dtypes = "fp32", output = "text";
  std::string data = ACCEL_DEFAULT_DATA, scratch = "/tmp";
  int threads = 2;
  int64_t steps = 5, eval_batches = 10, batch = 4, seq = 64;
  app.add_option("--models", models)->capture_default_str();
  app.add_option("--dtypes", dtypes, "fp32, bf16 (mixed precision)")->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  app.add_option("--steps", steps, "timed training steps (median)")->capture_default_str();
  app.add_option("--eval-batches", eval_batches, "batches per evaluation")->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--seq", seq)->capture_default_str();
  app.add_option("--data", data)->capture_default_str();
  app.add_option("--scratch", scratch, "directory for the temporary config.json")
      ->capture_default_str();
  app.add_option("--output", output, "text | json")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  accel::kernels::SetNumThreads(threads);
  const bool json = output == "json";
  nlohmann::json results = nlohmann::json::array();
  if (!json) {
    std::printf("%-12s %-5s %12s %12s %8s\n", "model", "dtype", "train tok/s", "eval tok/s",
                "eval/train");
  }
  for (const std::string& name : std::vector<std::string>(absl::StrSplit(models, ','))) {
    auto written = accel::bench::WriteBenchModel(name, scratch, "eval_");
    if (!written.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(written.status().message()).c_str());
      return 1;
    }
    for (const std::string& dtype : std::vector<std::string>(absl::StrSplit(dtypes, ','))) {
      absl::StatusOr<Throughput> t = absl::InvalidArgumentError("--dtypes: " + dtype);
      if (auto param_dtype = accel::ParseDType(dtype); param_dtype.ok()) {
        t = Measure(written->second, data, batch, seq, steps, eval_batches, *param_dtype);
      }
      if (!t.ok()) {
        std::fprintf(stderr, "error: %s\n", std::string(t.status().message()).c_str());
        return 1;
      }
      const double ratio = t->train_tok_s > 0 ? t->eval_tok_s / t->train_tok_s : 0;
      results.push_back({{"model", name}, {"dtype", dtype}, {"threads", threads},
                         {"batch", batch}, {"seq", seq},
                         {"train_tokens_per_s", t->train_tok_s},
                         {"eval_tokens_per_s", t->eval_tok_s}, {"eval_over_train", ratio}});
      if (!json) {
        std::printf("%-12s %-5s %12.1f %12.1f %7.2fx\n", name.c_str(), dtype.c_str(),
                    t->train_tok_s, t->eval_tok_s, ratio);
        std::fflush(stdout);
      }
    }
  }
  if (json) std::printf("%s\n", results.dump(2).c_str());
  return 0;
}

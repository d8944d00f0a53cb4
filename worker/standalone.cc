#include "worker/standalone.h"

#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/threading.h"

namespace accel::worker {
namespace {

std::string FormatDuration(double seconds) {
  int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

std::string FormatProgress(const train::StepMetrics& m) {
  return absl::StrFormat(
      "step %*d/%d | loss %.4f | lr %.2e | grad norm %.3f%s | %.0f tok/s | %.0f ms/step | ETA %s",
      static_cast<int>(std::to_string(m.total_steps).size()), m.step + 1, m.total_steps, m.loss,
      m.lr, m.grad_norm, m.skipped ? " (skipped: non-finite)" : "", m.tokens_per_s,
      m.step_seconds * 1e3, FormatDuration(m.eta_seconds));
}

}  // namespace

void AddStandaloneFlags(CLI::App& app, StandaloneFlags& f) {
  train::TrainOptions& t = f.train;
  app.add_option("--model", t.model, "model preset (gpt2-tiny, gpt2-mini, gpt2, gpt2-medium, "
                                     "gpt2-large, gpt2-xl)")->capture_default_str();
  app.add_option("--model-config", t.model_config, "Hugging Face GPT-2 config.json (wins over --model)");
  app.add_option("--init-weights", t.init_weights, "model.safetensors to start from (HF GPT-2 names)");
  app.add_option("--data", t.data, "llm.c token shard (.bin) or a text file read as bytes")
      ->capture_default_str();
  app.add_option("--batch", t.batch, "micro-batch size B")->capture_default_str();
  app.add_option("--seq", t.seq, "sequence length T")->capture_default_str();
  app.add_option("--steps", t.steps, "optimizer steps")->capture_default_str();
  app.add_option("--grad-accum", t.grad_accum, "micro-batches per optimizer step")->capture_default_str();
  app.add_option("--lr", t.schedule.base_lr, "peak learning rate")->capture_default_str();
  app.add_option("--min-lr", t.schedule.min_lr, "final learning rate of linear/cosine")->capture_default_str();
  app.add_option("--warmup", t.schedule.warmup_steps, "linear warmup steps")->capture_default_str();
  app.add_option("--schedule", f.schedule, "constant | linear | cosine")->capture_default_str();
  app.add_option("--weight-decay", t.adamw.weight_decay, "AdamW decoupled weight decay (rank >= 2 params)")
      ->capture_default_str();
  app.add_option("--beta1", t.adamw.beta1, "AdamW beta1")->capture_default_str();
  app.add_option("--beta2", t.adamw.beta2, "AdamW beta2")->capture_default_str();
  app.add_option("--eps", t.adamw.eps, "AdamW epsilon")->capture_default_str();
  app.add_option("--grad-clip", t.grad_clip, "global-norm clipping threshold; 0 turns it off")
      ->capture_default_str();
  app.add_option("--seed", t.seed, "initialisation seed")->capture_default_str();
  app.add_option("--shuffle", f.shuffle, "shuffle data windows with this seed (default: llm.c order)");
  app.add_option("--threads", f.threads, "compute threads (0 = all cores)")->capture_default_str();
  app.add_option("--log-every", f.log_every, "print progress every N steps")->capture_default_str();
  app.add_option("--metrics-out", f.metrics_out, "write one JSON line per step to this file");
  app.add_option("--save-final", f.save_final, "write the final weights (HF model.safetensors)");
  app.add_option("--save-dtype", f.save_dtype, "dtype of --save-final: f32 | bf16 | f16")
      ->capture_default_str();
  app.add_option("--output", f.output, "text | json (JSON lines on stdout)")->capture_default_str();
}

absl::Status RunStandalone(StandaloneFlags f) {
  if (f.output != "text" && f.output != "json") {
    return absl::InvalidArgumentError(absl::StrCat("--output must be text or json, got ", f.output));
  }
  ACCEL_ASSIGN_OR_RETURN(f.train.schedule.kind, optim::ParseScheduleKind(f.schedule));
  ACCEL_ASSIGN_OR_RETURN(DType save_dtype, ParseDType(f.save_dtype));
  if (f.shuffle >= 0) f.train.shuffle_seed = static_cast<uint64_t>(f.shuffle);
  if (f.log_every <= 0) f.log_every = 1;
  const int threads = f.threads > 0 ? f.threads : static_cast<int>(std::thread::hardware_concurrency());
  kernels::SetNumThreads(threads);

  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer, train::Trainer::Create(f.train));
  const model::Gpt2Config& config = trainer->layout().config();
  const bool json = f.output == "json";
  if (!json) {
    std::printf("accel-worker standalone: model %s (%lld params: L=%lld C=%lld NH=%lld V=%lld), "
                "data %s, B=%lld T=%lld accum=%lld, %d threads\n",
                config.name.c_str(), static_cast<long long>(config.NumParams()),
                static_cast<long long>(config.n_layer), static_cast<long long>(config.n_embd),
                static_cast<long long>(config.n_head), static_cast<long long>(config.vocab_size),
                f.train.data.c_str(), static_cast<long long>(f.train.batch),
                static_cast<long long>(f.train.seq), static_cast<long long>(f.train.grad_accum),
                threads);
    std::fflush(stdout);
  }
  std::unique_ptr<train::MetricsWriter> metrics;
  if (!f.metrics_out.empty()) {
    ACCEL_ASSIGN_OR_RETURN(metrics, train::MetricsWriter::Open(Env::Default(), f.metrics_out));
  }
  ACCEL_RETURN_IF_ERROR(trainer->Train([&](const train::StepMetrics& m) -> absl::Status {
    if (metrics) ACCEL_RETURN_IF_ERROR(metrics->Write(m));
    const bool last = m.step + 1 == m.total_steps;
    if (json) {
      std::printf("%s\n", train::StepMetricsToJson(m).c_str());
    } else if (m.step == 0 || last || (m.step + 1) % f.log_every == 0) {
      std::printf("%s\n", FormatProgress(m).c_str());
    }
    std::fflush(stdout);
    return absl::OkStatus();
  }));
  if (metrics) ACCEL_RETURN_IF_ERROR(metrics->Close());
  if (!f.save_final.empty()) {
    ACCEL_RETURN_IF_ERROR(trainer->SaveWeights(f.save_final, save_dtype));
    if (!json) std::printf("saved %s\n", f.save_final.c_str());
  }
  if (!json) {
    std::printf("memory (bytes): %s\n", trainer->ledger()->ToJson().c_str());
  }
  return absl::OkStatus();
}

}  // namespace accel::worker

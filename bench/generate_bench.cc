// accel_bench_generate: generation tokens per second at batch 1 (a prompt of P tokens, N new
// tokens, greedy) for model presets with random weights, fp32 and bf16, against the PyTorch peer
// (bench/peers/generate_peer.py: plain-torch eager with a KV cache) run in the same invocation
// on the same shape and thread count. Prints one line per (model, dtype) with the ratio.
//
//   accel_bench_generate [--models gpt2,smollm-135m] [--dtypes fp32,bf16] [--prompt 128]
//                        [--new 128] [--threads N] [--python /usr/bin/python3] [--no-peer]
//                        [--output text|json]
//
// tokens/s counts the N new tokens over the whole call (prefill + decode), both sides; decode
// tok/s the new tokens over the decode alone, and weights GB/s what that decode reads if every
// parameter is read once per token (params × 4 or 2 bytes × decode tok/s: the lm_head reads the
// tied embedding whole; the position table and the embedding rows a token does not use are
// counted though not read, under 2% for gpt2), to set against the machine's memory bandwidth.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "engine/generate/generator.h"
#include "engine/model/model_config.h"
#include "engine/model/registry.h"
#include "nlohmann/json.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  double prefill_s = 0, total_s = 0, tokens_per_s = 0;
  // The new tokens over the decode alone (total - prefill): each costs one pass over the weights.
  double decode_tokens_per_s(int new_tokens) const {
    return total_s > prefill_s ? new_tokens / (total_s - prefill_s) : 0;
  }
};

Result RunAccel(const accel::model::ModelLayout& layout, const std::vector<float>& params,
                bool bf16, int prompt_len, int new_tokens) {
  const accel::model::ModelConfig& config = layout.config();
  auto decoder = config.architecture().decoder(
      &layout, params.data(), {.capacity = prompt_len + new_tokens, .bf16 = bf16});
  if (!decoder.ok()) {
    std::fprintf(stderr, "%s\n", std::string(decoder.status().message()).c_str());
    std::exit(1);
  }
  std::mt19937 rng(0);
  std::vector<int32_t> prompt(prompt_len);
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % config.vocab_size());
  std::vector<float> logits(config.vocab_size());
  // Warm-up: one short call, so primitive caches and pages are in place for both timings.
  (void)(*decoder)->Step(prompt.data(), 8, logits.data());
  (*decoder)->Reset();
  Result r;
  const auto t0 = Clock::now();
  (void)(*decoder)->Step(prompt.data(), prompt_len, logits.data());
  const auto t1 = Clock::now();
  accel::generate::GenerateOptions options;
  options.max_new_tokens = new_tokens;
  auto gen = accel::generate::Generate(
      **decoder, config.vocab_size(), prompt, options,
      [](absl::Span<const int32_t>) { return std::string(); });
  const auto t2 = Clock::now();
  if (!gen.ok() || static_cast<int>(gen->ids.size()) != new_tokens) std::exit(1);
  // Generate ran the prefill again (it resets the decoder): the total is its own time.
  r.prefill_s = std::chrono::duration<double>(t1 - t0).count();
  r.total_s = std::chrono::duration<double>(t2 - t1).count();
  r.tokens_per_s = new_tokens / r.total_s;
  return r;
}

Result RunPeer(const std::string& python, const std::string& config_path, const std::string& dtype,
               int prompt_len, int new_tokens, int threads) {
  const std::string cmd = python + " " + ACCEL_PEER_SCRIPT + " --config " + config_path +
                          " --dtype " + dtype + " --prompt " + std::to_string(prompt_len) +
                          " --new " + std::to_string(new_tokens) + " --threads " +
                          std::to_string(threads);
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p != nullptr && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p == nullptr || pclose(p) != 0) return {};
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded()) return {};
  return {j["prefill_s"], j["prefill_s"].get<double>() + j["decode_s"].get<double>(),
          j["tokens_per_s"]};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"generation tokens/s at batch 1 against a plain-torch KV-cache peer"};
  std::string models = "gpt2,smollm-135m", dtypes = "fp32,bf16", python = "/usr/bin/python3";
  int prompt_len = 128, new_tokens = 128, threads = 0;
  bool no_peer = false;
  std::string output = "text";
  app.add_option("--models", models);
  app.add_option("--dtypes", dtypes);
  app.add_option("--prompt", prompt_len);
  app.add_option("--new", new_tokens);
  app.add_option("--threads", threads, "0: OpenMP's default");
  app.add_option("--python", python);
  app.add_flag("--no-peer", no_peer);
  app.add_option("--output", output, "text | json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  CLI11_PARSE(app, argc, argv);
  if (threads > 0) omp_set_num_threads(threads);
  threads = omp_get_max_threads();
  const bool json = output == "json";
  if (!json) {
    std::printf("batch 1, prompt %d, %d new tokens, %d threads; tok/s = new tokens / (prefill + "
                "decode); decode tok/s = new tokens / decode\n",
                prompt_len, new_tokens, threads);
    std::printf("%-14s %-5s %11s %11s %11s %11s %11s %11s %11s %8s\n", "model", "dtype",
                "accel tok/s", "accel pre s", "acc dec t/s", "acc dec GB/s", "torch tok/s",
                "torch pre s", "tch dec t/s", "ratio");
  }
  for (const std::string& name : std::vector<std::string>(absl::StrSplit(models, ','))) {
    auto config = accel::model::ModelPreset(name);
    if (!config.ok()) {
      std::fprintf(stderr, "%s\n", std::string(config.status().message()).c_str());
      return 2;
    }
    auto layout = accel::model::ModelLayout::Create(*config);
    std::vector<float> params(layout->num_params());
    accel::model::InitParams(*layout, 1, params.data());
    const std::string config_path = "/tmp/accel_bench_generate_" + name + ".json";
    std::ofstream(config_path) << accel::model::ModelConfigToJson(*config);
    for (const std::string& dtype : std::vector<std::string>(absl::StrSplit(dtypes, ','))) {
      const Result a = RunAccel(*layout, params, dtype == "bf16", prompt_len, new_tokens);
      const Result t = no_peer ? Result{}
                               : RunPeer(python, config_path, dtype, prompt_len, new_tokens,
                                         threads);
      const double bytes_per_token =
          static_cast<double>(layout->num_params()) * (dtype == "bf16" ? 2 : 4);
      const double accel_decode = a.decode_tokens_per_s(new_tokens);
      const double ratio = t.tokens_per_s > 0 ? a.tokens_per_s / t.tokens_per_s : 0;
      if (json) {
        nlohmann::json j = {{"model", name},
                            {"dtype", dtype},
                            {"threads", threads},
                            {"prompt", prompt_len},
                            {"new_tokens", new_tokens},
                            {"accel_tokens_per_s", a.tokens_per_s},
                            {"accel_prefill_s", a.prefill_s},
                            {"accel_decode_tokens_per_s", accel_decode},
                            {"accel_decode_weight_gb_per_s", accel_decode * bytes_per_token / 1e9},
                            {"torch_tokens_per_s", t.tokens_per_s},
                            {"torch_prefill_s", t.prefill_s},
                            {"torch_decode_tokens_per_s", t.decode_tokens_per_s(new_tokens)},
                            {"ratio", ratio}};
        std::printf("%s\n", j.dump().c_str());
      } else {
        std::printf("%-14s %-5s %11.1f %11.3f %11.1f %11.2f %11.1f %11.3f %11.1f %8s\n",
                    name.c_str(), dtype.c_str(), a.tokens_per_s, a.prefill_s, accel_decode,
                    accel_decode * bytes_per_token / 1e9, t.tokens_per_s, t.prefill_s,
                    t.decode_tokens_per_s(new_tokens),
                    ratio > 0 ? (std::to_string(ratio).substr(0, 5) + "x").c_str() : "-");
      }
      std::fflush(stdout);
    }
  }
  return 0;
}

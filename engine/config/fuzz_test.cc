// Deterministic mutation fuzzing of the YAML/JSON front ends and the resolver (libFuzzer needs
// clang; this runs under gtest in CI). Seeds are every file in configs/ and tests/config/;
// each iteration mutates one (bytes, lines, or scalar values), then parses, resolves, prints
// and converts it. The only assertions: nothing throws or crashes, every status is OK or
// InvalidArgument, and no single input takes long. Bounded by ACCEL_FUZZ_SECONDS (default 3)
// and ACCEL_FUZZ_ITERATIONS (default 200000); the seed is ACCEL_FUZZ_SEED (default 1);
// ACCEL_FUZZ_DUMP_SLOWEST=path writes the slowest input there.
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/base/env.h"
#include "engine/config/convert.h"
#include "engine/config/document.h"
#include "engine/config/plan_json.h"
#include "engine/config/resolve.h"
#include "engine/config/test_util.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using Clock = std::chrono::steady_clock;

int64_t EnvOr(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::atoll(v);
}

struct Seed {
  std::string text;
  bool json;
};

std::vector<Seed> LoadSeeds() {
  std::vector<Seed> seeds;
  for (const char* dir : {"configs", "tests/config"}) {
    const std::string path = testing::SourcePath(dir);
    auto names = Env::Default()->ListDir(path);
    if (!names.ok()) continue;
    for (const std::string& name : *names) {
      const bool json = name.size() > 5 && name.substr(name.size() - 5) == ".json";
      const bool yaml = name.size() > 5 && name.substr(name.size() - 5) == ".yaml";
      if (!json && !yaml) continue;
      auto text = ReadFileToString(Env::Default(), path + "/" + name);
      if (text.ok()) seeds.push_back({*text, json});
    }
  }
  return seeds;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  std::string Mutate(std::string s) {
    const int rounds = 1 + Below(4);
    for (int i = 0; i < rounds; ++i) s = MutateOnce(std::move(s));
    return s;
  }

 private:
  size_t Below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  std::vector<std::string> Lines(const std::string& s) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find('\n', start);
      if (end == std::string::npos) end = s.size();
      lines.push_back(s.substr(start, end - start));
      start = end + 1;
    }
    return lines;
  }

  std::string Join(const std::vector<std::string>& lines) {
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
    return out;
  }

  std::string MutateOnce(std::string s) {
    static const char kBytes[] = "{}[]:,\"'\n -&*!|>#%@`\\\t0123456789.eE+~";
    static const std::vector<std::string> kTokens = {
        "auto", "null", "-1", "0", "1e400", "[]", "{}", "yes", "no", "FULL_SHARD", "\"auto\"",
        "nvme", "3", "1e9", "true", "&a x", "*a", "!!binary", "'", "\"", "99999999999999999999",
        "NaN", "-0.0", "\xff\xfe", std::string(300, 'x'), "fsdp_version: 2", "stage: 3",
        "\"zero_optimization\": {}", "{\"stage\": \"auto\"}"};
    if (s.empty()) return kTokens[Below(kTokens.size())];
    switch (Below(9)) {
      case 0:  // flip a byte
        s[Below(s.size())] ^= static_cast<char>(1 << Below(8));
        return s;
      case 1:  // insert a syntax byte
        s.insert(Below(s.size() + 1), 1, kBytes[Below(sizeof(kBytes) - 1)]);
        return s;
      case 2: {  // delete a range
        const size_t at = Below(s.size());
        s.erase(at, 1 + Below(16));
        return s;
      }
      case 3: {  // replace the value after a ':' with a token
        const size_t colon = s.find(':', Below(s.size()));
        if (colon == std::string::npos) return s;
        size_t end = s.find_first_of(",\n}", colon + 1);
        if (end == std::string::npos) end = s.size();
        s.replace(colon + 1, end - colon - 1, " " + kTokens[Below(kTokens.size())]);
        return s;
      }
      case 4: {  // duplicate a line
        std::vector<std::string> lines = Lines(s);
        const size_t i = Below(lines.size());
        lines.insert(lines.begin() + i, lines[i]);
        return Join(lines);
      }
      case 5: {  // delete a line
        std::vector<std::string> lines = Lines(s);
        lines.erase(lines.begin() + Below(lines.size()));
        return Join(lines);
      }
      case 6: {  // swap two lines
        std::vector<std::string> lines = Lines(s);
        std::swap(lines[Below(lines.size())], lines[Below(lines.size())]);
        return Join(lines);
      }
      case 7: {  // change a line's indentation
        std::vector<std::string> lines = Lines(s);
        std::string& line = lines[Below(lines.size())];
        if (Below(2) == 0) {
          line.insert(0, std::string(1 + Below(4), ' '));
        } else {
          line.erase(0, std::min(line.find_first_not_of(' '), line.size()));
        }
        return Join(lines);
      }
      default:  // truncate
        s.resize(Below(s.size() + 1));
        return s;
    }
  }

  std::mt19937_64 rng_;
};

void CheckStatus(const absl::Status& s, const std::string& input) {
  EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument)
      << s << "\ninput:\n" << input;
}

void Exercise(const Seed& seed, const std::string& text, const ConfigInputs& inputs,
              const Document& ds_yaml, const Document& ds_json) {
  if (seed.json) {
    auto doc = ParseJsonDocument(text, "fuzz.json");
    CheckStatus(doc.status(), text);
    if (!doc.ok()) return;
    auto plan = ResolveDocuments(ds_yaml, &*doc, inputs);
    CheckStatus(plan.status(), text);
    if (plan.ok()) {
      EXPECT_FALSE(PlanToJsonText(*plan).empty());
      CheckStatus(ConvertToFsdp(*plan).status(), text);
    }
    return;
  }
  auto doc = ParseYamlDocument(text, "fuzz.yaml");
  CheckStatus(doc.status(), text);
  if (!doc.ok()) return;
  for (const Document* json : {static_cast<const Document*>(nullptr), &ds_json}) {
    auto plan = ResolveDocuments(*doc, json, inputs);
    CheckStatus(plan.status(), text);
    if (!plan.ok()) continue;
    EXPECT_FALSE(PlanToText(*plan).empty());
    CheckStatus(ConvertToDeepSpeed(*plan, "x.json").status(), text);
    CheckStatus(ConvertToFsdp(*plan).status(), text);
  }
}

TEST(ConfigFuzzTest, MutatedConfigsNeverCrashOrHang) {
  const std::vector<Seed> seeds = LoadSeeds();
  ASSERT_GE(seeds.size(), 30u);
  const auto budget = std::chrono::milliseconds(1000 * EnvOr("ACCEL_FUZZ_SECONDS", 3));
  const int64_t max_iterations = EnvOr("ACCEL_FUZZ_ITERATIONS", 200000);
  Mutator mutator(static_cast<uint64_t>(EnvOr("ACCEL_FUZZ_SEED", 1)));

  auto ds_yaml = ParseYamlDocument("distributed_type: DEEPSPEED\nnum_processes: 4\n", "ds.yaml");
  auto ds_json = ParseJsonDocument(R"({"zero_optimization": {"stage": 3}})", "ds.json");
  ASSERT_TRUE(ds_yaml.ok() && ds_json.ok());
  ConfigInputs inputs;
  inputs.job.micro_batch_size = 2;
  inputs.job.hidden_size = 64;
  inputs.env = {{"ACCELERATE_MIXED_PRECISION", "bf16"}, {"FSDP_OFFLOAD_PARAMS", "false"}};

  const auto start = Clock::now();
  auto slowest = Clock::duration::zero();
  std::string slowest_input;
  int64_t iterations = 0;
  while (iterations < max_iterations && Clock::now() - start < budget) {
    const Seed& seed = seeds[iterations % seeds.size()];
    const std::string text = mutator.Mutate(seed.text);
    const auto t0 = Clock::now();
    try {
      Exercise(seed, text, inputs, *ds_yaml, *ds_json);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "exception " << e.what() << " for input:\n" << text;
    }
    if (Clock::now() - t0 > slowest) {
      slowest = Clock::now() - t0;
      slowest_input = text;
    }
    ++iterations;
    if (::testing::Test::HasFailure()) break;  // one reproducer is enough
  }
  EXPECT_GT(iterations, 100);
  EXPECT_LT(slowest, std::chrono::seconds(2)) << "one input took too long:\n" << slowest_input;
  if (const char* dump = std::getenv("ACCEL_FUZZ_DUMP_SLOWEST")) {
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), dump, slowest_input).ok());
  }
  std::printf("fuzz: %lld iterations in %.1f s, slowest input %.1f ms\n",
              static_cast<long long>(iterations),
              std::chrono::duration<double>(Clock::now() - start).count(),
              std::chrono::duration<double, std::milli>(slowest).count());
}

}  // namespace
}  // namespace accel::config

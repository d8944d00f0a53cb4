// Multi-node benchmark on one host (bench/multinode.sh runs it; needs root): 2 simulated
// machines (network namespaces on a bridge, tests/e2e/netns.h), each link shaped to --rate and
// --delay (delay only where the kernel has sch_netem), 2 ranks per machine as standalone
// accel-worker processes started the torchrun way. For each model and strategy it prints the
// step time and the cross-node MB per step that the ranks measured (the sum over ranks of
// bytes_sent_cross_node), beside ring theory (shard::RingTrafficPerStepAllRanks) and the time
// those bytes need on the link (the busiest node's share at --rate).
//
//   accel_bench_multinode [--models gpt2-mini,small] [--strategies
//   full_shard,hybrid_shard,no_shard]
//                         [--steps 4] [--batch 1] [--seq 64] [--rate 1gbit] [--delay 1ms]
//                         [--worker PATH] [--data PATH] [--scratch /tmp]
// "small" is the benchmarks' shape: 4 layers, C=256, GPT-2's 50257-token vocabulary.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "engine/base/env.h"
#include "engine/model/gpt2_config.h"
#include "engine/model/param_specs.h"
#include "engine/shard/ring_traffic.h"
#include "tests/e2e/netns.h"
#include "tests/e2e/standalone_gang.h"

namespace {

using accel::testing::GangRun;

constexpr int kNodes = 2, kPerNode = 2, kWorld = kNodes * kPerNode;

// "1gbit", "100mbit", "500kbit" in bits per second (tc's units); 0 if unparsed.
double RateBits(const std::string& rate) {
  char* end = nullptr;
  const double v = std::strtod(rate.c_str(), &end);
  const std::string unit = end;
  if (unit == "gbit") return v * 1e9;
  if (unit == "mbit") return v * 1e6;
  if (unit == "kbit") return v * 1e3;
  if (unit == "bit" || unit.empty()) return v;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"accel multi-node benchmark (2 simulated nodes x 2 ranks)"};
  std::string models = "gpt2-mini,small", strategies = "full_shard,hybrid_shard,no_shard";
  std::string rate = "1gbit", delay = "1ms", worker = ACCEL_WORKER_BIN, data = ACCEL_DEFAULT_DATA;
  std::string scratch = "/tmp", output = "text";
  int64_t steps = 4, batch = 1, seq = 64;
  app.add_option("--models", models, "presets and/or small")->capture_default_str();
  app.add_option("--strategies", strategies)->capture_default_str();
  app.add_option("--steps", steps, "steps per run; the first is left out of the averages")
      ->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--seq", seq)->capture_default_str();
  app.add_option("--rate", rate, "each node's link, each direction (tc units)")
      ->capture_default_str();
  app.add_option("--delay", delay, "one-way delay (tc units; needs sch_netem)")
      ->capture_default_str();
  app.add_option("--worker", worker)->capture_default_str();
  app.add_option("--data", data)->capture_default_str();
  app.add_option("--scratch", scratch)->capture_default_str();
  app.add_option("--output", output, "text | json (one object per run)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (steps < 2) {
    std::fprintf(stderr, "--steps must be at least 2 (the first step is not measured)\n");
    return 2;
  }
  if (const std::string why = accel::testing::NetnsLab::SkipReason(); !why.empty()) {
    std::fprintf(stderr, "cannot simulate nodes here: %s\n", why.c_str());
    return 2;
  }
  auto lab = accel::testing::NetnsLab::Create(kNodes, {rate, delay});
  if (!lab.ok()) {
    std::fprintf(stderr, "%s\n", std::string(lab.status().message()).c_str());
    return 1;
  }
  const std::string dir = scratch + "/accel_bench_multinode_" + std::to_string(::getpid());
  if (!accel::Env::Default()->CreateDirs(dir).ok()) return 1;
  const bool json = output == "json";
  if (!json) {
    std::printf(
        "%d nodes x %d ranks, link: %s (each node, each direction); B=%lld T=%lld, "
        "%lld steps (averages leave out the first)\n",
        kNodes, kPerNode, (*lab)->applied().c_str(), static_cast<long long>(batch),
        static_cast<long long>(seq), static_cast<long long>(steps));
    std::printf("%-10s %-13s %9s %14s %14s %11s %13s\n", "model", "strategy", "step s",
                "cross MB/step", "theory MB", "link s", "total MB/step");
  }
  const std::vector<int> nodes = accel::shard::BlockPlacement(kWorld, kPerNode);
  int failures = 0;
  for (const std::string& model :
       std::vector<std::string>(absl::StrSplit(models, ',', absl::SkipEmpty()))) {
    accel::model::Gpt2Config config;
    std::vector<std::string> model_flags;
    if (model == "small") {
      config = {"small", 4, 4, 256, 50257, 1024};
      const std::string path = dir + "/small_config.json";
      if (!accel::WriteFileAtomic(accel::Env::Default(), path,
                                  accel::model::Gpt2ConfigToJson(config))
               .ok()) {
        return 1;
      }
      model_flags = {"--model-config", path};
    } else {
      auto preset = accel::model::Gpt2Preset(model);
      if (!preset.ok()) {
        std::fprintf(stderr, "%s\n", std::string(preset.status().message()).c_str());
        return 2;
      }
      config = *preset;
      model_flags = {"--model", model};
    }
    auto layout = accel::model::ModelLayout::Create(config);
    if (!layout.ok()) return 1;
    for (const std::string& strategy :
         std::vector<std::string>(absl::StrSplit(strategies, ',', absl::SkipEmpty()))) {
      GangRun run;
      run.worker = worker;
      run.world = kWorld;
      run.ranks_per_node = kPerNode;
      run.lab = lab->get();
      run.dir = dir;
      run.tag = model + "_" + strategy;
      run.timeout_s = 3600;
      run.flags = model_flags;
      run.flags.insert(run.flags.end(),
                       {"--data", data, "--batch", std::to_string(batch), "--seq",
                        std::to_string(seq), "--threads", "1", "--steps", std::to_string(steps),
                        "--comm-timeout", "600", "--strategy", strategy});
      accel::shard::ShardOptions options;
      auto parsed = accel::shard::ParseStrategy(strategy);
      if (!parsed.ok()) return 2;
      options.strategy = *parsed;
      if (accel::shard::IsHybrid(options.strategy)) {
        options.hybrid_group_size = kPerNode;  // shard within a node, replicate across
        run.flags.insert(run.flags.end(), {"--hybrid-group-size", std::to_string(kPerNode)});
      }
      auto out = accel::testing::RunStandaloneGang(run);
      if (!out.ok()) {
        std::printf("%-10s %-13s failed: %s\n", model.c_str(), strategy.c_str(),
                    std::string(out.status().message()).c_str());
        ++failures;
        continue;
      }
      double seconds = 0, cross = 0, sent = 0, busiest = 0;
      int measured = 0;
      for (size_t s = 1; s < out->records.size(); ++s) {
        const auto& record = out->records[s];
        seconds += record["step_seconds"].get<double>();
        std::vector<double> node_cross(kNodes, 0);
        for (int r = 0; r < kWorld; ++r) {
          const double c = record["ranks"][r]["bytes_sent_cross_node"].get<double>();
          cross += c;
          sent += record["ranks"][r]["bytes_sent"].get<double>();
          node_cross[nodes[r]] += c;
        }
        busiest += *std::max_element(node_cross.begin(), node_cross.end());
        ++measured;
      }
      auto theory = accel::shard::RingTrafficPerStepAllRanks(*layout, options, kWorld, nodes);
      const double bits = RateBits(rate);
      const char* format = json ? "{\"model\":\"%s\",\"strategy\":\"%s\",\"step_seconds\":%.4f,"
                                  "\"cross_node_mb\":%.3f,\"theory_cross_node_mb\":%.3f,"
                                  "\"link_seconds\":%.4f,\"sent_mb\":%.3f}\n"
                                : "%-10s %-13s %9.3f %14.2f %14.2f %11.3f %13.2f\n";
      std::printf(format, model.c_str(), strategy.c_str(), seconds / measured,
                  cross / measured / 1e6,
                  theory.ok() ? double(theory->sent_cross_node) / 1e6 : -1.0,
                  bits > 0 ? busiest / measured * 8 / bits : 0.0, sent / measured / 1e6);
      std::fflush(stdout);
    }
  }
  (void)accel::Env::Default()->DeleteRecursively(dir);
  return failures == 0 ? 0 : 1;
}

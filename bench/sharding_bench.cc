// Sharding throughput: tokens/s of each strategy with N ranks (threads of this process, 1 compute
// thread each, gloo over loopback TCP), next to no_shard measured in the same run, plus bytes
// sent, exposed communication and model-state memory per rank. With --dtypes fp32,bf16 each
// strategy also runs under bf16 mixed precision, printed next to its fp32 run. With --offload
// none,optimizer,params each also runs with the optimizer (and the parameter shards: full_shard
// and hybrid only) offloaded to the host, next to the same run without offload, with the host
// pool's model state per rank.
//
//   accel_bench_sharding [--models small,gpt2] [--strategies
//   no_shard,zero1,shard_grad_op,full_shard]
//                        [--dtypes fp32] [--ranks 2] [--forward-prefetch] [--max-inflight-gathers 2] [--steps 3] [--warmup 1] [--batch 4]
//                        [--seq 64] [--offload none] [--output json]
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/base/status_macros.h"
#include "engine/comm/in_memory_store.h"
#include "engine/kernels/threading.h"
#include "engine/shard/process_groups.h"
#include "engine/train/trainer.h"
#include "nlohmann/json.hpp"

namespace {

using accel::model::Gpt2Config;

struct RankResult {
  std::vector<double> step_seconds;
  std::vector<double> comm_wait_seconds;
  int64_t bytes_sent = 0;
  int64_t model_state_bytes = 0;
  int64_t host_state_bytes = 0;  // offload
};

absl::StatusOr<std::vector<RankResult>> RunRanks(const accel::train::TrainOptions& o, int ranks,
                                                 const std::string& prefix) {
  accel::comm::InMemoryStore store;
  std::vector<RankResult> results(ranks);
  std::vector<absl::Status> statuses(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      statuses[r] = [&]() -> absl::Status {
        accel::kernels::SetNumThreads(1);
        accel::MemoryLedger ledger;
        ACCEL_ASSIGN_OR_RETURN(
            auto groups, accel::shard::CreateGlooProcessGroups(&store, prefix, r, ranks, o.shard));
        ACCEL_ASSIGN_OR_RETURN(auto trainer, accel::train::Trainer::Create(
                                                 o, groups.view(), accel::Env::Default(), &ledger));
        ACCEL_RETURN_IF_ERROR(trainer->Train([&](const accel::train::StepMetrics& m) {
          results[r].step_seconds.push_back(m.step_seconds);
          results[r].comm_wait_seconds.push_back(m.comm_wait_seconds);
          return absl::OkStatus();
        }));
        results[r].bytes_sent = groups.world->stats().total_sent();
        for (auto c : {accel::MemoryCategory::kParams, accel::MemoryCategory::kGrads,
                       accel::MemoryCategory::kOptimizerState}) {
          results[r].model_state_bytes += ledger.Get(accel::MemoryPool::kDevice, c).current;
          results[r].host_state_bytes += ledger.Get(accel::MemoryPool::kHost, c).current;
        }
        return absl::OkStatus();
      }();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    if (!statuses[r].ok()) return accel::Annotate(statuses[r], absl::StrCat("rank ", r));
  }
  return results;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"accel sharding throughput benchmark"};
  std::string models = "small,gpt2", strategies = "no_shard,zero1,shard_grad_op,full_shard";
  std::string dtypes = "fp32", offloads = "none";
  std::string output = "text", data = ACCEL_DEFAULT_DATA, scratch = "/tmp";
  int ranks = 2;
  int64_t steps = 3, warmup = 1, batch = 4, seq = 64;
  app.add_option("--models", models)->capture_default_str();
  app.add_option("--strategies", strategies)->capture_default_str();
  app.add_option("--dtypes", dtypes,
                 "fp32, bf16 (mixed: bf16 params and reduction, fp32 "
                 "master), fp16")
      ->capture_default_str();
  app.add_option("--ranks", ranks)->capture_default_str();
  app.add_option("--offload", offloads,
                 "comma list of none, optimizer (ZeRO-Offload), params (with the optimizer)")
      ->capture_default_str();
  bool forward_prefetch = false;
  int max_inflight = 2;
  app.add_flag("--forward-prefetch", forward_prefetch,
               "full_shard: gather unit i+1 before unit i's forward (FSDP forward_prefetch)");
  app.add_option("--max-inflight-gathers", max_inflight)->capture_default_str();
  app.add_option("--steps", steps)->capture_default_str();
  app.add_option("--warmup", warmup)->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--seq", seq)->capture_default_str();
  app.add_option("--data", data)->capture_default_str();
  app.add_option("--scratch", scratch)->capture_default_str();
  app.add_option("--output", output)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const bool json = output == "json";
  nlohmann::json all = nlohmann::json::array();
  if (!json) {
    std::printf("%-6s %-14s %-5s %-9s %9s %10s %9s %8s %8s %12s %9s %12s %11s\n", "model",
                "strategy", "dtype", "offload", "step ms", "tok/s", "vs none", "vs fp32",
                "vs resid", "sent MB/step", "wait ms", "state MiB/rk", "host MiB/rk");
  }
  int run = 0;
  for (const std::string& name : std::vector<std::string>(absl::StrSplit(models, ','))) {
    Gpt2Config config = name == "small" ? Gpt2Config{"small", 4, 4, 256, 50257, 1024}
                                        : *accel::model::Gpt2Preset(name);
    const std::string cfg = scratch + "/accel_bench_shard_" + name + ".json";
    if (!accel::WriteFileAtomic(accel::Env::Default(), cfg, accel::model::Gpt2ConfigToJson(config))
             .ok()) {
      return 1;
    }
    double baseline = 0;
    for (const std::string& s : std::vector<std::string>(absl::StrSplit(strategies, ','))) {
      double fp32_tok_s = 0;
      for (const std::string& dt : std::vector<std::string>(absl::StrSplit(dtypes, ','))) {
        double resident_tok_s = 0;
        for (const std::string& off : std::vector<std::string>(absl::StrSplit(offloads, ','))) {
          if (off != "none" && off != "optimizer" && off != "params") {
            std::fprintf(stderr, "error: --offload: %s is not none, optimizer or params\n",
                         off.c_str());
            return 1;
          }
          if (off == "params" && s != "full_shard" && s != "hybrid_shard") continue;
          accel::train::TrainOptions o;
          o.model_config = cfg;
          o.data = data;
          o.batch = batch;
          o.seq = seq;
          o.steps = warmup + steps;
          o.adamw.weight_decay = 0.1f;
          auto strategy = accel::shard::ParseStrategy(s);
          if (!strategy.ok()) {
            std::fprintf(stderr, "error: %s\n", std::string(strategy.status().message()).c_str());
            return 1;
          }
          o.shard.strategy = *strategy;
          o.shard.hybrid_group_size = ranks;
          o.shard.forward_prefetch = forward_prefetch;
          o.shard.max_inflight_gathers = max_inflight;
          auto dtype = accel::ParseDType(dt);
          if (!dtype.ok()) {
            std::fprintf(stderr, "error: --dtypes: %s\n",
                         std::string(dtype.status().message()).c_str());
            return 1;
          }
          o.shard.param_dtype = o.shard.reduce_dtype = *dtype;
          o.shard.offload_optimizer = off != "none";
          o.shard.offload_params = off == "params";
          auto results = RunRanks(o, ranks, absl::StrCat("bench", run++));
          if (!results.ok()) {
            std::fprintf(stderr, "error: %s\n", std::string(results.status().message()).c_str());
            return 1;
          }
          // A step takes as long as its slowest rank.
          std::vector<double> steps_s, waits;
          for (int64_t i = warmup; i < warmup + steps; ++i) {
            double slowest = 0;
            for (const RankResult& r : *results) slowest = std::max(slowest, r.step_seconds[i]);
            steps_s.push_back(slowest);
            waits.push_back((*results)[0].comm_wait_seconds[i]);
          }
          std::sort(steps_s.begin(), steps_s.end());
          std::sort(waits.begin(), waits.end());
          const double median = steps_s[steps_s.size() / 2];
          const double wait_ms = waits[waits.size() / 2] * 1e3;
          const double tok_s = static_cast<double>(ranks * batch * seq) / median;
          if (off == "none" && s == "no_shard" && *dtype == accel::DType::kF32) baseline = tok_s;
          if (off == "none" && *dtype == accel::DType::kF32) fp32_tok_s = tok_s;
          if (off == "none") resident_tok_s = tok_s;
          const double sent_mb =
              static_cast<double>((*results)[0].bytes_sent) / (warmup + steps) / 1e6;
          const double state_mib = static_cast<double>((*results)[0].model_state_bytes) / (1 << 20);
          const double host_mib = static_cast<double>((*results)[0].host_state_bytes) / (1 << 20);
          const double vs_fp32 = fp32_tok_s > 0 ? tok_s / fp32_tok_s : 0.0;
          const double vs_resident = resident_tok_s > 0 ? tok_s / resident_tok_s : 0.0;
          all.push_back({{"model", name},
                         {"strategy", s},
                         {"dtype", dt},
                         {"offload", off},
                         {"vs_no_offload", vs_resident},
                         {"host_state_mib_rank0", host_mib},
                         {"ranks", ranks},
                         {"step_ms", median * 1e3},
                         {"tokens_per_s", tok_s},
                         {"vs_no_shard", baseline > 0 ? tok_s / baseline : 0.0},
                         {"vs_fp32", vs_fp32},
                         {"comm_wait_ms", wait_ms},
                         {"sent_mb_per_step_rank0", sent_mb},
                         {"model_state_mib_rank0", state_mib}});
          if (!json) {
            std::printf(
                "%-6s %-14s %-5s %-9s %9.1f %10.1f %8.2fx %7.2fx %7.2fx %12.1f %9.1f %12.1f "
                "%11.1f\n",
                name.c_str(), s.c_str(), dt.c_str(), off.c_str(), median * 1e3, tok_s,
                baseline > 0 ? tok_s / baseline : 0.0, vs_fp32, vs_resident, sent_mb, wait_ms,
                state_mib, host_mib);
            std::fflush(stdout);
          }
        }
      }
    }
  }
  if (json) std::printf("%s\n", all.dump(2).c_str());
  return 0;
}

#include "tests/sharding/gang.h"

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/comm/in_memory_store.h"
#include "engine/data/loss_mask.h"
#include "engine/model/model_config.h"
#include "engine/shard/process_groups.h"
#include "engine/shard/ring_traffic.h"

namespace accel::testing {
namespace {

void Add(comm::CommStats& into, const comm::CommStats& s) {
  for (int k = 0; k < comm::kNumOpKinds; ++k) {
    into.ops[k].calls += s.ops[k].calls;
    into.ops[k].bytes_sent += s.ops[k].bytes_sent;
    into.ops[k].bytes_received += s.ops[k].bytes_received;
  }
}

}  // namespace

absl::StatusOr<GangResult> RunGang(const train::TrainOptions& options, int world,
                                   bool as_device, std::vector<int> node_of_rank) {
  static std::atomic<int> gang_id{0};
  const std::string prefix = absl::StrCat("gang", gang_id++);
  comm::InMemoryStore store;
  GangResult result;
  result.model_state_bytes.resize(world);
  result.host_model_state_bytes.resize(world);
  result.nvme_model_state_bytes.resize(world);
  result.stats.resize(world);
  result.evals.resize(world);
  result.samples.resize(world);
  result.compute_peak_bytes.resize(world);
  std::vector<absl::Status> statuses(world);
  std::mutex mu;
  auto run_rank = [&](int rank) -> absl::Status {
    MemoryLedger ledger;
    comm::GlooOptions gloo;
    gloo.timeout = absl::Seconds(30);
    gloo.node_of_rank = node_of_rank;
    ACCEL_ASSIGN_OR_RETURN(
        shard::OwnedProcessGroups groups,
        shard::CreateGlooProcessGroups(&store, prefix, rank, world, options.shard, gloo));
    std::unique_ptr<shard::DeviceOps> ops;  // outlives the trainer
    train::ComputeBackend backend;
    if (as_device) {
      ops = shard::CreateHostDeviceOps(&ledger, MemoryPool::kDevice, /*as_device=*/true);
      backend.ops = ops.get();
      backend.device = "host-as-device";
    }
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer,
                           train::Trainer::Create(options, groups.view(), Env::Default(), &ledger,
                                                  backend));
    std::vector<float> losses;
    std::vector<train::StepMetrics> steps;
    std::vector<train::EvalMetrics> evals;
    std::vector<train::SampleResult> samples;
    ACCEL_RETURN_IF_ERROR(trainer->Train(
        [&](const train::StepMetrics& m) {
          losses.push_back(m.loss);
          steps.push_back(m);
          return absl::OkStatus();
        },
        nullptr,
        [&](const train::EvalMetrics& e) {
          evals.push_back(e);
          return absl::OkStatus();
        },
        [&](const train::SampleResult& s) {
          samples.push_back(s);
          return absl::OkStatus();
        }));
    int64_t state = 0, host_state = 0, nvme_state = 0;
    for (MemoryCategory c :
         {MemoryCategory::kParams, MemoryCategory::kGrads, MemoryCategory::kOptimizerState}) {
      state += ledger.Get(MemoryPool::kDevice, c).current;
      host_state += ledger.Get(MemoryPool::kHost, c).current;
      nvme_state += ledger.Get(MemoryPool::kNvme, c).current;
    }
    comm::CommStats stats = groups.world->stats();
    if (groups.shard) Add(stats, groups.shard->stats());
    if (groups.replicate) Add(stats, groups.replicate->stats());
    ACCEL_ASSIGN_OR_RETURN(std::vector<float> params, trainer->GatherParams());
    std::lock_guard<std::mutex> lock(mu);
    result.model_state_bytes[rank] = state;
    result.host_model_state_bytes[rank] = host_state;
    result.nvme_model_state_bytes[rank] = nvme_state;
    result.stats[rank] = stats;
    result.evals[rank] = std::move(evals);
    result.samples[rank] = std::move(samples);
    result.compute_peak_bytes[rank] = ledger.PoolTotal(MemoryPool::kDevice).peak;
    if (rank == 0) {
      result.params = std::move(params);
      result.losses = std::move(losses);
      result.steps = std::move(steps);
      result.num_params = trainer->layout().num_params();
      result.total_padded = trainer->sharded().plan().total_padded();
    }
    return absl::OkStatus();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] { statuses[r] = run_rank(r); });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    if (!statuses[r].ok()) return Annotate(statuses[r], absl::StrCat("rank ", r));
  }
  return result;
}

absl::StatusOr<ResumeComparison> RunStraightAndResumed(const train::TrainOptions& options,
                                                       int world, int64_t stop_at,
                                                       const std::string& checkpoint_dir,
                                                       bool as_device) {
  ResumeComparison out;
  ACCEL_ASSIGN_OR_RETURN(out.uninterrupted, RunGang(options, world, as_device));
  train::TrainOptions first = options;
  first.steps = stop_at;
  first.checkpoint_dir = checkpoint_dir;
  first.checkpoint_every = stop_at;
  ACCEL_RETURN_IF_ERROR(RunGang(first, world, as_device).status());
  train::TrainOptions second = options;
  second.resume_dir = checkpoint_dir;
  ACCEL_ASSIGN_OR_RETURN(out.resumed, RunGang(second, world, as_device));
  return out;
}

train::TrainOptions GangOptions(const std::string& dir, shard::Strategy strategy, int accum,
                                int64_t batch, DType dtype) {
  train::TrainOptions o;
  o.model_config = dir + "/config.json";
  o.data = dir + "/data.txt";
  o.batch = batch;
  o.seq = 8;
  o.steps = 5;
  o.grad_accum = accum;
  o.schedule.base_lr = 1e-2f;
  o.adamw.eps = 1e-6f;
  o.adamw.weight_decay = 0.1f;
  o.grad_clip = 1.0f;
  o.shard.strategy = strategy;
  o.shard.hybrid_group_size = 2;
  o.shard.param_dtype = o.shard.reduce_dtype = dtype;
  return o;
}

double L2Distance(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::pow(double(a[i]) - double(b[i]), 2);
  return std::sqrt(sum);
}

absl::Status WriteGangInputs(const std::string& dir, const model::ModelConfig& config) {
  ACCEL_RETURN_IF_ERROR(Env::Default()->CreateDirs(dir));
  std::string text;
  for (int i = 0; i < 3000; ++i) text += static_cast<char>('a' + (i * 7 + i / 13) % 26);
  ACCEL_RETURN_IF_ERROR(WriteFileAtomic(Env::Default(), dir + "/data.txt", text));
  return WriteFileAtomic(Env::Default(), dir + "/config.json", model::ModelConfigToJson(config));
}

absl::StatusOr<std::string> WriteGangMaskedData(const std::string& dir) {
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(Env::Default(), dir + "/data.txt"));
  std::vector<uint8_t> mask(text.size());
  for (size_t i = 0; i < mask.size(); ++i) {
    mask[i] = (i / 5 + i / 17) % 3 != 0 && (i < 200 || i >= 240);
  }
  const std::string path = dir + "/masked.txt";
  ACCEL_RETURN_IF_ERROR(WriteFileAtomic(Env::Default(), path, text));
  ACCEL_RETURN_IF_ERROR(WriteFileAtomic(Env::Default(), data::LossMaskPath(path),
                                        data::LossMaskBytes(mask)));
  return path;
}

model::ModelConfig SmallModel(const std::string& arch, const std::string& name) {
  if (arch == "gpt2") return model::Gpt2Config{name, 2, 4, 20, 256, 16};
  model::LlamaConfig c;
  c.name = name;
  c.hidden_size = 20;
  c.intermediate_size = 36;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 6;
  c.num_hidden_layers = 2;
  c.vocab_size = 256;
  c.max_position_embeddings = 16;
  c.attention_bias = true;
  if (arch == "qwen3") {
    // Qwen3's q/k norms, no biases, tied, and a sliding window of 3 keys (shorter than the gang's
    // seq 8) on the second layer, as use_sliding_window with max_window_layers 1 gives it.
    c.model_type = "qwen3";
    c.attention_bias = false;
    c.tie_word_embeddings = true;
    c.sliding_window = 3;
    c.max_window_layers = 1;
  }
  return c;
}

double ZeroModelStateBytes(shard::Strategy strategy, double psi, int world, double param_bytes,
                           double grad_bytes, double state_bytes) {
  const double n = world;
  switch (strategy) {
    case shard::Strategy::kNoShard:
      return (param_bytes + grad_bytes + state_bytes) * psi;
    case shard::Strategy::kShardOptimizer:
      return (param_bytes + grad_bytes) * psi + state_bytes * psi / n;
    case shard::Strategy::kShardGradOp:
      return param_bytes * psi + (grad_bytes + state_bytes) * psi / n;
    default:
      return (param_bytes + grad_bytes + state_bytes) * psi / n;
  }
}

double RingBytesSentPerStep(const model::ModelLayout& layout, int world, shard::Strategy strategy,
                            double element_bytes) {
  shard::ShardOptions options;
  options.strategy = strategy;
  options.param_dtype = options.reduce_dtype = element_bytes == 2 ? DType::kBF16 : DType::kF32;
  absl::StatusOr<shard::RingTraffic> t = shard::RingTrafficPerStep(layout, options, world, {}, 0);
  return t.ok() ? static_cast<double>(t->sent) : -1;
}

}  // namespace accel::testing

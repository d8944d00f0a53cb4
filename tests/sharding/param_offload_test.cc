// Parameter offload apart from the optimizer's (issue 32): DeepSpeed's offload_param without
// offload_optimizer — the parameter shards in host memory or in files, the optimizer state,
// its step and the reduced gradients on the rank — and offload_param.nvme_path different from
// offload_optimizer.nvme_path, each store in its own directory. Over real gloo (ranks as
// threads), every mode gives the resident ZeRO-3 run's bits, on the host and on the device
// code paths (host ops that say they are a device); only the parameter shards leave the
// compute pool; the two directories hold the files they should and only those; checkpoints
// resume exactly.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/comm/in_memory_store.h"
#include "engine/shard/process_groups.h"
#include "engine/shard/shard_plan.h"
#include "tests/sharding/gang_fixture.h"

namespace accel::testing {
namespace {

using shard::Strategy;

class ParamOffloadTest : public GangTest, public ::testing::WithParamInterface<std::string> {
 protected:
  ParamOffloadTest() : GangTest(SmallModel(GetParam(), "param_offload")) {}
  train::TrainOptions Options(DType dtype, Strategy s = Strategy::kFullShard) {
    return GangOptions(dir_, s, /*accum=*/2, /*batch=*/2, dtype);
  }
  std::string Dir(const std::string& name) {
    const std::string d = dir_ + "/" + name;
    EXPECT_TRUE(Env::Default()->CreateDirs(d).ok()) << d;
    return d;
  }
};

// The parameters alone, to the host or to files: the optimizer stays in compute memory.
TEST_P(ParamOffloadTest, ParametersAloneGiveTheResidentBits) {
  const std::string nvme = Dir("params");
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    auto resident = RunGang(Options(dtype), 2);
    ASSERT_TRUE(resident.ok()) << resident.status();
    for (bool files : {false, true}) {
      for (bool as_device : {false, true}) {
        const std::string what = absl::StrCat(std::string(DTypeName(dtype)),
                                              files ? " in files" : " on the host",
                                              as_device ? " (device paths)" : "");
        train::TrainOptions o = Options(dtype);
        o.shard.offload_params = true;
        o.shard.forward_prefetch = true;
        if (files) o.shard.offload_param_dir = nvme;
        auto offloaded = RunGang(o, 2, as_device);
        ASSERT_TRUE(offloaded.ok()) << what << offloaded.status();
        EXPECT_EQ(resident->losses, offloaded->losses) << what;
        EXPECT_EQ(resident->params, offloaded->params) << what;
        // Between steps the shards (half the padded model each, in param_dtype) are all that
        // left the compute pool: the optimizer's state stayed.
        const int64_t shard_bytes = offloaded->total_padded / 2 * DTypeSize(dtype);
        for (int r = 0; r < 2; ++r) {
          EXPECT_EQ(offloaded->host_model_state_bytes[r], files ? 0 : shard_bytes) << what;
          EXPECT_EQ(offloaded->nvme_model_state_bytes[r], files ? shard_bytes : 0) << what;
          const int64_t moved = resident->model_state_bytes[r] - offloaded->model_state_bytes[r];
          // fp32 on a device keeps fp32 masters beside the optimizer (DeepSpeed's layout), as
          // many bytes as the shards it rounds into; on host memory the shards are updated
          // where they live, and mixed precision has its masters either way.
          const bool device_masters = dtype == DType::kF32 && as_device;
          EXPECT_EQ(moved, device_masters ? 0 : shard_bytes) << what << " rank " << r;
        }
      }
    }
  }
  // Hybrid sharding offloads its in-group shards alone the same way.
  train::TrainOptions h = Options(DType::kBF16, Strategy::kHybridShard);
  h.shard.offload_params = true;
  h.shard.offload_param_dir = nvme;
  auto plain = RunGang(Options(DType::kBF16, Strategy::kHybridShard), 4);
  auto offloaded = RunGang(h, 4);
  ASSERT_TRUE(plain.ok() && offloaded.ok()) << plain.status() << offloaded.status();
  EXPECT_EQ(plain->params, offloaded->params) << "hybrid_shard";
}

// Parameters and optimizer state in two directories (and the mix of parameters in files with
// the optimizer on the host), streamed over tiles smaller than the units.
TEST_P(ParamOffloadTest, TwoDirectoriesGiveTheResidentBits) {
  const std::string params_dir = Dir("nvme_params"), optimizer_dir = Dir("nvme_optimizer");
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    auto resident = RunGang(Options(dtype), 2);
    ASSERT_TRUE(resident.ok()) << resident.status();
    for (bool optimizer_in_files : {true, false}) {
      for (bool as_device : {false, true}) {
        const std::string what =
            absl::StrCat(std::string(DTypeName(dtype)),
                         optimizer_in_files ? " optimizer in its own files" : " optimizer on host",
                         as_device ? " (device paths)" : "");
        train::TrainOptions o = Options(dtype);
        o.shard.offload_optimizer = o.shard.offload_params = true;
        o.shard.offload_param_dir = params_dir;
        if (optimizer_in_files) o.shard.offload_dir = optimizer_dir;
        o.shard.offload_tile_numel = 2048;
        auto offloaded = RunGang(o, 2, as_device);
        ASSERT_TRUE(offloaded.ok()) << what << offloaded.status();
        EXPECT_EQ(resident->losses, offloaded->losses) << what;
        EXPECT_EQ(resident->params, offloaded->params) << what;
      }
    }
  }
  // Checkpoints of state in two directories resume exactly.
  train::TrainOptions o = Options(DType::kBF16);
  o.shard.offload_optimizer = o.shard.offload_params = true;
  o.shard.offload_param_dir = params_dir;
  o.shard.offload_dir = optimizer_dir;
  o.steps = 6;
  auto runs = RunStraightAndResumed(o, 2, 3, dir_ + "/ckpt");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->resumed.params, runs->uninterrupted.params);
  EXPECT_EQ(runs->resumed.losses,
            std::vector<float>(runs->uninterrupted.losses.begin() + 3,
                               runs->uninterrupted.losses.end()));
  // And a checkpoint of parameters offloaded alone resumes exactly too.
  train::TrainOptions alone = Options(DType::kF32);
  alone.shard.offload_params = true;
  alone.shard.offload_param_dir = params_dir;
  alone.steps = 6;
  runs = RunStraightAndResumed(alone, 2, 3, dir_ + "/ckpt_alone");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->resumed.params, runs->uninterrupted.params);
}

// The offload files a directory holds now: each is unlinked at creation (offload::
// FileStorage), so this process's descriptors are where they are found. Sizes in bytes.
std::vector<int64_t> OpenOffloadFiles(const std::string& dir) {
  std::vector<int64_t> sizes;
  // The kernel names them by their normal path (TempDir() ends in a slash of its own).
  const std::string prefix =
      std::filesystem::path(dir).lexically_normal().string() + "/accel-offload-";
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (ec || !absl::StartsWith(target, prefix)) continue;
    struct stat st;
    if (::stat(fd.path().c_str(), &st) == 0) sizes.push_back(st.st_size);
  }
  return sizes;
}

TEST_P(ParamOffloadTest, EachDirectoryHoldsItsOwnFilesOnly) {
  const std::string params_dir = Dir("files_params"), optimizer_dir = Dir("files_optimizer");
  train::TrainOptions o = Options(DType::kBF16);
  o.steps = 1;
  o.shard.offload_optimizer = o.shard.offload_params = true;
  o.shard.offload_param_dir = params_dir;
  o.shard.offload_dir = optimizer_dir;
  comm::InMemoryStore store;
  MemoryLedger ledger;
  auto groups = shard::CreateGlooProcessGroups(&store, "files", 0, 1, o.shard, {});
  ASSERT_TRUE(groups.ok()) << groups.status();
  auto trainer = train::Trainer::Create(o, groups->view(), Env::Default(), &ledger, {});
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  ASSERT_TRUE((*trainer)->Train([](const train::StepMetrics&) { return absl::OkStatus(); }).ok());

  // The parameter directory: one file per unit, its bf16 shard (the whole unit at one rank),
  // padded to the file system's direct-I/O block (at most 4096 bytes).
  const shard::ShardPlan& plan = (*trainer)->sharded().plan();
  std::vector<int64_t> expected;
  int64_t shard_bytes = 0;
  for (int u = 0; u < plan.num_units(); ++u) {
    expected.push_back(plan.unit(u).shard_numel * 2);
    shard_bytes += plan.unit(u).shard_numel * 2;
  }
  std::vector<int64_t> params = OpenOffloadFiles(params_dir);
  std::sort(params.begin(), params.end());
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(params.size(), expected.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_GE(params[i], expected[i]) << i;
    EXPECT_LT(params[i], expected[i] + 4096) << i;
  }
  // The optimizer's directory: everything else in the nvme pool (masters, moments, reduced
  // gradient shards, gradient copies) and no parameter.
  int64_t optimizer_bytes = 0, other_bytes = 0;
  for (int64_t s : OpenOffloadFiles(optimizer_dir)) optimizer_bytes += s;
  for (MemoryCategory c : {MemoryCategory::kGrads, MemoryCategory::kOptimizerState}) {
    other_bytes += ledger.Get(MemoryPool::kNvme, c).current;
  }
  EXPECT_EQ(ledger.Get(MemoryPool::kNvme, MemoryCategory::kParams).current,
            shard_bytes);
  EXPECT_GT(other_bytes, 0);
  EXPECT_GE(optimizer_bytes, other_bytes);
  EXPECT_LT(optimizer_bytes, other_bytes + 4096 * 64);  // block padding of a few dozen files
  trainer->reset();
  EXPECT_TRUE(OpenOffloadFiles(params_dir).empty());
  EXPECT_TRUE(OpenOffloadFiles(optimizer_dir).empty());
}

TEST_P(ParamOffloadTest, RefusedWhereItCannotRun) {
  train::TrainOptions zero2 = Options(DType::kBF16, Strategy::kShardGradOp);
  zero2.shard.offload_params = true;
  auto r = RunGang(zero2, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("offload_params needs a strategy that shards"),
            std::string::npos)
      << r.status();
  train::TrainOptions low = Options(DType::kBF16);
  low.shard.master_dtype = DType::kBF16;
  low.shard.offload_params = true;
  r = RunGang(low, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("offload_params needs fp32 masters"), std::string::npos)
      << r.status();
  train::TrainOptions dir_alone = Options(DType::kBF16);
  dir_alone.shard.offload_param_dir = Dir("unused");
  r = RunGang(dir_alone, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("offload_param_dir (NVMe parameter offload) needs "
                                      "offload_params"),
            std::string::npos)
      << r.status();
}

INSTANTIATE_TEST_SUITE_P(Architectures, ParamOffloadTest,
                         ::testing::Values("gpt2", "llama", "qwen3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace accel::testing

// FULL_STATE_DICT and 16-bit checkpoint saves through the trainer (ranks as threads over gloo):
//  - the full save is byte for byte the consolidation of a sharded save of the same state;
//  - the 16-bit save is the fp32 values rounded (FloatToBf16), bit for bit;
//  - the full file loads back through --init-weights and through --resume to the same params;
//  - the event carries kind, bytes and per-rank bytes that match the files;
//  - a save called on one rank only is a clear error, not a hang.
#include <string>
#include <unistd.h>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/consolidate.h"
#include "engine/checkpoint/full_model_writer.h"
#include "engine/checkpoint/hf_shards.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/checkpoint/inspect.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/kernels/threading.h"
#include "engine/model/gpt2_config.h"
#include "engine/train/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sharding/rank_threads.h"

namespace accel::testing {
namespace {

using shard::Strategy;
using StateDictType = train::TrainOptions::StateDictType;
using ::testing::HasSubstr;

struct SaveRun {
  std::vector<float> params;  // rank 0's gathered parameters after the run
  std::vector<train::CheckpointEvent> events;  // rank 0's
  int64_t step = 0;
};

class FullCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels::SetNumThreads(1);
    dir_ = ::testing::TempDir() + "/full_ckpt_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    std::string text;
    for (int i = 0; i < 3000; ++i) text += static_cast<char>('a' + (i * 5 + i / 11) % 26);
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/data.txt", text).ok());
    model::Gpt2Config c{"fc", 2, 4, 20, 256, 16};
    ASSERT_TRUE(
        WriteFileAtomic(Env::Default(), dir_ + "/config.json", model::Gpt2ConfigToJson(c)).ok());
    auto layout = model::ModelLayout::Create(c);
    ASSERT_TRUE(layout.ok());
    layout_ = std::make_unique<model::ModelLayout>(std::move(*layout));
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }

  train::TrainOptions Options(Strategy s, int64_t steps) {
    train::TrainOptions o;
    o.model_config = dir_ + "/config.json";
    o.data = dir_ + "/data.txt";
    o.batch = 2;
    o.seq = 8;
    o.steps = steps;
    o.schedule.base_lr = 1e-2f;
    o.shard.strategy = s;
    return o;
  }

  absl::StatusOr<SaveRun> Run(const train::TrainOptions& o, int world) {
    SaveRun out;
    absl::Mutex mu;
    std::vector<absl::Status> s =
        RunOnRanks(world, o.shard, absl::Seconds(30), [&](int rank, shard::ProcessGroups g) {
          MemoryLedger ledger;
          auto t = train::Trainer::Create(o, g, Env::Default(), &ledger);
          if (!t.ok()) return t.status();
          std::vector<train::CheckpointEvent> events;
          absl::Status trained = (*t)->Train(nullptr, [&](const train::CheckpointEvent& e) {
            events.push_back(e);
            return absl::OkStatus();
          });
          if (!trained.ok()) return trained;
          auto p = (*t)->GatherParams();
          if (!p.ok()) return p.status();
          absl::MutexLock lock(&mu);
          if (rank == 0) out = {std::move(*p), std::move(events), (*t)->step()};
          return absl::OkStatus();
        });
    for (const absl::Status& st : s) {
      if (!st.ok()) return st;
    }
    return out;
  }

  std::string Read(const std::string& path) {
    auto s = ReadFileToString(Env::Default(), path);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.value_or("");
  }

  // Starting from `weights` (--init-weights, another world size and strategy) and resuming
  // `ckpt`'s step 2 (--resume: exact, through its rank files) both give `params`.
  void ExpectInitWeightsAndResumeGive(const std::string& weights, const std::string& ckpt,
                                      const std::vector<float>& params) {
    train::TrainOptions init = Options(Strategy::kShardGradOp, 0);
    init.init_weights = weights;
    auto from_init = Run(init, 3);
    ASSERT_TRUE(from_init.ok()) << from_init.status();
    EXPECT_EQ(from_init->params, params);
    train::TrainOptions resume = Options(Strategy::kFullShard, 2);
    resume.resume_dir = ckpt;
    auto resumed = Run(resume, 2);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_EQ(resumed->step, 2);
    EXPECT_EQ(resumed->params, params);
  }

  std::string dir_;
  std::unique_ptr<model::ModelLayout> layout_;
};

TEST_F(FullCheckpointTest, FullSaveEqualsConsolidatedShardedSaveAndReportsBytes) {
  const int world = 3;  // padding in every unit
  for (Strategy s : {Strategy::kFullShard, Strategy::kShardOptimizer}) {
    const std::string name(shard::StrategyName(s));
    train::TrainOptions sharded = Options(s, 2);
    sharded.checkpoint_dir = dir_ + "/sharded_" + name;
    sharded.checkpoint_every = 2;
    auto a = Run(sharded, world);
    ASSERT_TRUE(a.ok()) << a.status();
    train::TrainOptions full = sharded;
    full.checkpoint_dir = dir_ + "/full_" + name;
    full.state_dict_type = StateDictType::kFull;
    auto b = Run(full, world);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(a->params, b->params) << name;  // the same training state

    const std::string step_a = checkpoint::StepDir(sharded.checkpoint_dir, 2);
    const std::string step_b = checkpoint::StepDir(full.checkpoint_dir, 2);
    ASSERT_EQ(checkpoint::LatestStepDir(Env::Default(), full.checkpoint_dir).value(), step_b);
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_ + "/merged_" + name).ok());
    const std::string merged = dir_ + "/merged_" + name + "/model.safetensors";
    ASSERT_TRUE(checkpoint::ConsolidateToSafetensors(Env::Default(), step_a, merged).ok());
    EXPECT_EQ(Read(step_b + "/model.safetensors"), Read(merged)) << name;
    EXPECT_EQ(Read(step_b + "/config.json"), Read(dir_ + "/merged_" + name + "/config.json"));
    // A full step keeps the rank files (exact resume) beside the model file, and says so.
    auto meta = checkpoint::ReadMetadata(Env::Default(), step_b);
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_EQ(meta->kind, "sharded+full");
    EXPECT_EQ(meta->world_size, world);
    ASSERT_EQ(meta->model_files.size(), 1u);
    EXPECT_EQ(meta->model_files[0].dtype, DType::kF32);
    EXPECT_TRUE(Env::Default()->FileExists(step_b + "/rank_0.bin"));
    EXPECT_TRUE(checkpoint::VerifyModelFile(Env::Default(), step_b, meta->model_files[0]).ok());

    // Events: bytes per rank as written.
    ASSERT_EQ(a->events.size(), 1u);
    ASSERT_EQ(b->events.size(), 1u);
    const train::CheckpointEvent& ea = a->events[0];
    const train::CheckpointEvent& eb = b->events[0];
    EXPECT_EQ(ea.kind, "sharded");
    EXPECT_EQ(eb.kind, "sharded+full");
    ASSERT_EQ(ea.rank_bytes.size(), size_t{world});
    ASSERT_EQ(eb.rank_bytes.size(), size_t{world});
    int64_t sum = 0;
    for (int r = 0; r < world; ++r) {
      const uint64_t file =
          Env::Default()->GetFileSize(step_a + "/" + checkpoint::RankFileName(r)).value();
      EXPECT_EQ(ea.rank_bytes[r], static_cast<int64_t>(file)) << r;
      sum += ea.rank_bytes[r];
    }
    EXPECT_EQ(ea.bytes, sum);
    // Rank 0 wrote its rank file and the model file; the others their rank files.
    EXPECT_EQ(eb.rank_bytes[0],
              ea.rank_bytes[0] + static_cast<int64_t>(Read(step_b + "/model.safetensors").size() +
                                                      Read(step_b + "/config.json").size()));
    for (int r = 1; r < world; ++r) EXPECT_EQ(eb.rank_bytes[r], ea.rank_bytes[r]);
    EXPECT_EQ(eb.bytes, ea.bytes + eb.rank_bytes[0] - ea.rank_bytes[0]);
    EXPECT_GE(eb.seconds, 0.0);
  }
}

TEST_F(FullCheckpointTest, SixteenBitSaveIsTheRoundedFp32) {
  train::TrainOptions o = Options(Strategy::kFullShard, 2);
  o.checkpoint_dir = dir_ + "/bf16";
  o.checkpoint_every = 2;
  o.state_dict_type = StateDictType::kFull;
  o.save_16bit = true;
  auto run = Run(o, 2);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->events.size(), 1u);
  EXPECT_EQ(run->events[0].kind, "sharded+16bit");
  const std::string step = checkpoint::StepDir(o.checkpoint_dir, 2);
  auto reader = checkpoint::SafetensorsReader::Open(Env::Default(), step + "/model.safetensors");
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (const LayoutEntry& e : layout_->flat().entries()) {
    const checkpoint::TensorInfo* t = (*reader)->Find(e.name);
    ASSERT_NE(t, nullptr) << e.name;
    ASSERT_EQ(t->dtype_name, "BF16");
    std::vector<uint16_t> raw(e.numel);
    ASSERT_TRUE((*reader)->ReadRaw(e.name, raw.data(), raw.size() * 2).ok());
    for (int64_t i = 0; i < e.numel; ++i) {
      ASSERT_EQ(raw[i], FloatToBf16(run->params[e.offset + i])) << e.name << "[" << i << "]";
    }
  }
}

TEST_F(FullCheckpointTest, ShardedPlus16BitKeepsExactResumeAndAddsTheModelFile) {
  train::TrainOptions o = Options(Strategy::kShardGradOp, 2);
  o.checkpoint_dir = dir_ + "/both";
  o.checkpoint_every = 2;
  o.save_16bit = true;
  auto run = Run(o, 2);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->events.at(0).kind, "sharded+16bit");
  const std::string step = checkpoint::StepDir(o.checkpoint_dir, 2);
  EXPECT_TRUE(Env::Default()->FileExists(step + "/rank_1.bin"));
  auto meta = checkpoint::ReadMetadata(Env::Default(), step);
  ASSERT_TRUE(meta.ok()) << meta.status();
  ASSERT_EQ(meta->model_files.size(), 1u);
  EXPECT_EQ(meta->model_files[0].dtype, DType::kBF16);
  // Resume reads the rank files: the same fp32 parameters, not the rounded ones.
  train::TrainOptions again = Options(Strategy::kShardGradOp, 2);
  again.resume_dir = o.checkpoint_dir;
  auto resumed = Run(again, 2);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->params, run->params);
}

TEST_F(FullCheckpointTest, FullFileLoadsBackThroughInitWeightsAndResume) {
  train::TrainOptions o = Options(Strategy::kFullShard, 2);
  o.checkpoint_dir = dir_ + "/full";
  o.checkpoint_every = 2;
  o.state_dict_type = StateDictType::kFull;
  auto run = Run(o, 2);
  ASSERT_TRUE(run.ok()) << run.status();
  const std::string file = checkpoint::StepDir(o.checkpoint_dir, 2) + "/model.safetensors";

  std::vector<float> loaded(layout_->num_params());
  ASSERT_TRUE(
      checkpoint::LoadHfWeights(Env::Default(), file, *layout_, loaded.data()).ok());
  EXPECT_EQ(loaded, run->params);

  ExpectInitWeightsAndResumeGive(file, o.checkpoint_dir, run->params);
}

// Above max_shard_bytes the full save is Hugging Face's sharded form: every shard and the index
// are listed in model_files and verified, the files are SaveHfWeights' for the same values and
// shard size, the step directory loads through --init-weights, the rank files still resume,
// and consolidating the step with the same shard size writes the same files.
TEST_F(FullCheckpointTest, ShardedFullSaveVerifiesLoadsResumesAndConsolidates) {
  Env* env = Env::Default();
  const int64_t max = layout_->num_params() * 4 / 3;
  const std::vector<checkpoint::HfShard> shards = checkpoint::HfShards(*layout_, DType::kF32, max);
  ASSERT_GE(shards.size(), 3u);
  const int n = static_cast<int>(shards.size());
  train::TrainOptions o = Options(Strategy::kFullShard, 2);
  o.checkpoint_dir = dir_ + "/sharded_full";
  o.checkpoint_every = 2;
  o.state_dict_type = StateDictType::kFull;
  o.max_shard_bytes = max;
  auto run = Run(o, 2);
  ASSERT_TRUE(run.ok()) << run.status();
  const std::string step = checkpoint::StepDir(o.checkpoint_dir, 2);
  EXPECT_FALSE(env->FileExists(step + "/model.safetensors"));

  auto meta = checkpoint::ReadMetadata(env, step);
  ASSERT_TRUE(meta.ok()) << meta.status();
  ASSERT_EQ(meta->model_files.size(), shards.size() + 1);
  EXPECT_EQ(meta->model_files.back().file, checkpoint::kHfIndexFileName);
  const std::string whole = dir_ + "/whole";
  ASSERT_TRUE(env->CreateDirs(whole).ok());
  ASSERT_TRUE(checkpoint::SaveHfWeights(env, whole + "/model.safetensors", *layout_,
                                        run->params.data(), DType::kF32, max)
                  .ok());
  int64_t model_bytes = 0;
  for (int i = 0; i <= n; ++i) {
    const checkpoint::ModelFileInfo& f = meta->model_files[i];
    EXPECT_EQ(f.file, i < n ? checkpoint::HfShardFileName(i, n)
                            : std::string(checkpoint::kHfIndexFileName));
    EXPECT_TRUE(checkpoint::VerifyModelFile(env, step, f).ok()) << f.file;
    EXPECT_EQ(Read(step + "/" + f.file), Read(whole + "/" + f.file)) << f.file;
    model_bytes += static_cast<int64_t>(f.bytes);
  }
  ASSERT_EQ(run->events.size(), 1u);
  EXPECT_EQ(run->events[0].rank_bytes[0],
            static_cast<int64_t>(Read(step + "/rank_0.bin").size() +
                                 Read(step + "/config.json").size()) + model_bytes);

  ExpectInitWeightsAndResumeGive(step, o.checkpoint_dir, run->params);

  // `accelctl ckpt consolidate` of the same step, same shard size: the same files.
  const std::string merged = dir_ + "/merged";
  ASSERT_TRUE(env->CreateDirs(merged).ok());
  auto stats = checkpoint::ConsolidateToSafetensors(env, step, merged + "/model.safetensors",
                                                    {.max_shard_bytes = max});
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->files.size(), shards.size() + 1);
  for (const checkpoint::ModelFileInfo& f : meta->model_files) {
    EXPECT_EQ(Read(merged + "/" + f.file), Read(step + "/" + f.file)) << f.file;
  }
  std::vector<float> loaded(layout_->num_params());
  ASSERT_TRUE(checkpoint::LoadHfWeights(env, merged, *layout_, loaded.data()).ok());
  EXPECT_EQ(loaded, run->params);

  // `accelctl ckpt inspect` verifies every shard and the index; a flipped byte in a shard fails
  // the step's verification, naming the file.
  auto report = checkpoint::InspectCheckpoints(env, o.checkpoint_dir, /*verify=*/true);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok() && report->steps.at(0).verified) << report->steps.at(0).status;
  const std::string shard1 = step + "/" + checkpoint::HfShardFileName(1, n);
  std::string bytes = Read(shard1);
  bytes[bytes.size() - 3] ^= 1;
  ASSERT_TRUE(WriteFileAtomic(env, shard1, bytes).ok());
  absl::Status verified = checkpoint::VerifyModelFile(env, step, meta->model_files[1]);
  EXPECT_EQ(verified.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(verified.message()), HasSubstr(shard1));
  report = checkpoint::InspectCheckpoints(env, o.checkpoint_dir, /*verify=*/true);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(std::string(report->steps.at(0).status.message()), HasSubstr(shard1));
}

// A model-only step (no rank files; the trainer never writes one, another tool might) holds no
// optimizer state: resuming it is refused, pointing at --init-weights, which does take it.
TEST_F(FullCheckpointTest, AModelOnlyStepIsRefusedOnResumeButLoadsAsInitWeights) {
  const std::string ckpt = dir_ + "/model_only";
  Env* env = Env::Default();
  std::vector<float> values(layout_->num_params());
  model::InitParams(*layout_, 5, values.data());
  ASSERT_TRUE(env->CreateDirs(checkpoint::StepTmpDir(ckpt, 2)).ok());
  auto writer = checkpoint::FullModelWriter::Create(
      env, checkpoint::StepTmpDir(ckpt, 2) + "/" + checkpoint::kModelFileName, layout_.get(),
      DType::kF32);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int u = 0; u < layout_->num_units(); ++u) {
    ASSERT_TRUE((*writer)->AppendUnit(u, values.data() + layout_->unit(u).offset).ok());
  }
  auto info = (*writer)->Finish(/*write_config=*/true);
  ASSERT_TRUE(info.ok()) << info.status();
  checkpoint::CheckpointMeta meta;
  meta.step = 2;
  meta.data_position = 2;
  meta.world_size = 1;
  meta.strategy = "no_shard";
  meta.kind = checkpoint::kKindFull;
  meta.model_files = *info;
  ASSERT_TRUE(checkpoint::WriteMetadataAndCommit(env, ckpt, meta, *layout_, 0).ok());

  train::TrainOptions resume = Options(Strategy::kFullShard, 4);
  resume.resume_dir = ckpt;
  auto refused = Run(resume, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("--init-weights " + checkpoint::StepDir(ckpt, 2)));
  train::TrainOptions init = Options(Strategy::kFullShard, 0);
  init.init_weights = checkpoint::StepDir(ckpt, 2);  // the directory: either form
  auto started = Run(init, 2);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(started->params, values);
}

TEST_F(FullCheckpointTest, SaveOnOneRankOnlyIsAClearErrorNotAHang) {
  for (StateDictType type : {StateDictType::kFull, StateDictType::kSharded}) {
    train::TrainOptions o = Options(Strategy::kFullShard, 0);
    o.state_dict_type = type;
    const std::string ckpt = dir_ + (type == StateDictType::kFull ? "/lonely_full" : "/lonely");
    absl::Notification done;
    std::vector<absl::Status> s = RunOnRanks(
        2, o.shard, absl::Seconds(2), [&](int rank, shard::ProcessGroups g) -> absl::Status {
          MemoryLedger ledger;
          auto t = train::Trainer::Create(o, g, Env::Default(), &ledger);
          if (!t.ok()) return t.status();
          if (rank == 1) {  // never saves; stays connected until rank 0 gave up
            done.WaitForNotification();
            return absl::OkStatus();
          }
          absl::Status saved = (*t)->SaveCheckpoint(ckpt, 0).status();
          done.Notify();
          return saved;
        });
    EXPECT_TRUE(s[1].ok()) << s[1];
    ASSERT_FALSE(s[0].ok());
    EXPECT_TRUE(absl::IsDeadlineExceeded(s[0]) || absl::IsUnavailable(s[0])) << s[0];
    EXPECT_THAT(s[0].message(), HasSubstr("every rank must call SaveCheckpoint"));
    EXPECT_THAT(s[0].message(), HasSubstr("step 0"));
    EXPECT_FALSE(checkpoint::LatestStepDir(Env::Default(), ckpt).ok());  // nothing committed
  }
}

}  // namespace
}  // namespace accel::testing

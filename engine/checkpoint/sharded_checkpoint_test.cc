#include "engine/checkpoint/sharded_checkpoint.h"

#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/checkpoint_test_util.h"
#include "engine/checkpoint/rank_file.h"
#include "engine/testing/mem_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::checkpoint {
namespace {

using namespace ::accel::checkpoint::testing;  // NOLINT: the helpers of this test family
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kDir[] = "/ckpt";

class ShardedCheckpointTest : public ::testing::Test {
 protected:
  accel::testing::MemEnv env_;
  model::ModelLayout layout_ = SmallLayout();
  State state_{layout_.num_params(), 42};
};

TEST_F(ShardedCheckpointTest, SavesAndLoadsAtTheSameWorldSize) {
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, state_, 10, 4).ok());
  auto step_dir = LatestStepDir(&env_, kDir);
  ASSERT_TRUE(step_dir.ok()) << step_dir.status();
  EXPECT_EQ(*step_dir, "/ckpt/step_10");
  EXPECT_FALSE(env_.FileExists("/ckpt/step_10.tmp"));

  auto meta = ReadMetadata(&env_, *step_dir);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->step, 10);
  EXPECT_EQ(meta->data_position, 30);
  EXPECT_EQ(meta->optimizer_step, 10);
  EXPECT_EQ(meta->world_size, 4);
  EXPECT_EQ(meta->strategy, "full_shard");
  const model::ModelConfig config = *model::ModelConfigFromJson(meta->model_config_json, "meta");
  EXPECT_EQ(model::ModelConfigToJson(config), model::ModelConfigToJson(layout_.config()));
  EXPECT_THAT(meta->train_config_json, HasSubstr("1337"));
  for (int r = 0; r < 4; ++r) EXPECT_EQ(meta->ranges_by_rank[r], ShardRanges(layout_, 4, r));

  for (int r = 0; r < 4; ++r) {
    State got(layout_.num_params(), 0), want = got;
    const Ranges mine = ShardRanges(layout_, 4, r);
    for (const auto& [b, e] : mine) {
      std::copy(state_.params.begin() + b, state_.params.begin() + e, want.params.begin() + b);
      std::copy(state_.exp_avg.begin() + b, state_.exp_avg.begin() + e, want.exp_avg.begin() + b);
      std::copy(state_.exp_avg_sq.begin() + b, state_.exp_avg_sq.begin() + e,
                want.exp_avg_sq.begin() + b);
    }
    ASSERT_TRUE(LoadRanges(&env_, *step_dir, layout_, LoadRangesOf(&got, mine)).ok());
    EXPECT_TRUE(got == want) << "rank " << r;
  }
}

// Saved by 4 ranks, loaded by 3, 2 and 1 rank (and an arbitrary cut): every element lands.
TEST_F(ShardedCheckpointTest, LoadsAtAnyWorldSizeAndPartition) {
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, state_, 5, 4).ok());
  const std::string step_dir = StepDir(kDir, 5);
  for (int world : {1, 2, 3, 4, 5}) {
    State got(layout_.num_params(), 0);
    for (int r = 0; r < world; ++r) {
      ASSERT_TRUE(
          LoadRanges(&env_, step_dir, layout_, LoadRangesOf(&got, ShardRanges(layout_, world, r)))
              .ok())
          << "world " << world << " rank " << r;
    }
    EXPECT_TRUE(got == state_) << "world " << world;
  }
  State got(layout_.num_params(), 0);
  const Ranges odd = {{0, 1}, {1, 999}, {999, 1000}, {1000, 2016}};
  ASSERT_TRUE(LoadRanges(&env_, step_dir, layout_, LoadRangesOf(&got, odd)).ok());
  EXPECT_TRUE(got == state_);
}

TEST_F(ShardedCheckpointTest, NullPointersSkipSectionsAndReplicasWriteEmptyFiles) {
  // no_shard over 2 ranks: rank 0 holds everything, rank 1 (a replica) writes an empty file.
  const Ranges all = {{0, layout_.num_params()}};
  ASSERT_TRUE(WriteRankFile(&env_, kDir, 3, 0, SaveRangesOf(state_, all)).ok());
  ASSERT_TRUE(WriteRankFile(&env_, kDir, 3, 1, {}).ok());
  CheckpointMeta meta = MetaFor(layout_, 3, 2, {all, {}});
  meta.strategy = "no_shard";
  ASSERT_TRUE(WriteMetadataAndCommit(&env_, kDir, meta, layout_, 0).ok());

  std::vector<float> params(layout_.num_params(), 0.f);
  LoadRange params_only{0, layout_.num_params(), params.data(), nullptr, nullptr};
  ASSERT_TRUE(LoadRanges(&env_, StepDir(kDir, 3), layout_, {params_only}).ok());
  EXPECT_EQ(params, state_.params);
  EXPECT_EQ(ReadMetadata(&env_, StepDir(kDir, 3))->strategy, "no_shard");
}

TEST_F(ShardedCheckpointTest, ReadsOnlyTheBytesItNeeds) {
  constexpr uint32_t kBlock = 256;
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, state_, 1, 4, 0, {.block_bytes = kBlock}).ok());
  const std::string step_dir = StepDir(kDir, 1);
  const uint64_t metadata_bytes = *env_.GetFileSize(step_dir + "/metadata.json");
  CountingEnv counting(&env_);
  for (int world : {2, 3}) {
    for (int r = 0; r < world; ++r) {
      counting.Reset();
      State got(layout_.num_params(), 0);
      const Ranges mine = ShardRanges(layout_, world, r);
      ASSERT_TRUE(LoadRanges(&counting, step_dir, layout_, LoadRangesOf(&got, mine)).ok());
      // Needed: 12 bytes per element. Allowed on top: metadata.json, each opened file's header,
      // table and footer (< 2 KB each here), and per contiguous piece per section at most two
      // partly used blocks.
      int64_t needed = 0;
      for (const auto& [b, e] : mine) needed += 12 * (e - b);
      const int64_t pieces = static_cast<int64_t>(mine.size()) * 4;  // each crosses <= 4 files
      const int64_t bound = needed + metadata_bytes + 4 * 2048 + pieces * 3 * 2 * kBlock;
      EXPECT_GE(counting.bytes_read(), needed);
      EXPECT_LE(counting.bytes_read(), bound) << "world " << world << " rank " << r;
    }
  }
  // A single small slice reads a small fraction of the 24 KB of data.
  counting.Reset();
  float one[3];
  LoadRange tiny{1500, 1501, &one[0], &one[1], &one[2]};
  ASSERT_TRUE(LoadRanges(&counting, step_dir, layout_, {tiny}).ok());
  EXPECT_EQ(one[0], state_.params[1500]);
  EXPECT_EQ(one[2], state_.exp_avg_sq[1500]);
  EXPECT_LE(counting.bytes_read(), static_cast<int64_t>(metadata_bytes + 2048 + 3 * kBlock));
}

TEST_F(ShardedCheckpointTest, CorruptedTruncatedOrMismatchedFilesAreDataLoss) {
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, state_, 2, 2).ok());
  ASSERT_TRUE(SaveAll(&env_, "/other", layout_, State(layout_.num_params(), 9), 2, 2).ok());
  const std::string step_dir = StepDir(kDir, 2);
  const std::string rank1 = step_dir + "/rank_1.bin";
  const std::string clean = *ReadFileToString(&env_, rank1);
  auto load = [&] { return LoadAll(&env_, step_dir, layout_).status(); };

  std::string bad = clean;
  bad[clean.size() / 2] ^= 0x10;
  ASSERT_TRUE(OverwriteFile(&env_, rank1, bad).ok());
  absl::Status s = load();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(rank1));
  EXPECT_THAT(s.message(), HasSubstr("checksum mismatch in data block"));

  ASSERT_TRUE(OverwriteFile(&env_, rank1, clean.substr(0, clean.size() - 100)).ok());
  s = load();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("truncated at offset ", clean.size() - 100)));

  // The same rank's file from another save (same step, other data).
  ASSERT_TRUE(
      OverwriteFile(&env_, rank1, *ReadFileToString(&env_, "/other/step_2/rank_1.bin")).ok());
  s = load();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("from another save"));

  // Rank 0's file in rank 1's place.
  ASSERT_TRUE(OverwriteFile(&env_, rank1, *ReadFileToString(&env_, step_dir + "/rank_0.bin")).ok());
  EXPECT_EQ(load().code(), absl::StatusCode::kDataLoss);

  ASSERT_TRUE(env_.DeleteFile(rank1).ok());
  s = load();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("missing"));

  ASSERT_TRUE(env_.CreateDirs(rank1).ok());
  s = load();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(rank1 + " is a directory, not a file, but metadata.json "
                                             "lists it as a rank file"));
  ASSERT_TRUE(env_.DeleteRecursively(rank1).ok());

  ASSERT_TRUE(OverwriteFile(&env_, rank1, clean).ok());
  EXPECT_TRUE(load().ok());
}

TEST_F(ShardedCheckpointTest, CorruptMetadataIsDataLoss) {
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, state_, 2, 2).ok());
  const std::string path = StepDir(kDir, 2) + "/metadata.json";
  const std::string clean = *ReadFileToString(&env_, path);

  std::string bad = clean;
  const size_t digit = clean.find("\"data_position\": 6") + 17;
  bad[digit] = '7';  // still valid JSON
  ASSERT_TRUE(OverwriteFile(&env_, path, bad).ok());
  absl::Status s = ReadMetadata(&env_, StepDir(kDir, 2)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("checksum mismatch"));
  EXPECT_THAT(s.message(), HasSubstr(path));

  ASSERT_TRUE(OverwriteFile(&env_, path, clean.substr(0, 40)).ok());
  s = ReadMetadata(&env_, StepDir(kDir, 2)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("invalid JSON at offset"));

  EXPECT_EQ(ReadMetadata(&env_, StepDir(kDir, 99)).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ShardedCheckpointTest, LayoutMismatchIsInvalidArgument) {
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, state_, 2, 2).ok());
  model::Gpt2Config other = *layout_.config().As<model::Gpt2Config>();
  other.vocab_size = 24;
  const model::ModelLayout bigger = *model::ModelLayout::Create(other);
  State got(bigger.num_params(), 0);
  absl::Status s = LoadRanges(&env_, StepDir(kDir, 2), bigger, LoadRangesOf(&got, {{0, 10}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("parameters saved"));
  // Out-of-range request.
  State small(layout_.num_params() + 5, 0);
  s = LoadRanges(&env_, StepDir(kDir, 2), layout_,
                 LoadRangesOf(&small, {{0, layout_.num_params() + 1}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ShardedCheckpointTest, LatestPointer) {
  EXPECT_EQ(LatestStepDir(&env_, kDir).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(env_.CreateDirs(kDir).ok());
  for (const char* bad : {"step_x\n", "", "step_-1", "step_007", "steps_1"}) {
    ASSERT_TRUE(OverwriteFile(&env_, "/ckpt/latest", bad).ok());
    EXPECT_EQ(LatestStepDir(&env_, kDir).status().code(), absl::StatusCode::kDataLoss) << bad;
  }
  ASSERT_TRUE(OverwriteFile(&env_, "/ckpt/latest", "step_4\n").ok());
  EXPECT_THAT(LatestStepDir(&env_, kDir).status().message(), HasSubstr("has no metadata.json"));
}

TEST_F(ShardedCheckpointTest, CommitChecksEveryRankFile) {
  const Ranges r0 = ShardRanges(layout_, 2, 0), r1 = ShardRanges(layout_, 2, 1);
  ASSERT_TRUE(WriteRankFile(&env_, kDir, 1, 0, SaveRangesOf(state_, r0)).ok());
  // Rank 1 has not written yet.
  absl::Status s =
      WriteMetadataAndCommit(&env_, kDir, MetaFor(layout_, 1, 2, {r0, r1}), layout_, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("rank 1"));
  // Ranges that leave a gap.
  s = WriteMetadataAndCommit(&env_, kDir, MetaFor(layout_, 1, 2, {r0, {}}), layout_, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  // Rank 1 wrote other ranges than rank 0 believes.
  ASSERT_TRUE(WriteRankFile(&env_, kDir, 1, 1, SaveRangesOf(state_, {{0, 5}})).ok());
  s = WriteMetadataAndCommit(&env_, kDir, MetaFor(layout_, 1, 2, {r0, r1}), layout_, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  // A stale file of an earlier attempt with more ranks does not end up in the step.
  ASSERT_TRUE(WriteRankFile(&env_, kDir, 1, 1, SaveRangesOf(state_, r1)).ok());
  ASSERT_TRUE(WriteRankFile(&env_, kDir, 1, 2, {}).ok());
  ASSERT_TRUE(
      WriteMetadataAndCommit(&env_, kDir, MetaFor(layout_, 1, 2, {r0, r1}), layout_, 0).ok());
  EXPECT_THAT(*env_.ListDir(StepDir(kDir, 1)),
              ElementsAre("metadata.json", "rank_0.bin", "rank_1.bin"));
  EXPECT_TRUE(*LoadAll(&env_, StepDir(kDir, 1), layout_) == state_);
  EXPECT_EQ(
      WriteMetadataAndCommit(&env_, kDir, MetaFor(layout_, 1, 3, {r0, r1}), layout_, 0).code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_F(ShardedCheckpointTest, KeepLastPrunesOnlyAfterLatestMoved) {
  for (int step = 1; step <= 5; ++step) {
    ASSERT_TRUE(SaveAll(&env_, kDir, layout_, State(layout_.num_params(), step), step, 2, 2).ok());
  }
  // An abandoned partial save.
  ASSERT_TRUE(WriteRankFile(&env_, kDir, 9, 0, {}).ok());
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, State(layout_.num_params(), 6), 6, 2, 2).ok());
  EXPECT_THAT(*env_.ListDir(kDir), ElementsAre("latest", "owner.json", "step_5", "step_6"));
  EXPECT_EQ(*LatestStepDir(&env_, kDir), "/ckpt/step_6");

  // Resumed from step 5, the run saves step 6 again and then step 7 with keep_last 0.
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, State(layout_.num_params(), 66), 6, 3, 0).ok());
  EXPECT_TRUE(*LoadAll(&env_, StepDir(kDir, 6), layout_) == State(layout_.num_params(), 66));
  EXPECT_EQ(ReadMetadata(&env_, StepDir(kDir, 6))->world_size, 3);
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, State(layout_.num_params(), 7), 7, 1, 0).ok());
  EXPECT_THAT(*env_.ListDir(kDir),
              ElementsAre("latest", "owner.json", "step_5", "step_6", "step_7"));

  // A run resumed from step 5 that saves step 6 with keep_last drops the abandoned step 7.
  ASSERT_TRUE(SaveAll(&env_, kDir, layout_, State(layout_.num_params(), 8), 6, 2, 3).ok());
  EXPECT_THAT(*env_.ListDir(kDir), ElementsAre("latest", "owner.json", "step_5", "step_6"));
}

// checkpoint.keep_best (issue 31): besides the newest keep_last, the steps with the lowest eval
// loss survive; a step saved without an evaluation never counts as best.
TEST_F(ShardedCheckpointTest, KeepBestKeepsTheLowestEvalLossBesidesKeepLast) {
  const std::optional<double> losses[] = {3.0, 2.0, std::nullopt, 2.5, 1.5, 2.2, 2.8, 2.9};
  for (int step = 1; step <= 8; ++step) {
    std::vector<Ranges> by_rank;
    for (int r = 0; r < 2; ++r) {
      by_rank.push_back(ShardRanges(layout_, 2, r));
      ASSERT_TRUE(WriteRankFile(&env_, kDir, step, r,
                                SaveRangesOf(State(layout_.num_params(), step), by_rank.back()))
                      .ok());
    }
    CheckpointMeta meta = MetaFor(layout_, step, 2, by_rank);
    meta.eval_loss = losses[step - 1];
    ASSERT_TRUE(WriteMetadataAndCommit(&env_, kDir, meta, layout_, /*keep_last=*/2,
                                       /*keep_best=*/2)
                    .ok());
  }
  // The newest two (7, 8) and the two best (5: 1.5, 2: 2.0); 3 had no evaluation.
  EXPECT_THAT(*env_.ListDir(kDir),
              ElementsAre("latest", "owner.json", "step_2", "step_5", "step_7", "step_8"));
  EXPECT_EQ(ReadMetadata(&env_, StepDir(kDir, 5))->eval_loss, 1.5);
  EXPECT_EQ(ReadMetadata(&env_, StepDir(kDir, 7))->eval_loss, 2.8);
  // keep_best 0 is keep_last alone.
  std::vector<Ranges> by_rank = {ShardRanges(layout_, 2, 0), ShardRanges(layout_, 2, 1)};
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(WriteRankFile(&env_, kDir, 9, r,
                              SaveRangesOf(State(layout_.num_params(), 9), by_rank[r]))
                    .ok());
  }
  ASSERT_TRUE(WriteMetadataAndCommit(&env_, kDir, MetaFor(layout_, 9, 2, by_rank), layout_, 2).ok());
  EXPECT_THAT(*env_.ListDir(kDir), ElementsAre("latest", "owner.json", "step_8", "step_9"));
}

TEST(CheckpointMetadataTest, JsonRoundTrip) {
  const model::ModelLayout layout = SmallLayout();
  StepMetadata m;
  m.meta = MetaFor(layout, 12, 2, {ShardRanges(layout, 2, 0), ShardRanges(layout, 2, 1)});
  SetLayoutTable(layout, &m);
  for (int r = 0; r < 2; ++r) {
    m.files.push_back({r, RankFileName(r), m.meta.ranges_by_rank[r], 1000u + r, 0xdeadbeefu + r});
  }
  auto back = StepMetadataFromJson(StepMetadataToJson(m), "m.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->meta.step, 12);
  EXPECT_EQ(back->meta.ranges_by_rank, m.meta.ranges_by_rank);
  EXPECT_EQ(back->files[1].crc32c, 0xdeadbef0u);
  EXPECT_EQ(back->files[1].bytes, 1001u);
  EXPECT_EQ(back->tensors.size(), layout.specs().size());
  EXPECT_EQ(back->tensors[4].name, layout.flat().entries()[4].name);
  EXPECT_EQ(back->total_bytes(), 2001u);
  EXPECT_TRUE(CheckLayoutMatches(*back, layout, "m.json").ok());
  EXPECT_EQ(StepMetadataToJson(*back), StepMetadataToJson(m));
  // Found by fuzz/checkpoint_metadata_fuzz.cc: a number beyond double threw out of the reader.
  auto overflow = StepMetadataFromJson(R"({"step": 1E400})", "m.json");
  EXPECT_EQ(overflow.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(overflow.status().message(), HasSubstr("m.json: invalid JSON"));
  // Also found by fuzzing: a tensor's shape product and offset + numel overflowed int64 (UB)
  // instead of being refused.
  // (2^62 + 1) * 4 wraps to 4, the numel given, so the wrapped product used to match.
  for (auto [shape, offset] : {std::pair<std::vector<int64_t>, int64_t>{{(int64_t{1} << 62) + 1, 4}, 0},
                               {{4}, INT64_MAX}}) {
    StepMetadata bad = m;
    bad.tensors[0].shape = shape;
    bad.tensors[0].offset = offset;
    bad.tensors[0].numel = 4;
    auto s = StepMetadataFromJson(StepMetadataToJson(bad), "m.json").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(s.message(), HasSubstr("has an inconsistent shape, offset or size"));
  }
}

}  // namespace
}  // namespace accel::checkpoint

// A job's dataset from submit to a rank's start (docs/data.md "In a job"): the lowering names
// the prepared train.bin (config/dataset_lowering.h) and checks the data at the door; a rank's
// data phase (dataset_phase.h) prepares it on rank 0 while the others wait.
#include "engine/train/dataset_phase.h"

#include <string>

#include "engine/config/dataset_lowering.h"
#include "engine/config/lower.h"
#include "engine/data/dataset_test_util.h"
#include "engine/data/token_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::train {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class DatasetPhaseTest : public data::testing::DatasetFilesTest {
 protected:
  void SetUp() override {
    DatasetFilesTest::SetUp();
    WriteModel(300);
    jsonl_ = Write("d.jsonl", R"({"text": "a b ab"}
{"text": "ab a"}
{"text": "b b a"}
{"text": "a"}
)");
  }

  // A GPT-2 config.json in the tokenizer's folder: the model folder a user brings.
  void WriteModel(int vocab) {
    config_ = Write("config.json", absl::StrCat(R"({"model_type": "gpt2", "n_layer": 1,
        "n_head": 2, "n_embd": 16, "n_positions": 64, "vocab_size": )",
                                                vocab, "}"));
  }

  config::LoweringInputs Inputs() {
    config::LoweringInputs in;
    in.job.model_config = config_;
    in.job.data = jsonl_;
    in.job.batch = 1;
    in.job.seq = 4;
    in.job.steps = 1;
    in.job.dataset.format = "jsonl";
    in.job.dataset.cache_dir = JoinPath(root_, "cache");
    return in;
  }

  std::string config_, jsonl_;
};

TEST_F(DatasetPhaseTest, LoweringNamesThePreparedShardsAndFindsTheTokenizerBesideTheModel) {
  config::LoweringInputs in = Inputs();
  in.job.dataset.validation_fraction = 0.5;
  absl::StatusOr<config::LoweredJob> lowered = config::Lower(in);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const config::TrainOptions& o = lowered->options;
  EXPECT_THAT(o.data, StartsWith(JoinPath(root_, "cache/")));
  EXPECT_THAT(o.data, EndsWith("/train.bin"));
  EXPECT_EQ(o.eval.data, JoinPath(DirName(o.data), "validation.bin"));
  EXPECT_EQ(o.dataset.source, jsonl_);
  EXPECT_EQ(o.dataset.tokenizer, JoinPath(root_, "tokenizer.json"));
  EXPECT_FALSE(env_->FileExists(o.data)) << "submit prepares nothing";

  // The same bytes lower to the same place; other bytes to another.
  absl::StatusOr<config::LoweredJob> again = config::Lower(in);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->options.data, o.data);
  Write("d.jsonl", R"({"text": "b"})");
  again = config::Lower(in);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->options.data, o.data);
}

// data.mix: the sources are data.path (weight 1) then the mixture's, in order, and the
// mixture is part of the cache key.
TEST_F(DatasetPhaseTest, AMixtureLowersToItsOwnPreparedShards) {
  const std::string more = Write("more.jsonl", "{\"text\": \"b a\"}\n");
  config::LoweringInputs in = Inputs();
  in.job.dataset.mix = {{more, 2.5}};
  absl::StatusOr<data::PrepareOptions> p = config::PrepareOptionsOf([&] {
    config::DatasetOptions d = in.job.dataset;
    d.source = jsonl_;
    return d;
  }(), 1);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->sources.size(), 2u);
  EXPECT_EQ(p->sources[0].path, jsonl_);
  EXPECT_EQ(p->sources[0].weight, 1.0);
  EXPECT_EQ(p->sources[1].path, more);
  EXPECT_EQ(p->sources[1].weight, 2.5);

  absl::StatusOr<config::LoweredJob> mixed = config::Lower(in);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  absl::StatusOr<config::LoweredJob> single = config::Lower(Inputs());
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_NE(mixed->options.data, single->options.data);
  // Only the mixture, no data.path.
  in.job.data.clear();
  absl::StatusOr<config::LoweredJob> only = config::Lower(in);
  ASSERT_TRUE(only.ok()) << only.status();
  EXPECT_NE(only->options.data, mixed->options.data);
}

TEST_F(DatasetPhaseTest, WhatSubmitCanKnowIsRefusedThereNamingTheKeyOrLine) {
  config::LoweringInputs in = Inputs();
  Write("d.jsonl", "{\"text\": \"a\"}\n{\"txt\": \"b\"}\n");
  absl::StatusOr<config::LoweredJob> lowered = config::Lower(in);
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()), HasSubstr("d.jsonl:2"));

  in = Inputs();
  WriteModel(100);  // the small tokenizer's ids go past 100
  lowered = config::Lower(in);
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()), HasSubstr("data.tokenizer"));
  EXPECT_THAT(std::string(lowered.status().message()), HasSubstr("vocab_size"));

  in = Inputs();
  in.job.model_config.clear();
  in.job.model = "gpt2-tiny";  // a preset: no folder with a tokenizer.json
  lowered = config::Lower(in);
  ASSERT_FALSE(lowered.ok());
  EXPECT_THAT(std::string(lowered.status().message()), StartsWith("data.tokenizer: required"));
}

TEST_F(DatasetPhaseTest, RankZeroPreparesWhileTheOthersWaitForIt) {
  absl::StatusOr<config::LoweredJob> lowered = config::Lower(Inputs());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const config::TrainOptions& o = lowered->options;

  absl::Status waited = PrepareDatasetIfMissing(o, 1, env_, absl::Milliseconds(200));
  EXPECT_EQ(waited.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(waited.message()), HasSubstr(o.data));

  ASSERT_TRUE(PrepareDatasetIfMissing(o, 0, env_).ok());
  ASSERT_TRUE(env_->FileExists(o.data));
  EXPECT_TRUE(PrepareDatasetIfMissing(o, 1, env_, absl::Milliseconds(1)).ok());
  absl::StatusOr<std::unique_ptr<data::TokenSource>> tokens = data::TokenSource::Open(env_, o.data);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_GT((*tokens)->size(), 10);

  // Sources edited after submit prepare elsewhere: the plan's file would never appear.
  ASSERT_TRUE(env_->DeleteRecursively(DirName(o.data)).ok());
  Write("d.jsonl", R"({"text": "b a"})");
  absl::Status changed = PrepareDatasetIfMissing(o, 0, env_);
  EXPECT_EQ(changed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(changed.message()), HasSubstr("changed since the job was submitted"));
}

}  // namespace
}  // namespace accel::train

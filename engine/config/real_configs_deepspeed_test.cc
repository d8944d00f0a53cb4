// DeepSpeed JSONs from DeepSpeed's own examples and tutorials (tests/config/, see its README),
// each with a key the resolver once mishandled: settings of features this engine does not have
// (warned), a repeated key (refused), Adam without bias correction (carried to the optimizer),
// and fixed batch sizes that a job's micro batch must not override.
#include <string>

#include "engine/base/env.h"
#include "engine/config/test_util.h"
#include "nlohmann/json.hpp"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using testing::ExampleJob;
using testing::HasWarning;
using testing::PlanMatches;
using testing::ResolveFile;

// Every JSON here runs under the questionnaire's JSON-file-mode YAML (2 processes).
absl::StatusOr<TrainPlan> Resolve(const std::string& json, ConfigInputs inputs = ExampleJob()) {
  return ResolveFile("tests/config/ds_file_mode.yaml", std::move(inputs), "tests/config/" + json);
}

TEST(RealConfigsDeepSpeedTest, UlyssesSeqParallelDataTypeIsWarnedAndIgnored) {
  auto plan = Resolve("ds_ulysses_seq_parallel.json");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, R"({"strategy": "full_shard", "save_16bit_model": true,
      "train_micro_batch_size_per_gpu": 2, "train_batch_size": 4})", /*complete=*/false));
  EXPECT_TRUE(HasWarning(*plan, "ds_ulysses_seq_parallel.json: "
                                "seq_parallel_communication_data_type: does nothing here: this "
                                "engine has no sequence parallelism; ignored"));
  // Its value is still checked, as DeepSpeed checks it.
  auto bad = testing::ResolveText(
      "distributed_type: DEEPSPEED\nnum_processes: 2\n",
      R"({"zero_optimization": {"stage": 3}, "seq_parallel_communication_data_type": "int8"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "seq_parallel_communication_data_type: \"int8\" is not one of fp32, fp16, bf16"),
            std::string::npos)
      << bad.status();
}

TEST(RealConfigsDeepSpeedTest, DeepCompileSectionIsWarnedAndIgnored) {
  auto plan = Resolve("ds_deepcompile_zero3.json");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->strategy, Strategy::kFullShard);
  EXPECT_TRUE(HasWarning(*plan, "ds_deepcompile_zero3.json: compile: does nothing here: this "
                                "engine does not compile the model (deepcompile: true is not "
                                "applied); ignored"));
}

TEST(RealConfigsDeepSpeedTest, RepeatedKeyNamesTheFileTheKeyPathAndTheLine) {
  // Python's json keeps the last "stage" (3) without a word; DeepSpeed's loader refuses the file.
  auto plan = Resolve("ds_zero2_duplicate_stage.json");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("ds_zero2_duplicate_stage.json:15:5: "
                                         "zero_optimization.stage: key given twice (also at "
                                         "line 8)"),
            std::string::npos)
      << plan.status();
}

TEST(RealConfigsDeepSpeedTest, AdamWithoutBiasCorrectionIsCarriedToThePlan) {
  // BingBertSquad's shape: fixed batch sizes (24 = 3 × 4 × 2), Adam with bias_correction false.
  auto plan = Resolve("ds_squad_adam_no_bias_correction.json");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->optimizer.has_value());
  EXPECT_EQ(plan->optimizer->type, "Adam");
  EXPECT_FALSE(plan->optimizer->bias_correction);
  EXPECT_DOUBLE_EQ(*plan->optimizer->lr, 3e-5);
  EXPECT_DOUBLE_EQ(*plan->optimizer->weight_decay, 0.0);
  EXPECT_EQ(plan->strategy, Strategy::kShardOptimizer);
  // The file's micro batch 3 stays, not the job's 2 (Accelerate fills only "auto").
  EXPECT_TRUE(PlanMatches(*plan, R"({"gradient_accumulation_steps": 4,
      "train_micro_batch_size_per_gpu": 3, "train_batch_size": 24})", /*complete=*/false));
  EXPECT_TRUE(HasWarning(*plan, "ds_squad_adam_no_bias_correction.json: "
                                "train_micro_batch_size_per_gpu: 3 (fixed in the file) is kept "
                                "over the job's micro batch size 2"));
  // The default stays on.
  plan = Resolve("zero_stage2_config.json");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->optimizer->bias_correction);
}

TEST(RealConfigsDeepSpeedTest, FixedTrainBatchSizeGivesTheMicroBatchOverTheJobs) {
  // DeepSpeed's CIFAR tutorial config: only train_batch_size (16). DeepSpeed derives the micro
  // batch, 16 / (1 × 2) = 8; the job's 2 does not replace it.
  auto plan = Resolve("ds_cifar_train_batch_only.json");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, R"({"strategy": "no_shard", "gradient_accumulation_steps": 1,
      "train_micro_batch_size_per_gpu": 8, "train_batch_size": 16})", /*complete=*/false));
  EXPECT_TRUE(HasWarning(*plan, "ds_cifar_train_batch_only.json: train_batch_size: 16 over 1 "
                                "accumulation step(s) × 2 processes gives a micro batch of 8, "
                                "which is kept over the job's micro batch size 2"));
  ConfigInputs same = ExampleJob();
  same.job.micro_batch_size = 8;
  plan = Resolve("ds_cifar_train_batch_only.json", same);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(HasWarning(*plan, "is kept over the job's"));

  // With train_micro_batch_size_per_gpu "auto" the job's 2 fills it (as Accelerate does), and
  // the batch rule is checked on the final values: 16 != 2 × 1 × 2 fails, as in DeepSpeed.
  auto text = ReadFileToString(
      Env::Default(), testing::SourcePath("tests/config/ds_cifar_train_batch_only.json"));
  ASSERT_TRUE(text.ok());
  nlohmann::json json = nlohmann::json::parse(*text);
  json["train_micro_batch_size_per_gpu"] = "auto";
  auto bad = testing::ResolveText("distributed_type: DEEPSPEED\nnum_processes: 2\n", json.dump(),
                                  ExampleJob());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("train_batch_size: Check batch related parameters. "
                                        "train_batch_size is not equal to micro_batch_per_gpu * "
                                        "gradient_acc_step * world_size 16 != 2 * 1 * 2"),
            std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace accel::config

// Issue 32: files DeepSpeed and Accelerate run are run with the same meaning here, or refused in
// one line naming the file, the key and why. Each test reads a file of the shape users publish
// (tests/config/, README there): DeepSpeed's leniency (sub_group_size 0, top-level and bf16
// keys it does not read), sequence parallelism, a DeepSpeed JSON where a YAML goes, the job
// values a file's optimizer overrides, and every error of a file in one run.
#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"

#include "engine/base/env.h"
#include "engine/config/lower.h"
#include "engine/config/resolve.h"
#include "engine/config/document.h"
#include "engine/config/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using testing::ExampleJob;
using testing::HasWarning;
using testing::ResolveFile;
using testing::ResolveText;
using testing::SourcePath;

absl::StatusOr<TrainPlan> ResolveJson(const std::string& json, ConfigInputs inputs = ExampleJob()) {
  return ResolveFile("tests/config/ds_file_mode.yaml", std::move(inputs), "tests/config/" + json);
}

int CountLines(std::string_view text) {
  return text.empty() ? 0 : 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// Items 1-3: sub_group_size 0, top-level keys DeepSpeed does not read, bf16 loss-scaling keys.
TEST(LenientConfigTest, DeepSpeedLeniencyIsWarnedNotRefused) {
  ConfigInputs job = ExampleJob();
  job.mixed_precision = PrecisionMode::kBf16;
  auto plan = ResolveJson("ds_zero3_lenient_keys.json", job);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->strategy, Strategy::kFullShard);
  EXPECT_EQ(plan->comm.sub_group_size, 0);
  const std::string file = "ds_zero3_lenient_keys.json: ";
  for (const char* key : {"_comment", "cuda_visible_devices", "comms_config", "monitor_config"}) {
    EXPECT_TRUE(HasWarning(*plan, file + key + ": unknown key; ignored (DeepSpeed does not "
                                               "read it)"))
        << key;
  }
  for (const char* key : {"loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
                          "min_loss_scale"}) {
    EXPECT_TRUE(HasWarning(*plan, file + "bf16." + key + ": unknown key; ignored (DeepSpeed's "
                                                         "bf16 section reads enabled"))
        << key;
  }
}

// Item 1: sub_group_size 0 lowers to the default tile (DeepSpeed's "one tensor per sub-group"
// bounds memory, not the math); a positive value still caps the tile.
TEST(LenientConfigTest, SubGroupSizeZeroKeepsTheDefaultOffloadTile) {
  const std::string yaml = "distributed_type: DEEPSPEED\nnum_processes: 2\n";
  auto json = [](int64_t sub_group) {
    return absl::StrCat(R"({"zero_optimization": {"stage": 3, "sub_group_size": )", sub_group,
                        R"(, "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp"},
        "offload_param": {"device": "nvme", "nvme_path": "/tmp"}},
        "train_micro_batch_size_per_gpu": 1})");
  };
  const TrainOptions defaults;
  for (int64_t sub_group : {int64_t{0}, int64_t{4096}}) {
    auto plan = ResolveText(yaml, json(sub_group), ExampleJob());
    ASSERT_TRUE(plan.ok()) << plan.status();
    TrainOptions options;
    ASSERT_TRUE(ApplyTrainPlan(*plan, &options).ok());
    EXPECT_EQ(options.shard.offload_tile_numel,
              sub_group == 0 ? defaults.shard.offload_tile_numel : 4096);
  }
  auto negative = ResolveText(yaml, json(-1), ExampleJob());
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("zero_optimization.sub_group_size"),
            std::string::npos);
}

// Item 2: a near-miss of a key we know stays an error with "did you mean".
TEST(LenientConfigTest, NearMissOfAKnownKeyStaysAnError) {
  auto plan = ResolveText("distributed_type: DEEPSPEED\nnum_processes: 2\n",
                          R"({"zero_optimization": {"stage": 2}, "gradient_acumulation_steps": 4,
                              "bf16": {"enabeld": true}})",
                          ExampleJob());
  ASSERT_FALSE(plan.ok());
  const std::string message(plan.status().message());
  EXPECT_NE(message.find("gradient_acumulation_steps: unknown key (did you mean "
                         "\"gradient_accumulation_steps\"?)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("bf16.enabeld: unknown key (did you mean \"enabled\"?)"),
            std::string::npos)
      << message;
}

// A file acceld opened for a client: the warning stands at the key's line, without its name.
TEST(LenientConfigTest, IgnoredKeysOfAFileReadForAClientAreNotQuoted) {
  Document yaml = *ParseYamlDocument("distributed_type: DEEPSPEED\nnum_processes: 2\n", "a.yaml");
  absl::StatusOr<Document> json = ParseJsonDocument(
      R"({"zero_optimization": {"stage": 2}, "secret_token_x": 1})", "b.json",
      Echo::kPositionsOnly);
  ASSERT_TRUE(json.ok());
  auto plan = ResolveDocuments(yaml, &*json, ExampleJob());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(HasWarning(*plan, "unknown key; ignored"));
  EXPECT_FALSE(HasWarning(*plan, "secret_token_x"));
}

// Item 12: one line, "sequence parallelism is not supported", for each shape.
TEST(LenientConfigTest, SequenceParallelismIsRefusedInOneLine) {
  for (const char* yaml : {"tests/config/accelerate_sequence_parallel.yaml",
                           "tests/config/accelerate_context_parallel.yaml"}) {
    auto plan = ResolveFile(yaml, ExampleJob());
    ASSERT_FALSE(plan.ok()) << yaml;
    const std::string message(plan.status().message());
    EXPECT_EQ(CountLines(message), 1) << message;
    EXPECT_NE(message.find("2: sequence parallelism is not supported by this engine"),
              std::string::npos)
        << message;
  }
  auto plan = ResolveJson("ds_ulysses_sequence_parallel_size.json");
  ASSERT_FALSE(plan.ok());
  // One line: the file (as the resolver names it, by its path), the key, why.
  EXPECT_THAT(std::string(plan.status().message()),
              ::testing::EndsWith("/ds_ulysses_sequence_parallel_size.json: "
                                  "sequence_parallel_size: 4: sequence parallelism is not "
                                  "supported by this engine"));
  EXPECT_EQ(CountLines(std::string(plan.status().message())), 1);
  // Size 1 is no sequence parallelism.
  EXPECT_TRUE(ResolveText("distributed_type: DEEPSPEED\nnum_processes: 2\n",
                          R"({"zero_optimization": {"stage": 2}, "sequence_parallel_size": 1})",
                          ExampleJob())
                  .ok());
}

// Item 13: a ZeRO-3 file with a bad value and parameter-only offload. Parameter-only offload
// runs now (item 4), so the bad value is the file's one error, and nothing is said about the
// offload.
TEST(LenientConfigTest, EveryErrorOfAZero3FileIsReportedInOneRun) {
  auto plan = ResolveJson("ds_zero3_param_offload_two_errors.json");
  ASSERT_FALSE(plan.ok());
  const std::string message(plan.status().message());
  EXPECT_NE(message.find("zero_optimization.sub_group_size: -1 is out of range"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("offload_param"), std::string::npos) << message;
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 0) << message;
}

// Item 9: a DeepSpeed JSON where the Accelerate YAML goes runs as an implied DEEPSPEED config.
TEST(LenientConfigTest, ADeepSpeedJsonGivenAsTheConfigRunsAsDeepSpeed) {
  ConfigInputs inputs = ExampleJob();
  inputs.accelerate_config = SourcePath("tests/config/ds_optimizer_scheduler_fixed.json");
  inputs.num_processes = 2;
  auto plan = ResolvePlan(inputs);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->distributed_type, DistributedType::kDeepSpeed);
  EXPECT_EQ(plan->strategy, Strategy::kShardGradOp);
  EXPECT_EQ(plan->train_batch_size, 2 * 4 * 2);
  // Detected by content too (no .json suffix), and a YAML is still a YAML.
  EXPECT_TRUE(IsDeepSpeedJsonFile("ds.conf", "  {\"zero_optimization\": {\"stage\": 2}}"));
  EXPECT_FALSE(IsDeepSpeedJsonFile("a.yaml", "{distributed_type: NO}"));
  EXPECT_FALSE(IsDeepSpeedJsonFile("a.conf", R"({"distributed_type": "NO"})"));
  EXPECT_FALSE(IsDeepSpeedJsonFile("a.yaml", "distributed_type: NO\n"));
}

// Item 11: the optimizer and scheduler a DeepSpeed JSON fixes replace the job's, with a warning
// for each value of the job they override.
TEST(LenientConfigTest, FixedOptimizerValuesThatOverrideTheJobsAreWarned) {
  ConfigInputs job = ExampleJob();  // lr 1e-4, weight decay 0.01, 500 steps
  job.job.lr = 2e-5;
  job.job.betas = std::array<double, 2>{0.9, 0.95};
  job.job.warmup_steps = 10;
  auto plan = ResolveJson("ds_optimizer_scheduler_fixed.json", job);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->optimizer.has_value());
  EXPECT_DOUBLE_EQ(*plan->optimizer->lr, 0.001);
  const std::string file = "ds_optimizer_scheduler_fixed.json: ";
  EXPECT_TRUE(HasWarning(*plan, file + "optimizer.params.lr: 0.001 (fixed in the file) "
                                       "overrides the job's lr 2e-05"));
  EXPECT_TRUE(HasWarning(*plan, file + "optimizer.params.betas: (0.8, 0.999) (fixed in the "
                                       "file) override the job's betas (0.9, 0.95)"));
  EXPECT_TRUE(HasWarning(*plan, file + "optimizer.params.weight_decay: 3e-07"));
  EXPECT_TRUE(HasWarning(*plan, file + "scheduler.params.warmup_num_steps: 1000 (fixed in the "
                                       "file) overrides the job's warmup_steps 10"));
  EXPECT_TRUE(HasWarning(*plan, file + "scheduler.params.warmup_max_lr: 0.001"));
  // The same values in the job: nothing overridden, nothing said.
  job.job.lr = 0.001;
  job.job.betas = std::array<double, 2>{0.8, 0.999};
  job.job.weight_decay = 3e-7;
  job.job.eps = 1e-8;
  job.job.warmup_steps = 1000;
  plan = ResolveJson("ds_optimizer_scheduler_fixed.json", job);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(HasWarning(*plan, "overrides the job's"));
  EXPECT_FALSE(HasWarning(*plan, "override the job's"));
  // Defaults standing in for a job nobody gave are never reported as overridden.
  job = ExampleJob();
  job.job.stand_in = true;
  plan = ResolveJson("ds_optimizer_scheduler_fixed.json", job);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(HasWarning(*plan, "overrides the job's"));
  EXPECT_FALSE(HasWarning(*plan, "is kept over the job's"));
}


// A model config.json written to the test's temporary directory.
std::string ModelFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr);
  if (f != nullptr) {
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  return path;
}

constexpr char kQwen2Small[] =
    R"("model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
       "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
       "vocab_size": 256, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
       "rope_theta": 10000.0, "tie_word_embeddings": true)";

LoweringInputs FsdpJob(const std::string& model_config, std::string yaml) {
  LoweringInputs in;
  in.job.model_config = model_config;
  in.job.data = "/data/unused.txt";  // not opened by the lowering
  in.job.batch = 2;
  in.job.seq = 32;
  in.job.steps = 10;
  in.accelerate = {"fsdp.yaml", std::move(yaml)};
  in.check_files = false;
  return in;
}

// Item 8: a wrap class the model does not have is refused naming both classes.
TEST(LenientConfigTest, AWrapClassTheModelDoesNotHaveIsRefusedNamingBoth) {
  const std::string model =
      ModelFile("lenient_qwen2.json", absl::StrCat("{", kQwen2Small,
                                                   R"(, "architectures": ["Qwen2ForCausalLM"]})"));
  auto text = ReadFileToString(Env::Default(),
                               SourcePath("tests/config/accelerate_fsdp_foreign_wrap_class.yaml"));
  ASSERT_TRUE(text.ok());
  auto lowered = Lower(FsdpJob(model, *text));
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(std::string(lowered.status().message()),
            "fsdp.yaml: fsdp_config.fsdp_transformer_layer_cls_to_wrap: Qwen3_5DecoderLayer is "
            "not a layer of model " + model + " (qwen2, whose blocks are Qwen2DecoderLayer)");
  // The model's own class runs; so do classes every model has (a norm), as one unit per block.
  std::string own = *text;
  own.replace(own.find("Qwen3_5DecoderLayer"), 19, "Qwen2DecoderLayer");
  EXPECT_TRUE(Lower(FsdpJob(model, own)).ok());
  std::string norm = *text;
  norm.replace(norm.find("Qwen3_5DecoderLayer"), 19, "Qwen2RMSNorm");
  EXPECT_TRUE(Lower(FsdpJob(model, norm)).ok());
}

constexpr char kFsdp[] = "distributed_type: FSDP\nnum_processes: 1\nuse_cpu: true\n";

// Items 6 and 7 through the lowering: a custom causal class is a warning among the job's; a
// reward model's head and a quantized checkpoint are refused naming the key.
TEST(LenientConfigTest, ModelConfigWarningsReachTheJobsWarnings) {
  const std::string custom = ModelFile(
      "lenient_custom.json",
      absl::StrCat("{", kQwen2Small, R"(, "architectures": ["LlamaForMultiCausalLMv2"]})"));
  auto lowered = Lower(FsdpJob(custom, kFsdp));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_NE(std::find(lowered->notes.begin(), lowered->notes.end(),
                      custom + ": architectures: LlamaForMultiCausalLMv2 is not a class this "
                               "engine knows (*ForCausalLM, *LMHeadModel); ignored: trained as a "
                               "causal LM of its model_type, without the class's own heads, if "
                               "any"),
            lowered->notes.end());
  const std::string reward = ModelFile(
      "lenient_reward.json", absl::StrCat("{", kQwen2Small,
                                          R"(, "architectures": ["Qwen2ForSequenceClassification"]})"));
  lowered = Lower(FsdpJob(reward, kFsdp));
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(CountLines(std::string(lowered.status().message())), 1) << lowered.status();
  EXPECT_EQ(std::string(lowered.status().message()).rfind(reward + ": architectures: ", 0), 0u)
      << lowered.status();
  const std::string gptq = ModelFile(
      "lenient_gptq.json",
      absl::StrCat("{", kQwen2Small,
                   R"(, "quantization_config": {"quant_method": "gptq", "bits": 4}})"));
  lowered = Lower(FsdpJob(gptq, kFsdp));
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(std::string(lowered.status().message()).rfind(gptq + ": quantization_config: ", 0),
            0u)
      << lowered.status();
}

// Item 13: a model config.json's path appears once in the error, not as "f.json: f.json: ...".
TEST(LenientConfigTest, AModelConfigErrorNamesItsPathOnce) {
  const std::string bad = ModelFile("lenient_bad_type.json", R"({"model_type": "t5"})");
  const std::string missing = ::testing::TempDir() + "/lenient_missing_config.json";
  for (const std::string& path : {bad, missing}) {
    auto lowered = Lower(FsdpJob(path, kFsdp));
    ASSERT_FALSE(lowered.ok()) << path;
    const std::string message(lowered.status().message());
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_EQ(message.find(path), message.rfind(path)) << message;
  }
}

}  // namespace
}  // namespace accel::config

// The seed's mapping between the two vocabularies: an FSDP file and its DeepSpeed counterpart
// resolve to the same engine plan. "Same" compares every plan key except distributed_type,
// warnings and the DeepSpeed-only prefetch tuning numbers (FSDP has none: PrefetchPlan).
#include <string>

#include "absl/strings/str_replace.h"
#include "engine/config/plan_json.h"
#include "engine/config/test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::config {
namespace {

using testing::ResolveText;

// FSDP1 full shard as the launcher resolves it; $-placeholders are substituted per test.
constexpr char kFsdp[] = R"(distributed_type: FSDP
num_processes: 4
mixed_precision: $MP
fsdp_config:
  fsdp_sharding_strategy: $STRATEGY
  fsdp_offload_params: $OFFLOAD
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_backward_prefetch: BACKWARD_PRE
  fsdp_forward_prefetch: true
  fsdp_cpu_ram_efficient_loading: $LOADING
  fsdp_sync_module_states: true
  fsdp_state_dict_type: $STATE
  fsdp_use_orig_params: true
)";

constexpr char kDeepSpeed[] = R"(distributed_type: DEEPSPEED
num_processes: 4
mixed_precision: $MP
deepspeed_config:
  zero_stage: $STAGE
  offload_param_device: $PARAM
  offload_optimizer_device: $OPTIM
  zero3_init_flag: $LOADING
  zero3_save_16bit_model: $SAVE16
)";

struct Knobs {
  std::string mp = "bf16";
  std::string strategy = "FULL_SHARD", stage = "3";
  std::string offload = "false", param = "none", optim = "none";
  std::string loading = "true";
  std::string state = "SHARDED_STATE_DICT", save16 = "false";
};

std::string Fsdp(const Knobs& k) {
  return absl::StrReplaceAll(kFsdp, {{"$MP", k.mp}, {"$STRATEGY", k.strategy},
                                     {"$OFFLOAD", k.offload}, {"$LOADING", k.loading},
                                     {"$STATE", k.state}});
}

std::string DeepSpeed(const Knobs& k) {
  return absl::StrReplaceAll(kDeepSpeed, {{"$MP", k.mp}, {"$STAGE", k.stage}, {"$PARAM", k.param},
                                          {"$OPTIM", k.optim}, {"$LOADING", k.loading},
                                          {"$SAVE16", k.save16}});
}

nlohmann::json EngineView(const TrainPlan& plan, std::initializer_list<const char*> also = {}) {
  nlohmann::json j = nlohmann::json::parse(PlanToJsonText(plan));
  for (const char* key : {"distributed_type", "warnings", "prefetch"}) j.erase(key);
  for (const char* key : also) j.erase(key);
  return j;
}

ConfigInputs Job() {
  ConfigInputs inputs;
  inputs.job.micro_batch_size = 2;
  inputs.job.hidden_size = 64;
  return inputs;
}

// Resolves both and expects the same engine view; returns the FSDP plan's view.
nlohmann::json ExpectSame(const std::string& fsdp_yaml, const std::string& ds_yaml,
                          std::string_view ds_json = "", const ConfigInputs& inputs = Job(),
                          std::initializer_list<const char*> also = {}) {
  auto fsdp = ResolveText(fsdp_yaml, "", inputs);
  auto ds = ResolveText(ds_yaml, ds_json, inputs);
  EXPECT_TRUE(fsdp.ok()) << fsdp.status();
  EXPECT_TRUE(ds.ok()) << ds.status();
  if (!fsdp.ok() || !ds.ok()) return {};
  const nlohmann::json a = EngineView(*fsdp, also), b = EngineView(*ds, also);
  EXPECT_EQ(a, b) << "FSDP:      " << a.dump() << "\nDeepSpeed: " << b.dump();
  return a;
}

TEST(SeedMappingTest, FullShardIsZeroStage3) {
  const nlohmann::json view = ExpectSame(Fsdp({}), DeepSpeed({}));
  EXPECT_EQ(view["strategy"], "full_shard");
  EXPECT_EQ(view["reshard_after_forward"], true);
}

TEST(SeedMappingTest, ShardGradOpIsZeroStage2) {
  Knobs k;
  k.strategy = "SHARD_GRAD_OP";
  k.stage = "2";
  k.loading = "false";
  // FSDP keeps its prefetch flags at SHARD_GRAD_OP; DeepSpeed has nothing to prefetch there.
  const nlohmann::json view = ExpectSame(Fsdp(k), DeepSpeed(k), "", Job(),
                                         {"backward_prefetch", "forward_prefetch"});
  EXPECT_EQ(view["strategy"], "shard_grad_op");
}

TEST(SeedMappingTest, NoShardIsZeroStage0) {
  Knobs k;
  k.strategy = "NO_SHARD";
  k.stage = "0";
  k.loading = "false";
  EXPECT_EQ(ExpectSame(Fsdp(k), DeepSpeed(k), "", Job(), {"backward_prefetch",
                                                          "forward_prefetch"})["strategy"],
            "no_shard");
}

TEST(SeedMappingTest, OffloadParamsIsParamAndOptimizerOffloadToCpu) {
  Knobs k;
  k.offload = "true";
  k.param = k.optim = "cpu";
  const nlohmann::json view = ExpectSame(Fsdp(k), DeepSpeed(k));
  EXPECT_EQ(view["offload_params"], "cpu");
  EXPECT_EQ(view["offload_optimizer"], "cpu");
}

TEST(SeedMappingTest, CpuRamEfficientLoadingIsZero3Init) {
  Knobs on, off;
  off.loading = "false";
  EXPECT_EQ(ExpectSame(Fsdp(on), DeepSpeed(on))["zero3_init"], true);
  const nlohmann::json view = ExpectSame(Fsdp(off), DeepSpeed(off));
  EXPECT_EQ(view["zero3_init"], false);
  EXPECT_EQ(view["cpu_ram_efficient_loading"], false);
}

TEST(SeedMappingTest, ShardedStateDictIsSaveViaConsolidation) {
  // SHARDED_STATE_DICT: per-rank checkpoints, consolidated offline (zero_to_fp32).
  const nlohmann::json view = ExpectSame(Fsdp({}), DeepSpeed({}));
  EXPECT_EQ(view["state_dict_type"], "sharded");
  EXPECT_EQ(view["save_16bit_model"], false);
}

TEST(SeedMappingTest, FullStateDictIsZero3Save16BitModel) {
  Knobs k;
  k.state = "FULL_STATE_DICT";
  k.save16 = "true";
  // Both write a gathered model file on save. Only the periodic checkpoint's optimizer state
  // differs: FSDP's FULL_STATE_DICT gathers it, DeepSpeed keeps it sharded (state_dict_type).
  auto fsdp = ResolveText(Fsdp(k), "", Job());
  auto ds = ResolveText(DeepSpeed(k), "", Job());
  ASSERT_TRUE(fsdp.ok() && ds.ok());
  EXPECT_EQ(fsdp->state_dict_type, StateDictType::kFull);
  EXPECT_EQ(ds->state_dict_type, StateDictType::kSharded);
  const nlohmann::json view = ExpectSame(Fsdp(k), DeepSpeed(k), "", Job(), {"state_dict_type"});
  EXPECT_EQ(view["save_16bit_model"], true);
}

TEST(SeedMappingTest, BackwardPreIsDeepSpeedsAutomaticPrefetch) {
  const nlohmann::json view = ExpectSame(Fsdp({}), DeepSpeed({}));
  EXPECT_EQ(view["backward_prefetch"], "backward_pre");
  // A DeepSpeed prefetch bucket of 0 switches prefetching off: FSDP's NO_PREFETCH.
  auto ds = ResolveText("distributed_type: DEEPSPEED\nnum_processes: 4\n",
                        R"({"zero_optimization": {"stage": 3,
                            "stage3_prefetch_bucket_size": 0}})",
                        Job());
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->backward_prefetch, BackwardPrefetch::kNone);
  EXPECT_FALSE(ds->forward_prefetch);
}

TEST(SeedMappingTest, TransformerBasedWrapAndUseOrigParamsAreTransparentInDeepSpeed) {
  const nlohmann::json view = ExpectSame(Fsdp({}), DeepSpeed({}));
  EXPECT_EQ(view["wrap_policy"], "transformer_based_wrap");
  EXPECT_EQ(view["transformer_layer_cls_to_wrap"], nlohmann::json::array());
  EXPECT_EQ(view["use_orig_params"], true);
  EXPECT_EQ(view["sync_module_states"], true);
}

TEST(SeedMappingTest, AccumulationAndClippingAutoComeFromTheJob) {
  ConfigInputs inputs = Job();
  inputs.job.gradient_accumulation_steps = 4;
  inputs.job.gradient_clipping = 0.5;
  // FSDP: the training loop's values (the job). DeepSpeed JSON: "auto" takes the same.
  const char* json = R"({"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto",
      "stage3_param_persistence_threshold": "auto", "reduce_bucket_size": "auto"},
      "bf16": {"enabled": true}, "gradient_accumulation_steps": "auto",
      "gradient_clipping": "auto", "train_batch_size": "auto",
      "train_micro_batch_size_per_gpu": "auto"})";
  const nlohmann::json view = ExpectSame(
      Fsdp({}), "distributed_type: DEEPSPEED\nnum_processes: 4\n", json, inputs);
  EXPECT_EQ(view["gradient_accumulation_steps"], 4);
  EXPECT_EQ(view["gradient_clipping"], 0.5);
  EXPECT_EQ(view["train_batch_size"], 2 * 4 * 4);
  // DeepSpeed plugin mode: the YAML's values, matching the job's, give the same plan too.
  ExpectSame(Fsdp({}), DeepSpeed({}) + "  gradient_accumulation_steps: 4\n"
                                       "  gradient_clipping: 0.5\n",
             "", inputs);
}

TEST(SeedMappingTest, MixedPrecisionModes) {
  for (const char* mp : {"'no'", "bf16"}) {
    Knobs k;
    k.mp = mp;
    ExpectSame(Fsdp(k), DeepSpeed(k));
  }
}

}  // namespace
}  // namespace accel::config

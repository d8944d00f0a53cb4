// FSDP ↔ DeepSpeed conversion: the written files resolve back to the same engine plan; settings
// without an equivalent block the conversion or are listed as notes.
#include "engine/config/convert.h"

#include "engine/config/plan_json.h"
#include "engine/config/test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::config {
namespace {

using testing::ResolveFile;
using testing::ResolveText;

nlohmann::json Core(const TrainPlan& plan) {
  nlohmann::json j = nlohmann::json::parse(PlanToJsonText(plan));
  for (const char* key : {"distributed_type", "warnings", "prefetch", "state_dict_type"}) {
    j.erase(key);
  }
  return j;
}

ConfigInputs Job() {
  ConfigInputs inputs;
  inputs.job.micro_batch_size = 2;
  inputs.job.gradient_accumulation_steps = 3;
  inputs.job.gradient_clipping = 0.5;
  inputs.job.hidden_size = 64;
  return inputs;
}

bool HasNote(const Conversion& c, std::string_view needle) {
  for (const std::string& n : c.notes) {
    if (n.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(ConvertTest, FsdpConfigsRoundTripThroughDeepSpeed) {
  for (const char* file : {"configs/fsdp_full_shard.yaml", "configs/fsdp_offload.yaml",
                           "configs/fsdp_shard_grad_op.yaml", "configs/multi_node.yaml"}) {
    auto fsdp = ResolveFile(file, Job());
    ASSERT_TRUE(fsdp.ok()) << file << ": " << fsdp.status();
    auto converted = ConvertToDeepSpeed(*fsdp, "ds.json");
    ASSERT_TRUE(converted.ok()) << file << ": " << converted.status();
    EXPECT_NE(converted->accelerate_yaml.find("deepspeed_config_file: ds.json"),
              std::string::npos);
    auto ds = ResolveText(converted->accelerate_yaml, converted->deepspeed_json, Job());
    ASSERT_TRUE(ds.ok()) << file << ": " << ds.status() << "\n" << converted->deepspeed_json;
    EXPECT_EQ(ds->distributed_type, DistributedType::kDeepSpeed);
    nlohmann::json a = Core(*fsdp), b = Core(*ds);
    if (!fsdp->transformer_layer_cls_to_wrap.empty()) {
      EXPECT_TRUE(HasNote(*converted, "transformer_layer_cls_to_wrap")) << file;
      a.erase("transformer_layer_cls_to_wrap");
      b.erase("transformer_layer_cls_to_wrap");
    }
    if (fsdp->strategy != Strategy::kFullShard) {
      // Below full sharding DeepSpeed has nothing to prefetch; the notes say so.
      for (const char* key : {"backward_prefetch", "forward_prefetch"}) {
        a.erase(key);
        b.erase(key);
      }
    }
    if (fsdp->strategy == Strategy::kFullShard) {
      EXPECT_TRUE(HasNote(*converted, "prefetch")) << file;
      a.erase("forward_prefetch");  // FSDP files here leave forward prefetch off
      b.erase("forward_prefetch");
    }
    EXPECT_EQ(a, b) << file << "\nFSDP:      " << a.dump() << "\nDeepSpeed: " << b.dump();
  }
}

TEST(ConvertTest, DeepSpeedConfigsRoundTripThroughFsdp) {
  for (const char* file : {"configs/ds_zero2.yaml", "configs/ds_zero3.yaml",
                           "configs/ds_zero3_offload.yaml"}) {
    auto ds = ResolveFile(file, Job());
    ASSERT_TRUE(ds.ok()) << file << ": " << ds.status();
    auto converted = ConvertToFsdp(*ds);
    ASSERT_TRUE(converted.ok()) << file << ": " << converted.status();
    EXPECT_TRUE(converted->deepspeed_json.empty());
    ConfigInputs job = Job();
    job.job.gradient_accumulation_steps = ds->gradient_accumulation_steps;  // from the notes
    job.job.gradient_clipping = ds->gradient_clipping;
    auto fsdp = ResolveText(converted->accelerate_yaml, "", job);
    ASSERT_TRUE(fsdp.ok()) << file << ": " << fsdp.status() << "\n" << converted->accelerate_yaml;
    nlohmann::json a = Core(*ds), b = Core(*fsdp);
    if (ds->strategy != Strategy::kFullShard) {
      for (const char* key : {"backward_prefetch", "forward_prefetch"}) {
        a.erase(key);
        b.erase(key);
      }
    }
    EXPECT_EQ(a, b) << file << "\nDeepSpeed: " << a.dump() << "\nFSDP:      " << b.dump();
  }
}

TEST(ConvertTest, SettingsWithoutAnEquivalentBlockTheConversion) {
  auto hybrid = ResolveFile("configs/fsdp_hybrid.yaml");
  ASSERT_TRUE(hybrid.ok());
  auto c = ConvertToDeepSpeed(*hybrid, "x.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("strategy hybrid_shard"), std::string::npos);

  auto zero1 = ResolveFile("configs/ds_zero1.yaml");
  ASSERT_TRUE(zero1.ok());
  c = ConvertToFsdp(*zero1);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("ZeRO stage 1"), std::string::npos);

  // DeepSpeed's separate offload switches: FSDP offloads all or nothing.
  auto split = ResolveText("distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n"
                           "  zero_stage: 3\n  offload_optimizer_device: cpu\n");
  ASSERT_TRUE(split.ok()) << split.status();
  c = ConvertToFsdp(*split);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("offload_param none with offload_optimizer cpu"),
            std::string::npos);

  auto nvme = ResolveFile("configs/ds_zero3_nvme.yaml");
  ASSERT_TRUE(nvme.ok());
  c = ConvertToFsdp(*nvme);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("NVMe offload"), std::string::npos);

  auto sgo_offload = ResolveText("distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"
                                 "  fsdp_sharding_strategy: SHARD_GRAD_OP\n"
                                 "  fsdp_offload_params: true\n");
  ASSERT_TRUE(sgo_offload.ok());
  c = ConvertToDeepSpeed(*sgo_offload, "x.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("parameter offload with shard_grad_op"), std::string::npos);

  EXPECT_FALSE(ConvertToFsdp(*hybrid).ok());  // already FSDP
  EXPECT_FALSE(ConvertToDeepSpeed(*zero1, "x.json").ok());  // already DeepSpeed
}

TEST(ConvertTest, NotesNameWhatDoesNotCarryOver) {
  auto plan = ResolveText("distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"
                          "  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n"
                          "  fsdp_state_dict_type: FULL_STATE_DICT\n"
                          "  fsdp_use_orig_params: false\n"
                          "  fsdp_activation_checkpointing: true\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto c = ConvertToDeepSpeed(*plan, "x.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(HasNote(*c, "wrap_policy size_based_wrap"));
  EXPECT_TRUE(HasNote(*c, "FULL_STATE_DICT"));
  EXPECT_TRUE(HasNote(*c, "use_orig_params false"));
  const nlohmann::json ds = nlohmann::json::parse(c->deepspeed_json);
  // Carried over: the section's presence switches per-block checkpointing on.
  EXPECT_TRUE(ds.contains("activation_checkpointing"));
  EXPECT_EQ(ds["zero_optimization"]["stage"], 3);
  EXPECT_EQ(ds["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"], true);
  EXPECT_EQ(ds["gradient_accumulation_steps"], "auto");

  auto z3 = ResolveText("distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n"
                        "  zero_stage: 3\n  gradient_clipping: 0.5\n"
                        "  zero3_save_16bit_model: true\n", "", Job());
  ASSERT_TRUE(z3.ok()) << z3.status();
  auto f = ConvertToFsdp(*z3);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(HasNote(*f, "gradient_clipping 0.5"));
  EXPECT_NE(f->accelerate_yaml.find("fsdp_state_dict_type: FULL_STATE_DICT"), std::string::npos);
}

}  // namespace
}  // namespace accel::config

// A Llama-family model through acceld, as a user of Accelerate brings one: a Hugging Face
// config.json and sharded model.safetensors (index + shards), an FSDP config wrapping
// LlamaDecoderLayer and a DeepSpeed ZeRO-3 config. Real acceld and accel-worker processes on
// 127.0.0.1, accelctl in-process.
#include "engine/checkpoint/hf_weights.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/model/param_specs.h"
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary

std::string Configs() {
  return fs::path(ACCEL_DATA).parent_path().parent_path() / "configs";
}

// A tiny GQA Llama (4 query heads over 2 key/value heads, untied head) saved as Hugging Face
// would: config.json, two model-0000k-of-00002.safetensors and the index. Returns the index.
std::string WriteTinyLlama(const std::string& dir) {
  model::LlamaConfig c = *model::LlamaPreset("llama-tiny");
  auto layout = model::ModelLayout::Create(c);
  EXPECT_TRUE(layout.ok());
  std::vector<float> params(layout->num_params());
  model::InitParams(*layout, 7, params.data());
  const int64_t half = layout->num_params() * 4 / 2 + 1;
  EXPECT_TRUE(checkpoint::SaveHfWeights(Env::Default(), dir + "/model.safetensors", *layout,
                                        params.data(), DType::kF32, half)
                  .ok());
  return dir + "/model.safetensors.index.json";
}

nlohmann::json Status(Daemon& d, const std::string& id) {
  std::string out, err;
  EXPECT_EQ(d.Accelctl({"status", id, "--output", "json"}, &out, &err), 0) << err;
  return nlohmann::json::parse(out);
}

TEST(ControlPlaneLlama, FsdpAndZero3ConfigsTrainALlamaFromHuggingFaceFiles) {
  Daemon d(FreshDir());
  d.Start(2);
  WriteTinyLlama(d.dir());
  // Accelerate's FSDP config for a Llama, with the class name its users write.
  std::string fsdp;
  {
    std::ifstream in(Configs() + "/fsdp_full_shard.yaml");
    fsdp.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = fsdp.find("fsdp_transformer_layer_cls_to_wrap: Block");
  ASSERT_NE(at, std::string::npos);
  fsdp.replace(at, std::string("fsdp_transformer_layer_cls_to_wrap: Block").size(),
               "fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer");
  std::ofstream(d.dir() + "/fsdp_llama.yaml") << fsdp;
  const std::string job = WriteJob(d.dir(), "llama", R"(
model: {config: config.json, init_weights: model.safetensors.index.json}
train: {steps: 6, micro_batch: 2, seq_len: 32, log_every: 2}
)");
  for (const std::string& config : {d.dir() + "/fsdp_llama.yaml", Configs() + "/ds_zero3.yaml"}) {
    std::string out, err;
    ASSERT_EQ(d.Accelctl({"submit", job, "--config", config, "--wait", "--output", "json"}, &out,
                         &err),
              0)
        << config << "\n" << out << err;
    const std::string id = nlohmann::json::parse(out.substr(0, out.find('\n')))["id"];
    const nlohmann::json status = Status(d, id);
    EXPECT_EQ(status["state"], "SUCCEEDED") << config;
    const nlohmann::json& m = status["plan"]["model"];
    EXPECT_EQ(m["architecture"], "llama");
    EXPECT_EQ(m["n_head"], "4");
    EXPECT_EQ(m["n_kv_head"], "2");
    EXPECT_EQ(m["head_dim"], "16");
    EXPECT_EQ(m["intermediate_size"], "176");
    EXPECT_EQ(m["block_class"], "LlamaDecoderLayer");
    EXPECT_EQ(status["plan"]["strategy"], "full_shard") << config;
    ASSERT_EQ(d.Accelctl({"status", id}, &out), 0);
    EXPECT_THAT(out, HasSubstr("llama, 2 layers, 4 heads (2 key/value), width 64"));
    EXPECT_THAT(out, HasSubstr("head_dim 16, mlp 176 (SwiGLU), untied lm_head, block "
                               "LlamaDecoderLayer"));
  }
}

// Accelerate fails on a class the model does not have; so does submit, naming it.
TEST(ControlPlaneLlama, AWrapClassOfAnotherArchitectureIsRefusedAtSubmit) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string yaml = d.dir() + "/wrap.yaml";
  std::ofstream(yaml) << "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"
                         "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                         "  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n";
  const std::string job = WriteJob(d.dir(), "gpt", "model: gpt2-tiny\ntrain: {steps: 2}\n");
  std::string out, err;
  EXPECT_EQ(d.Accelctl({"submit", job, "--config", yaml}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer is not a "
                             "layer of model gpt2-tiny"));
  EXPECT_THAT(err, HasSubstr("GPT2Block"));
  ASSERT_EQ(d.Accelctl({"list", "--output", "json"}, &out), 0);
  EXPECT_THAT(out, ::testing::Not(HasSubstr("\"gpt\"")));
}

}  // namespace
}  // namespace accel

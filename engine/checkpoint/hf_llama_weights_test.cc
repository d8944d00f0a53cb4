// Llama-family weights through LoadHfWeights / SaveHfWeights / HfModelFile: Hugging Face names,
// sharded checkpoints (model.safetensors.index.json), bf16 files, a tied lm_head and the buffers
// old files carry; Qwen3's q/k norm weights.
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "engine/checkpoint/hf_model_file.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/model/model_config.h"
#include "engine/testing/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class HfLlamaWeightsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/hf_llama_" + std::to_string(::getpid()) +
           (GetParam() ? "_tied" : "_untied");
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    auto config = model::LlamaPreset("llama-tiny");
    ASSERT_TRUE(config.ok());
    config->tie_word_embeddings = GetParam();
    config->attention_bias = true;
    auto layout = model::ModelLayout::Create(*config);
    ASSERT_TRUE(layout.ok());
    layout_ = std::make_unique<model::ModelLayout>(std::move(*layout));
    accel::testing::TestRng rng(5);
    values_ = rng.NormalVector(layout_->num_params());
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }

  // Writes the layout's tensors over `files` shard files (round robin) in `dtype`, plus the
  // index when there is more than one, the way Hugging Face's save_pretrained shards; `extra`
  // tensors (name → numel) go into the first file. Returns what to load.
  std::string WriteHf(int files, DType dtype, const std::map<std::string, int64_t>& extra = {}) {
    std::vector<SafetensorsWriter> writers(files);
    nlohmann::json map = nlohmann::json::object();
    int i = 0;
    for (const LayoutEntry& e : layout_->flat().entries()) {
      const int f = i++ % files;
      EXPECT_TRUE(writers[f].AddConverted(e.name, e.shape, values_.data() + e.offset, dtype).ok());
      map[e.name] = ShardName(f, files);
    }
    for (const auto& [name, numel] : extra) {
      EXPECT_TRUE(writers[0].AddConverted(name, {numel}, values_.data(), DType::kF32).ok());
      map[name] = ShardName(0, files);
    }
    for (int f = 0; f < files; ++f) {
      EXPECT_TRUE(writers[f].Write(Env::Default(), dir_ + "/" + ShardName(f, files)).ok());
    }
    if (files == 1) return dir_ + "/model.safetensors";
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", map}};
    EXPECT_TRUE(WriteFileAtomic(Env::Default(), dir_ + "/model.safetensors.index.json",
                                index.dump()).ok());
    return dir_;  // the directory: the index is found in it
  }
  static std::string ShardName(int f, int files) {
    if (files == 1) return "model.safetensors";
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", f + 1, files);
    return name;
  }

  std::string dir_;
  std::unique_ptr<model::ModelLayout> layout_;
  std::vector<float> values_;
};

TEST_P(HfLlamaWeightsTest, SavesAndLoadsHuggingFaceNames) {
  const std::string path = dir_ + "/out/model.safetensors";
  ASSERT_TRUE(Env::Default()->CreateDirs(dir_ + "/out").ok());
  ASSERT_TRUE(SaveHfWeights(Env::Default(), path, *layout_, values_.data()).ok());
  auto reader = SafetensorsReader::Open(Env::Default(), path);
  ASSERT_TRUE(reader.ok());
  ASSERT_NE((*reader)->Find("model.layers.1.self_attn.q_proj.weight"), nullptr);
  EXPECT_EQ((*reader)->Find("model.layers.1.self_attn.k_proj.weight")->shape,
            (std::vector<int64_t>{32, 64}));  // [out = 2 kv heads x 16, in = 64]
  EXPECT_EQ((*reader)->Find("lm_head.weight") == nullptr, GetParam());
  std::vector<float> back(layout_->num_params());
  ASSERT_TRUE(LoadHfWeights(Env::Default(), path, *layout_, back.data()).ok());
  EXPECT_EQ(back, values_);
  auto config = model::LoadModelConfig(Env::Default(), dir_ + "/out/config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(model::ModelConfigToJson(*config), model::ModelConfigToJson(layout_->config()));
}

// Larger than max_shard_bytes: Hugging Face's sharded form, which loads back from the directory.
TEST_P(HfLlamaWeightsTest, SavesShardedWithAnIndexAboveTheShardSize) {
  const std::string out = dir_ + "/sharded";
  ASSERT_TRUE(Env::Default()->CreateDirs(out).ok());
  ASSERT_TRUE(SaveHfWeights(Env::Default(), out + "/model.safetensors", *layout_, values_.data(),
                            DType::kF32, 100000)
                  .ok());
  EXPECT_FALSE(Env::Default()->FileExists(out + "/model.safetensors"));
  ASSERT_TRUE(Env::Default()->FileExists(out + "/model.safetensors.index.json"));
  auto file = HfModelFile::Open(Env::Default(), out, layout_.get());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_GE((*file)->num_shards(), 2);
  for (int s = 0; s < (*file)->num_shards(); ++s) {
    uint64_t bytes = 0;
    for (const TensorInfo& t : (*file)->shard(s).tensors()) bytes += t.numel * 4;
    EXPECT_LE(bytes, 100000u) << (*file)->shard(s).path();
  }
  std::vector<float> back(layout_->num_params());
  ASSERT_TRUE(LoadHfWeights(Env::Default(), out, *layout_, back.data()).ok());
  EXPECT_EQ(back, values_);
}

TEST_P(HfLlamaWeightsTest, LoadsShardedBf16CheckpointsByRange) {
  const std::string dir = WriteHf(3, DType::kBF16);
  auto file = HfModelFile::Open(Env::Default(), dir, layout_.get());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->num_shards(), 3);
  // Every unit alone, and a range across a unit boundary, as zero3_init reads them.
  std::vector<float> got(layout_->num_params());
  for (int u = 0; u < layout_->num_units(); ++u) {
    const model::UnitRange& r = layout_->unit(u);
    ASSERT_TRUE((*file)->ReadFlat(r.offset, r.offset + r.numel, got.data() + r.offset).ok());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], Bf16ToFloat(FloatToBf16(values_[i]))) << i;
  }
  const int64_t mid = layout_->unit(1).offset;
  std::vector<float> across(20);
  ASSERT_TRUE((*file)->ReadFlat(mid - 10, mid + 10, across.data()).ok());
  EXPECT_TRUE(std::equal(across.begin(), across.end(), got.begin() + mid - 10));
}

TEST_P(HfLlamaWeightsTest, IgnoresRotaryBuffersAndChecksATiedHead) {
  const LayoutEntry* embed = layout_->flat().Find("model.embed_tokens.weight");
  std::map<std::string, int64_t> extra = {{"model.layers.0.self_attn.rotary_emb.inv_freq", 8}};
  if (GetParam()) extra["lm_head.weight"] = embed->numel;  // wrong shape: 1-D
  auto file = HfModelFile::Open(Env::Default(), WriteHf(1, DType::kF32, extra), layout_.get());
  if (!GetParam()) {
    ASSERT_TRUE(file.ok()) << file.status();
    return;
  }
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(), HasSubstr("lm_head.weight"));
}

TEST_P(HfLlamaWeightsTest, UnknownMissingAndDuplicatedTensorsNameTheFile) {
  auto unknown = HfModelFile::Open(Env::Default(),
                                   WriteHf(1, DType::kF32, {{"model.layers.0.mlp.extra", 4}}),
                                   layout_.get());
  EXPECT_THAT(unknown.status().message(), HasSubstr("unexpected tensor model.layers.0.mlp.extra"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("model.safetensors"));
  // The same tensor in two shards: the first shard rewritten with its own tensors (even
  // entries) and model.norm.weight (entry 1, in the second shard).
  const std::string dir = WriteHf(2, DType::kF32);
  SafetensorsWriter again;
  const std::vector<LayoutEntry>& entries = layout_->flat().entries();
  ASSERT_EQ(entries[1].name, "model.norm.weight");
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i % 2 == 1 && i != 1) continue;
    const LayoutEntry& e = entries[i];
    ASSERT_TRUE(again.AddConverted(e.name, e.shape, values_.data() + e.offset, DType::kF32).ok());
  }
  ASSERT_TRUE(again.Write(Env::Default(), dir + "/" + ShardName(0, 2)).ok());
  auto twice = HfModelFile::Open(Env::Default(), dir, layout_.get());
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("model.norm.weight is also in"));
  EXPECT_THAT(HfModelFile::Open(Env::Default(), dir_ + "/nothing", layout_.get()).status().message(),
              HasSubstr("model.safetensors.index.json"));
}

// The index is the loader's map (issue 28): an entry its shard does not hold is an error naming
// both, a tensor held nowhere is blamed on the index (not on the first shard), and each shard
// it names must be a regular file (a FIFO blocked a rank past its heartbeat deadline).
TEST_P(HfLlamaWeightsTest, TheIndexIsTheMapAndEachShardItNamesIsARegularFile) {
  const std::string dir = WriteHf(2, DType::kF32);
  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string shard0 = dir + "/" + ShardName(0, 2), shard1 = dir + "/" + ShardName(1, 2);
  auto files = HfWeightsFiles(Env::Default(), dir);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre(index_path, shard0, shard1));
  auto text = ReadFileToString(Env::Default(), index_path);
  ASSERT_TRUE(text.ok());
  const nlohmann::json index = nlohmann::json::parse(*text);
  auto write_index = [&](const nlohmann::json& j) {
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), index_path, j.dump()).ok());
  };

  nlohmann::json ghost = index;
  ghost["weight_map"]["model.ghost.weight"] = ShardName(1, 2);
  write_index(ghost);
  auto ghosted = HfModelFile::Open(Env::Default(), dir, layout_.get());
  ASSERT_FALSE(ghosted.ok());
  EXPECT_THAT(ghosted.status().message(),
              HasSubstr(index_path + ": weight_map names tensor model.ghost.weight in " + shard1 +
                        ", which does not hold it"));

  // entries[0] leaves shard 0 and the index: no shard is to blame, the index is.
  const std::vector<LayoutEntry>& entries = layout_->flat().entries();
  nlohmann::json without = index;
  without["weight_map"].erase(entries[0].name);
  write_index(without);
  SafetensorsWriter rest;
  for (size_t i = 2; i < entries.size(); i += 2) {
    const LayoutEntry& e = entries[i];
    ASSERT_TRUE(rest.AddConverted(e.name, e.shape, values_.data() + e.offset, DType::kF32).ok());
  }
  ASSERT_TRUE(rest.Write(Env::Default(), shard0).ok());
  auto missing = HfModelFile::Open(Env::Default(), dir, layout_.get());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr(index_path + ": tensor " + entries[0].name + " is missing"));
  EXPECT_THAT(missing.status().message(), ::testing::Not(HasSubstr(shard0)));
  EXPECT_THAT(missing.status().message(), ::testing::Not(HasSubstr(shard1)));

  write_index(index);
  ASSERT_EQ(::unlink(shard1.c_str()), 0);
  ASSERT_EQ(::mkfifo(shard1.c_str(), 0600), 0);
  auto fifo = HfModelFile::Open(Env::Default(), dir, layout_.get());
  ASSERT_FALSE(fifo.ok());
  EXPECT_THAT(fifo.status().message(), HasSubstr(shard1 + " is a FIFO, not a regular file"));
  ASSERT_EQ(::unlink(shard1.c_str()), 0);
  ASSERT_EQ(::symlink("/dev/zero", shard1.c_str()), 0);
  auto zero = HfModelFile::Open(Env::Default(), dir, layout_.get());
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), HasSubstr(shard1 + " is a device, not a regular file"));
}

INSTANTIATE_TEST_SUITE_P(TiedAndUntied, HfLlamaWeightsTest, ::testing::Bool());

// Qwen3 (tied, head_dim 32 != 64 / 4): self_attn.{q,k}_norm.weight (head_dim) under Hugging
// Face's names, saved and loaded back, the config.json a Qwen3ForCausalLM; a file without a
// k_norm is refused naming the tensor and the file.
TEST(HfQwen3WeightsTest, SavesAndLoadsTheQkNorms) {
  const std::string dir = ::testing::TempDir() + "/hf_qwen3_" + std::to_string(::getpid());
  ASSERT_TRUE(Env::Default()->CreateDirs(dir).ok());
  auto config = model::ModelPreset("qwen3-tiny");
  ASSERT_TRUE(config.ok()) << config.status();
  auto layout = model::ModelLayout::Create(*config);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const std::vector<float> values = accel::testing::TestRng(9).NormalVector(layout->num_params());
  const std::string path = dir + "/model.safetensors";
  ASSERT_TRUE(SaveHfWeights(Env::Default(), path, *layout, values.data()).ok());
  auto reader = SafetensorsReader::Open(Env::Default(), path);
  ASSERT_TRUE(reader.ok());
  for (const char* name : {"model.layers.0.self_attn.q_norm.weight",
                           "model.layers.1.self_attn.k_norm.weight"}) {
    ASSERT_NE((*reader)->Find(name), nullptr) << name;
    EXPECT_EQ((*reader)->Find(name)->shape, std::vector<int64_t>{32}) << name;
  }
  EXPECT_EQ((*reader)->Find("model.layers.0.self_attn.q_proj.bias"), nullptr);
  EXPECT_EQ((*reader)->Find("lm_head.weight"), nullptr);
  std::vector<float> back(layout->num_params());
  ASSERT_TRUE(LoadHfWeights(Env::Default(), path, *layout, back.data()).ok());
  EXPECT_EQ(back, values);
  auto saved = model::LoadModelConfig(Env::Default(), dir + "/config.json");
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->model_type(), "qwen3");
  EXPECT_EQ(saved->NumParams(), layout->num_params());

  SafetensorsWriter without;
  for (const LayoutEntry& e : layout->flat().entries()) {
    if (e.name == "model.layers.1.self_attn.k_norm.weight") continue;
    ASSERT_TRUE(without.AddConverted(e.name, e.shape, values.data() + e.offset, DType::kF32).ok());
  }
  ASSERT_TRUE(without.Write(Env::Default(), path).ok());
  auto missing = HfModelFile::Open(Env::Default(), path, &*layout);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr("tensor model.layers.1.self_attn.k_norm.weight is missing"));
  (void)Env::Default()->DeleteRecursively(dir);
}

}  // namespace
}  // namespace accel::checkpoint

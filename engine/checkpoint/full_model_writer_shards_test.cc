// FullModelWriter above max_shard_bytes: Hugging Face's sharded form, byte for byte what
// SaveHfWeights writes with the same shard size, for a GPT-2 and a Llama layout; units that
// straddle two shard files; pieces of any size; loading back through HfModelFile.
#include <map>
#include <string>
#include <vector>

#include "engine/checkpoint/crc32c.h"
#include "engine/checkpoint/full_model_writer.h"
#include "engine/checkpoint/hf_model_file.h"
#include "engine/checkpoint/hf_shards.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/model/llama_config.h"
#include "engine/testing/mem_env.h"
#include "engine/testing/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

using ::accel::testing::MemEnv;
using ::testing::HasSubstr;

std::unique_ptr<model::ModelLayout> Gpt2Layout() {
  auto layout = model::ModelLayout::Create(model::Gpt2Config{"t", 3, 2, 8, 30, 12});
  EXPECT_TRUE(layout.ok()) << layout.status();
  return std::make_unique<model::ModelLayout>(std::move(*layout));
}

std::unique_ptr<model::ModelLayout> LlamaLayout() {
  auto config = model::LlamaPreset("llama-tiny");
  EXPECT_TRUE(config.ok()) << config.status();
  auto layout = model::ModelLayout::Create(*config);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return std::make_unique<model::ModelLayout>(std::move(*layout));
}

// Streams `values` unit by unit (piece == 0) or in pieces of `piece` elements.
absl::StatusOr<std::vector<ModelFileInfo>> Stream(Env* env, const std::string& path,
                                                  const model::ModelLayout& layout,
                                                  const std::vector<float>& values, DType dtype,
                                                  int64_t max_shard_bytes, int64_t piece = 0) {
  auto w = FullModelWriter::Create(env, path, &layout, dtype, max_shard_bytes);
  if (!w.ok()) return w.status();
  if (piece == 0) {
    for (int u = 0; u < layout.num_units(); ++u) {
      absl::Status s = (*w)->AppendUnit(u, values.data() + layout.unit(u).offset);
      if (!s.ok()) return s;
    }
  } else {
    for (int64_t at = 0; at < layout.num_params(); at += piece) {
      absl::Status s =
          (*w)->AppendValues(values.data() + at, std::min(piece, layout.num_params() - at));
      if (!s.ok()) return s;
    }
  }
  return (*w)->Finish();
}

// Some unit's elements lie in two shard files.
bool SomeUnitStraddles(const model::ModelLayout& layout, const std::vector<HfShard>& shards) {
  for (int u = 0; u < layout.num_units(); ++u) {
    const int64_t b = layout.unit(u).offset, e = b + layout.unit(u).numel;
    for (size_t s = 1; s < shards.size(); ++s) {
      if (b < shards[s].flat_begin && shards[s].flat_begin < e) return true;
    }
  }
  return false;
}

void ExpectShardedLikeWholeVectorSave(const model::ModelLayout& layout, const char* arch) {
  MemEnv env;
  testing::TestRng rng(11);
  const std::vector<float> values = rng.NormalVector(layout.num_params());
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(std::string(arch) + " " + std::string(DTypeName(dtype)));
    const int64_t data = layout.num_params() * static_cast<int64_t>(DTypeSize(dtype));
    const int64_t max = data / 3;
    const std::vector<HfShard> shards = HfShards(layout, dtype, max);
    ASSERT_GE(shards.size(), 3u);
    ASSERT_TRUE(SomeUnitStraddles(layout, shards));
    const std::string tag = std::string(arch) + "_" + std::string(DTypeName(dtype));
    const std::string a = "/a_" + tag, b = "/b_" + tag, c = "/c_" + tag;
    for (const std::string& d : {a, b, c}) ASSERT_TRUE(env.CreateDirs(d).ok());
    auto files = Stream(&env, a + "/model.safetensors", layout, values, dtype, max);
    ASSERT_TRUE(files.ok()) << files.status();
    ASSERT_TRUE(SaveHfWeights(&env, b + "/model.safetensors", layout, values.data(), dtype, max)
                    .ok());
    // Pieces that cut through tensors and shard boundaries alike.
    ASSERT_TRUE(Stream(&env, c + "/model.safetensors", layout, values, dtype, max, 37).ok());

    const int n = static_cast<int>(shards.size());
    ASSERT_EQ(files->size(), shards.size() + 1);  // the shards, then the index
    EXPECT_FALSE(env.FileExists(a + "/model.safetensors"));
    uint64_t shard_bytes = 0;
    for (int s = 0; s <= n; ++s) {
      const std::string name = s < n ? HfShardFileName(s, n) : std::string(kHfIndexFileName);
      const std::string streamed = *ReadFileToString(&env, a + "/" + name);
      EXPECT_EQ(streamed, *ReadFileToString(&env, b + "/" + name)) << name;
      EXPECT_EQ(streamed, *ReadFileToString(&env, c + "/" + name)) << name;
      EXPECT_EQ((*files)[s].file, name);
      EXPECT_EQ((*files)[s].dtype, dtype);
      EXPECT_EQ((*files)[s].bytes, streamed.size()) << name;
      EXPECT_EQ((*files)[s].crc32c, crc32c::Value(streamed)) << name;
      EXPECT_FALSE(env.FileExists(a + "/" + name + ".tmp"));
      if (s < n) shard_bytes += streamed.size();
    }
    EXPECT_EQ(FullModelFileBytes(layout, dtype, max).value(), shard_bytes);
    EXPECT_EQ(*ReadFileToString(&env, a + "/config.json"),
              *ReadFileToString(&env, b + "/config.json"));

    // The index names every tensor once, in the file that holds it.
    const auto index = nlohmann::json::parse(*ReadFileToString(&env, a + "/" + kHfIndexFileName));
    EXPECT_EQ(index["metadata"]["total_size"].get<int64_t>(), data);
    EXPECT_EQ(index["weight_map"].size(), layout.flat().entries().size());
    for (const LayoutEntry& e : layout.flat().entries()) {
      ASSERT_TRUE(index["weight_map"].contains(e.name)) << e.name;
      const std::string file = index["weight_map"][e.name].get<std::string>();
      auto reader = SafetensorsReader::Open(&env, a + "/" + file);
      ASSERT_TRUE(reader.ok()) << reader.status();
      EXPECT_NE((*reader)->Find(e.name), nullptr) << e.name << " in " << file;
    }

    // Loads back from the directory (the index) and from the index itself.
    std::vector<float> loaded(layout.num_params());
    ASSERT_TRUE(LoadHfWeights(&env, a, layout, loaded.data()).ok());
    for (int64_t i = 0; i < layout.num_params(); ++i) {
      const float want =
          dtype == DType::kF32 ? values[i] : Bf16ToFloat(FloatToBf16(values[i]));
      ASSERT_EQ(loaded[i], want) << i;
    }
    auto opened = HfModelFile::Open(&env, a + "/" + kHfIndexFileName, &layout);
    ASSERT_TRUE(opened.ok()) << opened.status();
    EXPECT_EQ((*opened)->num_shards(), n);
  }
}

TEST(FullModelWriterShardsTest, Gpt2ShardsEqualWholeVectorSaveAndLoadBack) {
  ExpectShardedLikeWholeVectorSave(*Gpt2Layout(), "gpt2");
}

TEST(FullModelWriterShardsTest, LlamaShardsEqualWholeVectorSaveAndLoadBack) {
  ExpectShardedLikeWholeVectorSave(*LlamaLayout(), "llama");
}

TEST(FullModelWriterShardsTest, AModelThatFitsIsOneFileWithoutIndex) {
  MemEnv env;
  auto layout = Gpt2Layout();
  const std::vector<float> values(layout->num_params(), 0.5f);
  ASSERT_TRUE(env.CreateDirs("/a").ok());
  auto files = Stream(&env, "/a/model.safetensors", *layout, values, DType::kF32,
                      layout->num_params() * 4);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ(files->front().file, "model.safetensors");
  EXPECT_FALSE(env.FileExists(std::string("/a/") + kHfIndexFileName));
}

TEST(FullModelWriterShardsTest, MissingUnitsFailAndLeaveNoFile) {
  MemEnv env;
  auto layout = Gpt2Layout();
  const std::vector<float> values(layout->num_params(), 1.0f);
  ASSERT_TRUE(env.CreateDirs("/a").ok());
  const int64_t max = layout->num_params() * 4 / 4;
  ASSERT_GE(HfShards(*layout, DType::kF32, max).size(), 3u);
  auto w = FullModelWriter::Create(&env, "/a/model.safetensors", layout.get(), DType::kF32, max);
  ASSERT_TRUE(w.ok()) << w.status();
  // Into the second shard, then stop.
  for (int u = 0; u < 2; ++u) {
    ASSERT_TRUE((*w)->AppendUnit(u, values.data() + layout->unit(u).offset).ok());
  }
  auto finished = (*w)->Finish();
  EXPECT_EQ(finished.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(finished.status().message(), HasSubstr("finished after 2 of"));
  EXPECT_EQ((*w)->AppendValues(values.data(), layout->num_params()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_GE(env.ListDir("/a")->size(), 2u);  // two shards begun: .tmp files while it lives
  w->reset();  // abandoned: no shard, .tmp or index stays behind
  EXPECT_TRUE(env.ListDir("/a")->empty()) << ::testing::PrintToString(*env.ListDir("/a"));
}

}  // namespace
}  // namespace accel::checkpoint

#include "engine/checkpoint/consolidate.h"

#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_test_util.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/checkpoint/rank_file.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/model/gpt2_config.h"
#include "engine/testing/mem_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::checkpoint {
namespace {

using namespace ::accel::checkpoint::testing;  // NOLINT: the helpers of this test family
using ::testing::HasSubstr;

class ConsolidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env_.CreateDirs("/out").ok());
    ASSERT_TRUE(env_.CreateDirs("/full").ok());
    // 4 ranks, small blocks so tensors straddle blocks and files.
    ASSERT_TRUE(SaveAll(&env_, "/ckpt", layout_, state_, 8, 4, 0, {.block_bytes = 128}).ok());
  }

  accel::testing::MemEnv env_;
  model::ModelLayout layout_ = SmallLayout();
  State state_{layout_.num_params(), 17};
  const std::string step_dir_ = StepDir("/ckpt", 8);
};

TEST_F(ConsolidateTest, TensorsEqualTheSavedParamsExactly) {
  // A chunk smaller than most tensors, so every tensor is streamed in several pieces.
  auto stats =
      ConsolidateToSafetensors(&env_, step_dir_, "/out/model.safetensors", {.chunk_elements = 50});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->step, 8);
  EXPECT_EQ(stats->world_size, 4);
  EXPECT_EQ(stats->params, layout_.num_params());
  EXPECT_EQ(stats->tensors, static_cast<int64_t>(layout_.specs().size()));
  EXPECT_EQ(stats->largest_tensor_elements, 8 * 32);  // mlp.c_fc.weight (C, 4C)
  EXPECT_EQ(stats->buffer_bytes, 50u * 4);
  EXPECT_EQ(stats->bytes_written, *env_.GetFileSize("/out/model.safetensors"));
  EXPECT_FALSE(env_.FileExists("/out/model.safetensors.tmp"));

  auto reader = SafetensorsReader::Open(&env_, "/out/model.safetensors");
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ(reader->get()->tensors().size(), layout_.specs().size());
  for (const LayoutEntry& e : layout_.flat().entries()) {
    const TensorInfo* t = (*reader)->Find(e.name);
    ASSERT_NE(t, nullptr) << e.name;
    EXPECT_EQ(t->dtype_name, "F32");
    EXPECT_EQ(t->shape, e.shape);
    std::vector<float> got(e.numel);
    ASSERT_TRUE((*reader)->ReadFloat(e.name, got.data(), e.numel).ok());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), state_.params.begin() + e.offset)) << e.name;
  }
  EXPECT_EQ((*reader)->metadata().at("format"), "pt");

  auto config = model::LoadModelConfig(&env_, "/out/config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(model::ModelConfigToJson(*config), model::ModelConfigToJson(layout_.config()));
  // And the engine's own loader reads it back to the same params.
  std::vector<float> params(layout_.num_params());
  ASSERT_TRUE(LoadHfWeights(&env_, "/out/model.safetensors", layout_, params.data()).ok());
  EXPECT_EQ(params, state_.params);
}

// The consolidated file is the FULL_STATE_DICT / 16-bit save of the same parameters, byte for
// byte (SaveHfWeights gathers in memory; consolidation streams).
TEST_F(ConsolidateTest, IdenticalToTheFullStateDictSave) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    ASSERT_TRUE(ConsolidateToSafetensors(&env_, step_dir_, "/out/model.safetensors",
                                         {.dtype = dtype, .chunk_elements = 77})
                    .ok());
    ASSERT_TRUE(
        SaveHfWeights(&env_, "/full/model.safetensors", layout_, state_.params.data(), dtype)
            .ok());
    EXPECT_EQ(*ReadFileToString(&env_, "/out/model.safetensors"),
              *ReadFileToString(&env_, "/full/model.safetensors"))
        << DTypeName(dtype);
    EXPECT_EQ(*ReadFileToString(&env_, "/out/config.json"),
              *ReadFileToString(&env_, "/full/config.json"));
  }
  // bf16 is the fp32 rounded to nearest even.
  auto reader = SafetensorsReader::Open(&env_, "/out/model.safetensors");
  ASSERT_TRUE(
      ConsolidateToSafetensors(&env_, step_dir_, "/out/model.safetensors", {.dtype = DType::kBF16})
          .ok());
  reader = SafetensorsReader::Open(&env_, "/out/model.safetensors");
  ASSERT_TRUE(reader.ok());
  const LayoutEntry* wte = layout_.flat().Find("wte.weight");
  std::vector<uint16_t> raw(wte->numel);
  ASSERT_TRUE((*reader)->ReadRaw("wte.weight", raw.data(), raw.size() * 2).ok());
  for (int64_t i = 0; i < wte->numel; ++i) {
    ASSERT_EQ(raw[i], FloatToBf16(state_.params[wte->offset + i])) << i;
  }
}

TEST_F(ConsolidateTest, ReadsOnlyParamsInBoundedPieces) {
  CountingEnv counting(&env_);
  ASSERT_TRUE(ConsolidateToSafetensors(&counting, step_dir_, "/out/model.safetensors",
                                       {.chunk_elements = 64})
                  .ok());
  // Params are a third of the data. On top: metadata.json, each file's header, table and
  // footer, and where a params section starts or ends inside a block, the rest of that block
  // (12 ranges here); every other block is read once.
  const int64_t params_bytes = 4 * layout_.num_params();
  const int64_t metadata = *env_.GetFileSize(step_dir_ + "/metadata.json");
  const int64_t headers = 4 * (20 + 40 + 3 * 40 + 4 * 100 + 16);
  EXPECT_GE(counting.bytes_read(), params_bytes);
  EXPECT_LE(counting.bytes_read(), metadata + headers + params_bytes + 12 * 2 * 128);
  // Apart from metadata.json, no read is bigger than a chunk.
  EXPECT_LE(counting.max_read(), std::max<int64_t>(metadata, 64 * 4));
}

TEST_F(ConsolidateTest, CorruptCheckpointFailsAndLeavesNoOutput) {
  const std::string rank2 = step_dir_ + "/rank_2.bin";
  uint64_t params_at = 0;
  {
    auto file = RankFileReader::Open(&env_, rank2);
    ASSERT_TRUE(file.ok());
    params_at = (*file)->ranges()[1].section_offset[0] + 5;  // a params byte
  }
  std::string bytes = *ReadFileToString(&env_, rank2);
  bytes[params_at] ^= 1;
  ASSERT_TRUE(OverwriteFile(&env_, rank2, bytes).ok());
  auto stats = ConsolidateToSafetensors(&env_, step_dir_, "/out/model.safetensors");
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(stats.status().message(), HasSubstr(rank2));
  EXPECT_FALSE(env_.FileExists("/out/model.safetensors"));
  EXPECT_FALSE(env_.FileExists("/out/model.safetensors.tmp"));

  EXPECT_EQ(ConsolidateToSafetensors(&env_, "/ckpt/step_9", "/out/x.safetensors").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace accel::checkpoint

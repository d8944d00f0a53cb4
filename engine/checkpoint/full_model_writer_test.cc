// FullModelWriter (streamed unit by unit) against SaveHfWeights (whole vector), and
// HfModelFile's ranged reads against LoadHfWeights.
#include "engine/checkpoint/full_model_writer.h"

#include <string>
#include <vector>

#include "engine/checkpoint/hf_weights.h"
#include "engine/checkpoint/hf_model_file.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/testing/mem_env.h"
#include "engine/testing/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::checkpoint {
namespace {

using ::accel::testing::MemEnv;
using ::testing::HasSubstr;

class FullModelWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto layout = model::ModelLayout::Create(model::Gpt2Config{"t", 3, 2, 8, 30, 12});
    ASSERT_TRUE(layout.ok());
    layout_ = std::make_unique<model::ModelLayout>(std::move(*layout));
    testing::TestRng rng(7);
    values_ = rng.NormalVector(layout_->num_params());
    ASSERT_TRUE(env_.CreateDirs("/a").ok());
    ASSERT_TRUE(env_.CreateDirs("/b").ok());
  }

  absl::Status Stream(const std::string& path, DType dtype) {
    auto w = FullModelWriter::Create(&env_, path, layout_.get(), dtype);
    if (!w.ok()) return w.status();
    for (int u = 0; u < layout_->num_units(); ++u) {
      absl::Status s = (*w)->AppendUnit(u, values_.data() + layout_->unit(u).offset);
      if (!s.ok()) return s;
    }
    auto files = (*w)->Finish();
    if (!files.ok()) return files.status();
    if (files->size() != 1) return absl::InternalError("expected one file");
    info_ = files->front();
    return absl::OkStatus();
  }

  MemEnv env_;
  std::unique_ptr<model::ModelLayout> layout_;
  std::vector<float> values_;
  ModelFileInfo info_;
};

TEST_F(FullModelWriterTest, StreamedFileEqualsWholeVectorSaveInEveryDtype) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    ASSERT_TRUE(Stream("/a/model.safetensors", dtype).ok());
    ASSERT_TRUE(
        SaveHfWeights(&env_, "/b/model.safetensors", *layout_, values_.data(), dtype).ok());
    auto streamed = ReadFileToString(&env_, "/a/model.safetensors");
    auto whole = ReadFileToString(&env_, "/b/model.safetensors");
    ASSERT_TRUE(streamed.ok() && whole.ok());
    EXPECT_EQ(*streamed, *whole) << DTypeName(dtype);
    EXPECT_EQ(info_.bytes, streamed->size());
    EXPECT_EQ(info_.file, "model.safetensors");
    EXPECT_EQ(FullModelFileBytes(*layout_, dtype).value(), streamed->size());
    EXPECT_EQ(*ReadFileToString(&env_, "/a/config.json"),
              *ReadFileToString(&env_, "/b/config.json"));
    EXPECT_FALSE(env_.FileExists("/a/model.safetensors.tmp"));
  }
}

TEST_F(FullModelWriterTest, UnitsOutOfOrderOrMissingAreErrors) {
  auto w = FullModelWriter::Create(&env_, "/a/m.safetensors", layout_.get(), DType::kF32);
  ASSERT_TRUE(w.ok());
  absl::Status s = (*w)->AppendUnit(1, values_.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("expected unit 0"));
  ASSERT_TRUE((*w)->AppendUnit(0, values_.data()).ok());
  EXPECT_EQ((*w)->Finish().status().code(), absl::StatusCode::kFailedPrecondition);
  w->reset();  // abandoned: no partial file stays behind
  EXPECT_FALSE(env_.FileExists("/a/m.safetensors.tmp"));
  EXPECT_FALSE(env_.FileExists("/a/m.safetensors"));
}

TEST_F(FullModelWriterTest, RangedReadsMatchTheWholeLoadAcrossTensorBoundaries) {
  ASSERT_TRUE(Stream("/a/model.safetensors", DType::kBF16).ok());
  std::vector<float> whole(layout_->num_params());
  ASSERT_TRUE(LoadHfWeights(&env_, "/a/model.safetensors", *layout_, whole.data()).ok());
  auto file = HfModelFile::Open(&env_, "/a/model.safetensors", layout_.get());
  ASSERT_TRUE(file.ok()) << file.status();
  const int64_t n = layout_->num_params();
  // Ranges that start and end inside tensors and span several of them.
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, n}, {5, 7}, {37, 901}, {n - 13, n}, {11, 11}}) {
    std::vector<float> part(e - b);
    ASSERT_TRUE((*file)->ReadFlat(b, e, part.data()).ok());
    for (int64_t i = b; i < e; ++i) {
      ASSERT_EQ(part[i - b], whole[i]) << i;
      ASSERT_EQ(part[i - b], Bf16ToFloat(FloatToBf16(values_[i]))) << i;
    }
  }
  auto pieces = (*file)->Map(0, layout_->unit(1).offset + 3);
  ASSERT_TRUE(pieces.ok());
  EXPECT_EQ(pieces->front().file_name, "wte.weight");
  EXPECT_EQ(pieces->back().file_name, "h.0.ln_1.weight");
  EXPECT_EQ(pieces->back().count, 3);
  EXPECT_EQ((*file)->ReadFlat(0, n + 1, whole.data()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace accel::checkpoint

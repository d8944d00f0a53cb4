#include "engine/checkpoint/hf_weights.h"

#include <string>
#include <unistd.h>
#include <vector>

#include "engine/checkpoint/safetensors.h"
#include "engine/testing/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::checkpoint {
namespace {

using ::testing::HasSubstr;

class HfGpt2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/hf_gpt2_test_" + std::to_string(::getpid());
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_).ok());
    auto layout = model::ModelLayout::Create(model::Gpt2Config{"t", 2, 2, 8, 30, 12});
    ASSERT_TRUE(layout.ok());
    layout_ = std::make_unique<model::ModelLayout>(std::move(*layout));
    testing::TestRng rng(3);
    values_ = rng.NormalVector(layout_->num_params());
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(dir_); }

  // A file the way Hugging Face's GPT2LMHeadModel writes it: "transformer." names, the tied
  // lm_head.weight and the attention-mask buffers of older checkpoints, here in bf16.
  std::string WriteHfStyle(const std::string& skip = "", const std::string& extra = "") {
    SafetensorsWriter w;
    for (const LayoutEntry& e : layout_->flat().entries()) {
      if (e.name == skip) continue;
      EXPECT_TRUE(w.AddConverted("transformer." + e.name, e.shape, values_.data() + e.offset,
                                 DType::kBF16).ok());
    }
    const LayoutEntry* wte = layout_->flat().Find("wte.weight");
    EXPECT_TRUE(w.AddConverted("lm_head.weight", wte->shape, values_.data() + wte->offset,
                               DType::kBF16).ok());
    mask_.assign(12 * 12, 1.0f);
    EXPECT_TRUE(w.AddConverted("transformer.h.0.attn.bias", {1, 1, 12, 12}, mask_.data(),
                               DType::kF32).ok());
    if (!extra.empty()) EXPECT_TRUE(w.AddConverted(extra, {2}, values_.data(), DType::kF32).ok());
    const std::string path = dir_ + "/hf.safetensors";
    EXPECT_TRUE(w.Write(Env::Default(), path).ok());
    return path;
  }

  std::string dir_;
  std::unique_ptr<model::ModelLayout> layout_;
  std::vector<float> values_, mask_;
};

TEST_F(HfGpt2Test, LoadsHuggingFaceNamesInBf16) {
  std::vector<float> params(layout_->num_params());
  ASSERT_TRUE(LoadHfWeights(Env::Default(), WriteHfStyle(), *layout_, params.data()).ok());
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_EQ(params[i], Bf16ToFloat(FloatToBf16(values_[i]))) << i;
  }
}

TEST_F(HfGpt2Test, SaveWritesGpt2ModelNamesAndConfig) {
  const std::string path = dir_ + "/out/model.safetensors";
  ASSERT_TRUE(Env::Default()->CreateDirs(dir_ + "/out").ok());
  ASSERT_TRUE(SaveHfWeights(Env::Default(), path, *layout_, values_.data()).ok());
  auto reader = SafetensorsReader::Open(Env::Default(), path);
  ASSERT_TRUE(reader.ok());
  ASSERT_EQ((*reader)->tensors().size(), layout_->flat().entries().size());
  for (const LayoutEntry& e : layout_->flat().entries()) {
    const TensorInfo* t = (*reader)->Find(e.name);
    ASSERT_NE(t, nullptr) << e.name;
    EXPECT_EQ(t->shape, e.shape);
  }
  auto config = model::LoadGpt2Config(Env::Default(), dir_ + "/out/config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->n_embd, 8);
  // And it loads back bit for bit.
  std::vector<float> back(layout_->num_params());
  ASSERT_TRUE(LoadHfWeights(Env::Default(), path, *layout_, back.data()).ok());
  EXPECT_EQ(back, values_);
}

TEST_F(HfGpt2Test, MissingUnexpectedAndMisshapenTensorsAreNamed) {
  std::vector<float> params(layout_->num_params());
  absl::Status missing = LoadHfWeights(Env::Default(), WriteHfStyle("h.1.ln_2.bias"),
                                           *layout_, params.data());
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("h.1.ln_2.bias is missing"));

  absl::Status extra = LoadHfWeights(Env::Default(), WriteHfStyle("", "transformer.h.5.foo"),
                                         *layout_, params.data());
  EXPECT_THAT(extra.message(), HasSubstr("unexpected tensor transformer.h.5.foo"));

  auto other = model::ModelLayout::Create(model::Gpt2Config{"t", 2, 2, 16, 30, 12});
  ASSERT_TRUE(other.ok());
  std::vector<float> other_params(other->num_params());
  absl::Status shape = LoadHfWeights(Env::Default(), WriteHfStyle(), *other, other_params.data());
  EXPECT_EQ(shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shape.message(), HasSubstr("wte.weight"));
  EXPECT_THAT(shape.message(), HasSubstr("hf.safetensors"));

  absl::Status absent = LoadHfWeights(Env::Default(), dir_ + "/none.safetensors", *layout_,
                                          params.data());
  EXPECT_EQ(absent.code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace accel::checkpoint

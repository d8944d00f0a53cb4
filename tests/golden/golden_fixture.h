// The golden fixtures shared by the CPU and GPU golden tests: a tiny model's config, initial
// parameters, token batches and PyTorch's results, read from gpt2_tiny.safetensors or
// llama_tiny*.safetensors (tests/golden/README.md).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"
#include "engine/model/gpt2.h"
#include "engine/model/model_config.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel {

using checkpoint::SafetensorsReader;

// Reads one fixture file: its model (the metadata's config, a Hugging Face config.json for the
// Llama fixtures, GPT-2's keys for gpt2_tiny), the batch shape and hyperparameters, and the
// initial parameters into params_.
class GoldenFileFixture {
 protected:
  ::testing::AssertionResult Load(const std::string& file) {
    auto reader = SafetensorsReader::Open(Env::Default(), std::string(ACCEL_GOLDEN_DIR) + "/" + file);
    if (!reader.ok()) return ::testing::AssertionFailure() << reader.status();
    reader_ = std::move(*reader);
    hyper_ = nlohmann::json::parse(reader_->metadata().at("config"));
    auto config = model::ModelConfigFromJson(reader_->metadata().at("config"), file);
    if (!config.ok()) return ::testing::AssertionFailure() << config.status();
    config->set_name("golden-tiny");
    B_ = hyper_["B"];
    T_ = hyper_["T"];
    auto layout = model::ModelLayout::Create(*config);
    if (!layout.ok()) return ::testing::AssertionFailure() << layout.status();
    layout_ = std::make_unique<model::ModelLayout>(std::move(*layout));
    params_.assign(layout_->num_params(), 0.f);
    grads_.assign(layout_->num_params(), 0.f);
    return ReadParams("param.", params_.data());
  }

  // Reads every parameter tensor "<prefix><name>" into a flat buffer in layout order.
  ::testing::AssertionResult ReadParams(const std::string& prefix, float* flat) {
    for (const LayoutEntry& e : layout_->flat().entries()) {
      absl::Status s = reader_->ExpectShape(prefix + e.name, e.shape);
      if (s.ok()) s = reader_->ReadFloat(prefix + e.name, flat + e.offset, e.numel);
      if (!s.ok()) return ::testing::AssertionFailure() << s;
    }
    return ::testing::AssertionSuccess();
  }
  std::vector<float> Read(const std::string& name) {
    const checkpoint::TensorInfo* info = reader_->Find(name);
    EXPECT_NE(info, nullptr) << name;
    if (info == nullptr) return {};
    std::vector<float> v(info->numel);
    EXPECT_TRUE(reader_->ReadFloat(name, v.data(), info->numel).ok()) << name;
    return v;
  }
  void ReadBatch(int step, std::vector<int32_t>* x, std::vector<int32_t>* y) {
    std::vector<int32_t> tokens(B_ * (T_ + 1));
    ASSERT_TRUE(reader_->ReadRaw("step" + std::to_string(step) + ".tokens", tokens.data(),
                                 tokens.size() * sizeof(int32_t)).ok());
    x->resize(B_ * T_);
    y->resize(B_ * T_);
    for (int64_t b = 0; b < B_; ++b) {
      for (int64_t t = 0; t < T_; ++t) {
        (*x)[b * T_ + t] = tokens[b * (T_ + 1) + t];
        (*y)[b * T_ + t] = tokens[b * (T_ + 1) + t + 1];
      }
    }
  }
  std::span<const float> ParamSpan(const std::vector<float>& flat, const LayoutEntry& e) {
    return {flat.data() + e.offset, static_cast<size_t>(e.numel)};
  }

  std::unique_ptr<SafetensorsReader> reader_;
  int64_t B_ = 0, T_ = 0;
  nlohmann::json hyper_;
  std::unique_ptr<model::ModelLayout> layout_;
  std::vector<float> params_, grads_;
};

// The GPT-2 fixture (gpt2_tiny.safetensors).
class GoldenFixture : public ::testing::Test, public GoldenFileFixture {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Load("gpt2_tiny.safetensors"));
    config_ = *layout_->config().gpt2();
  }
  model::Gpt2Config config_;
};

}  // namespace accel

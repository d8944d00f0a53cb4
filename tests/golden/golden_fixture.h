// The golden fixtures shared by the CPU and GPU golden tests: a tiny model's config, initial
// parameters, token batches (with their loss masks in the *_masked fixtures) and PyTorch's
// results, read from gpt2_tiny*.safetensors or llama_tiny*.safetensors (tests/golden/README.md).
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"
#include "engine/kernels/adamw.h"
#include "engine/model/gpt2.h"
#include "engine/model/model_config.h"
#include "engine/optim/adamw.h"
#include "engine/optim/clip.h"
#include "engine/testing/matchers.h"
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
  // Step `step`'s inputs and targets; a masked fixture's step<k>.mask (1: the target counts)
  // turns the targets it masks into -100, as the BatchLoader does (docs/data.md "Loss mask").
  void ReadBatch(int step, std::vector<int32_t>* x, std::vector<int32_t>* y) {
    const std::string s = "step" + std::to_string(step);
    std::vector<int32_t> tokens(B_ * (T_ + 1));
    ASSERT_TRUE(
        reader_->ReadRaw(s + ".tokens", tokens.data(), tokens.size() * sizeof(int32_t)).ok());
    std::vector<int32_t> mask(B_ * T_, 1);
    if (reader_->Find(s + ".mask") != nullptr) {
      ASSERT_TRUE(
          reader_->ReadRaw(s + ".mask", mask.data(), mask.size() * sizeof(int32_t)).ok());
    }
    x->resize(B_ * T_);
    y->resize(B_ * T_);
    for (int64_t b = 0; b < B_; ++b) {
      for (int64_t t = 0; t < T_; ++t) {
        (*x)[b * T_ + t] = tokens[b * (T_ + 1) + t];
        (*y)[b * T_ + t] = mask[b * T_ + t] != 0 ? tokens[b * (T_ + 1) + t + 1] : -100;
      }
    }
  }
  std::span<const float> ParamSpan(const std::vector<float>& flat, const LayoutEntry& e) {
    return {flat.data() + e.offset, static_cast<size_t>(e.numel)};
  }

  // Three AdamW steps with global-norm clipping on the fixture's batches: `step` runs one
  // forward and backward into params_ / grads_ (zeroed before) and returns the loss. Checks each
  // step's loss and gradient norm (1e-6 relative) and the parameters after it: elements for
  // which exempt(entry, i, |step-0 gradient|) holds are held to one learning rate per update
  // (Adam's first steps turn fp32 rounding noise of near-zero gradients into visible moves in
  // any fp32 engine, README "Tolerances"), the rest to 1e-5 of the tensor's scale. Returns how
  // many elements were exempt.
  int64_t CheckAdamWSteps(
      const std::function<absl::StatusOr<float>(const int32_t*, const int32_t*)>& step,
      const std::function<bool(const LayoutEntry&, int64_t, float)>& exempt) {
    optim::AdamWConfig ac;
    ac.beta1 = hyper_["beta1"];
    ac.beta2 = hyper_["beta2"];
    ac.eps = hyper_["eps"];
    ac.weight_decay = hyper_["weight_decay"];
    auto opt = optim::AdamW::Create(*layout_, 0, layout_->num_params(), ac);
    EXPECT_TRUE(opt.ok()) << opt.status();
    if (!opt.ok()) return 0;
    const float lr = hyper_["lr"], max_norm = hyper_["max_norm"];
    std::vector<float> grad0(params_.size());
    EXPECT_TRUE(ReadParams("step0.grad.", grad0.data()));
    int64_t exempted = 0;
    for (int k = 0; k < 3; ++k) {
      std::vector<int32_t> x, y;
      ReadBatch(k, &x, &y);
      std::fill(grads_.begin(), grads_.end(), 0.f);
      absl::StatusOr<float> loss = step(x.data(), y.data());
      EXPECT_TRUE(loss.ok()) << loss.status();
      if (!loss.ok()) return exempted;
      const std::string s = "step" + std::to_string(k);
      const float expected_loss = Read(s + ".loss")[0];
      EXPECT_NEAR(*loss, expected_loss, 1e-6 * expected_loss) << s;
      const double norm = std::sqrt(kernels::SquaredL2Norm(grads_.data(), grads_.size()));
      const float expected_norm = Read(s + ".grad_norm")[0];
      EXPECT_NEAR(norm, expected_norm, 1e-6 * expected_norm) << s;
      EXPECT_TRUE(
          opt->Step(params_.data(), grads_.data(), lr, optim::ClipScale(norm, max_norm)).ok());
      std::vector<float> expected(params_.size());
      EXPECT_TRUE(ReadParams(s + ".param.", expected.data()));
      for (const LayoutEntry& e : layout_->flat().entries()) {
        std::span<const float> got = ParamSpan(params_, e), want = ParamSpan(expected, e);
        const double scale = testing::MaxAbs(want);
        for (int64_t i = 0; i < e.numel; ++i) {
          const bool loose = exempt(e, i, std::fabs(grad0[e.offset + i]));
          if (k == 0 && loose) ++exempted;
          const double tol = loose ? lr * (k + 1) : 1e-5 * scale;
          if (std::fabs(got[i] - want[i]) > tol) {
            ADD_FAILURE() << s << " param " << e.name << "[" << i << "]: " << got[i] << " vs "
                          << want[i] << " (tolerance " << tol << ")";
            return exempted;
          }
        }
      }
    }
    return exempted;
  }

  // Nonzero but below 1e-6: the gradients AdamW's eps makes ill-conditioned.
  static bool TinyGradient(float g0) { return g0 > 0.f && g0 < 1e-6f; }

  std::unique_ptr<SafetensorsReader> reader_;
  int64_t B_ = 0, T_ = 0;
  nlohmann::json hyper_;
  std::unique_ptr<model::ModelLayout> layout_;
  std::vector<float> params_, grads_;
};

// A GPT-2 fixture, the parameter's stem: gpt2_tiny, or gpt2_tiny_masked (the same model and
// batches with loss masks, make_masked_reference.py).
class GoldenFixture : public ::testing::TestWithParam<std::string>, public GoldenFileFixture {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Load(GetParam() + ".safetensors"));
    config_ = *layout_->config().As<model::Gpt2Config>();
  }
  model::Gpt2Config config_;
};

}  // namespace accel

// Precision: fp32 parameters pass through; 16-bit ones become fp32 copies of exactly their
// values (skipped ranges left alone), the root's kept until the step ends.
#include "engine/shard/precision.h"

#include <vector>

#include "engine/comm/self_communicator.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

class PrecisionTest : public ::testing::Test {
 protected:
  std::unique_ptr<ShardContext> Context(DType param_dtype, DType master_dtype = DType::kF32) {
    auto layout = model::ModelLayout::Create(model::Gpt2Config{"t", 1, 2, 6, 11, 7});
    layout_ = std::make_unique<model::ModelLayout>(std::move(*layout));
    ShardOptions o;
    o.param_dtype = o.reduce_dtype = param_dtype;
    o.master_dtype = master_dtype;
    auto plan = ShardPlan::Create(*layout_, 1, 0, o);
    EXPECT_TRUE(plan.ok()) << plan.status();
    auto ctx =
        ShardContext::Create(layout_.get(), std::move(*plan), {self_.get(), self_.get(), nullptr},
                             absl::Seconds(5), &ledger_, nullptr);
    EXPECT_TRUE(ctx.ok()) << ctx.status();
    return std::move(*ctx);
  }
  MemoryLedger ledger_;
  std::unique_ptr<comm::Communicator> self_ = comm::CreateSelfCommunicator();
  std::unique_ptr<model::ModelLayout> layout_;
};

TEST_F(PrecisionTest, Fp32ParametersAreTheModelsOwn) {
  auto ctx = Context(DType::kF32);
  std::unique_ptr<Precision> p = CreateFp32Precision(ctx.get());
  const std::vector<float> full(ctx->unit(1).padded_numel, 1.5f);
  auto got = p->ComputeParams(1, full.data());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, full.data());
  EXPECT_EQ(p->Bf16(full.data()), nullptr);
  EXPECT_TRUE(p->fp32());
  EXPECT_EQ(p->DTypesJson(), R"({"params":"f32","grads":"f32","master":"f32","optimizer":"f32"})");
}

TEST_F(PrecisionTest, Bf16ParametersGetExactFp32CopiesExceptSkippedRanges) {
  auto ctx = Context(DType::kBF16);
  std::unique_ptr<Precision> p = CreateMixedPrecision(ctx.get());
  const int64_t n = ctx->unit(1).padded_numel;
  std::vector<float> wide(n);
  for (int64_t i = 0; i < n; ++i) wide[i] = 0.1f * static_cast<float>(i);
  std::vector<uint16_t> full(n);
  ConvertDType(wide.data(), DType::kF32, full.data(), DType::kBF16, n);
  std::vector<float> exact(n);
  ConvertDType(full.data(), DType::kBF16, exact.data(), DType::kF32, n);
  p->SkipFp32Copy({{}, {{2, 3}}});
  auto got = p->ComputeParams(1, full.data());
  ASSERT_TRUE(got.ok());
  for (int64_t i = 0; i < n; ++i) {
    if (i >= 2 && i < 5) continue;  // unspecified
    ASSERT_EQ((*got)[i], exact[i]) << i;
  }
  EXPECT_EQ(p->Bf16(full.data()), full.data());
  EXPECT_FALSE(p->fp32());
  EXPECT_GT(ledger_.Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 0);
  p->Release(1);
  EXPECT_EQ(ledger_.Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 0);
}

TEST_F(PrecisionTest, TheRootsCopyLivesUntilTheStepEnds) {
  auto ctx = Context(DType::kBF16, DType::kBF16);
  std::unique_ptr<Precision> p = CreateMixedPrecision(ctx.get());
  EXPECT_TRUE(p->low_precision());
  const std::vector<uint16_t> full(ctx->unit(0).padded_numel, 0x3f80);  // 1.0
  auto first = p->ComputeParams(0, full.data());
  ASSERT_TRUE(first.ok());
  p->Release(0);
  auto again = p->ComputeParams(0, full.data());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*first, *again);  // not converted a second time
  EXPECT_EQ((*again)[0], 1.0f);
  p->ReleaseAll();
  EXPECT_EQ(ledger_.Get(MemoryPool::kDevice, MemoryCategory::kParams).current, 0);
  EXPECT_EQ(p->DTypesJson(),
            R"({"params":"bf16","grads":"bf16","master":"bf16","optimizer":"bf16"})");
}

}  // namespace
}  // namespace accel::shard

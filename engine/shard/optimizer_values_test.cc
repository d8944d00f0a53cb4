// OptimizerValues on one rank: masters keep the exact fp32 values and round into the
// parameters at the end of the step (also from offloaded memory); in place and low precision
// point the optimizer at the parameters themselves; gradient copies are unscaled.
#include "engine/shard/optimizer_values.h"

#include <vector>

#include "engine/comm/self_communicator.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

class OptimizerValuesTest : public ::testing::Test {
 protected:
  void Build(DType param_dtype, DType master_dtype, bool offload) {
    values_.reset();  // the parts before the context they live in
    grads_.reset();
    params_.reset();
    ctx_.reset();
    auto layout = model::ModelLayout::Create(model::Gpt2Config{"t", 1, 2, 6, 11, 7});
    layout_ = std::make_unique<model::ModelLayout>(std::move(*layout));
    ShardOptions o;
    o.strategy = Strategy::kFullShard;
    o.param_dtype = o.reduce_dtype = param_dtype;
    o.master_dtype = master_dtype;
    auto plan = ShardPlan::Create(*layout_, 1, 0, o);
    ASSERT_TRUE(plan.ok()) << plan.status();
    auto ctx =
        ShardContext::Create(layout_.get(), std::move(*plan), {self_.get(), self_.get(), nullptr},
                             absl::Seconds(5), &ledger_, nullptr);
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    ctx_ = std::move(*ctx);
    if (offload) {
      ctx_->SetOptimizerStorage(offload::CreateMemoryStorage(&ledger_, MemoryPool::kHost));
    }
    params_ = CreateShardedParams(ctx_.get(), &ctx_->ops());
    const bool fp32 = param_dtype == DType::kF32;
    grads_ = CreatePerUnitReducer(ctx_.get(), fp32, nullptr);
    values_ = master_dtype != DType::kF32 ? CreateLowPrecisionValues(ctx_.get(), params_.get())
              : !fp32 || offload          ? CreateMasterValues(ctx_.get(), params_.get())
                                 : CreateInPlaceValues(ctx_.get(), params_.get(), grads_.get());
    ASSERT_TRUE(params_->Allocate().ok());
    ASSERT_TRUE(values_->Allocate().ok());
    ASSERT_TRUE(grads_->Allocate().ok());
  }
  std::vector<float> Values(int u) const {
    std::vector<float> v(ctx_->unit(u).numel);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0f + 0.0001f * static_cast<float>(i);
    return v;
  }

  MemoryLedger ledger_;
  std::unique_ptr<comm::Communicator> self_ = comm::CreateSelfCommunicator();
  std::unique_ptr<model::ModelLayout> layout_;
  std::unique_ptr<ShardContext> ctx_;
  std::unique_ptr<ParamStore> params_;
  std::unique_ptr<GradReducer> grads_;
  std::unique_ptr<OptimizerValues> values_;
};

TEST_F(OptimizerValuesTest, MastersSaveExactlyAndRoundIntoTheParameters) {
  for (bool offload : {false, true}) {
    Build(DType::kBF16, DType::kF32, offload);
    const std::vector<float> v = Values(1);
    ASSERT_TRUE(values_->Load(1, v.data()).ok());
    std::vector<float> saved(v.size());
    ASSERT_TRUE(values_->Save(1, saved.data()).ok());
    EXPECT_EQ(saved, v) << "a save holds the masters, not their bf16 copies";
    float* master = values_->Params(1).params;
    ASSERT_NE(master, nullptr);
    master[0] = 3.0f;
    ASSERT_TRUE(values_->FinishStep().ok());
    const uint16_t* p = static_cast<const uint16_t*>(params_->OptimizerSpanParams(1).data);
    float back = 0;
    ConvertDType(p, DType::kBF16, &back, DType::kF32, 1);
    EXPECT_EQ(back, 3.0f);
    const MemoryPool where = offload ? MemoryPool::kHost : MemoryPool::kDevice;
    EXPECT_GT(ledger_.Get(where, MemoryCategory::kOptimizerState).current, 0) << offload;
  }
}

TEST_F(OptimizerValuesTest, InPlaceAndLowPrecisionUpdateTheParametersThemselves) {
  Build(DType::kF32, DType::kF32, false);
  EXPECT_EQ(values_->Params(1).params, params_->OptimizerSpanParams(1).data);
  EXPECT_EQ(values_->Grads(1), grads_->ReducedOptimizerSpan(1).data);
  EXPECT_EQ(ledger_.Get(MemoryPool::kDevice, MemoryCategory::kOptimizerState).current, 0);

  Build(DType::kBF16, DType::kBF16, false);
  EXPECT_EQ(values_->Params(1).params, nullptr);
  EXPECT_EQ(values_->Params(1).params16, params_->OptimizerSpanParams(1).data);
}

TEST_F(OptimizerValuesTest, GradientCopiesAreFp32AndUnscaled) {
  Build(DType::kBF16, DType::kF32, true);
  grads_->BeginMicroStep(0, 1);
  for (int u = ctx_->num_units() - 1; u >= 0; --u) {
    auto g = grads_->LocalGrads(u);
    ASSERT_TRUE(g.ok());
    for (int64_t i = 0; i < ctx_->unit(u).padded_numel; ++i) (*g)[i] = 8.0f;
    ASSERT_TRUE(grads_->GradsReady(u).ok());
  }
  ASSERT_TRUE(grads_->EndMicroStep(0, 1).ok());
  // With the optimizer offloaded the reduced shards (bf16 here) live with it, in the host pool.
  int64_t shard_elements = 0;
  for (int u = 0; u < ctx_->num_units(); ++u) shard_elements += ctx_->unit(u).shard_numel;
  const int64_t reduced = ledger_.Get(MemoryPool::kHost, MemoryCategory::kGrads).current;
  EXPECT_EQ(reduced, 2 * shard_elements);
  ASSERT_TRUE(values_->PrepareGrads(*grads_, /*loss_scale=*/4.0).ok());
  EXPECT_EQ(values_->Grads(1)[0], 2.0f);
  EXPECT_EQ(&values_->grads_ops(), &ctx_->optimizer_ops());
  EXPECT_GT(ledger_.Get(MemoryPool::kHost, MemoryCategory::kGrads).current, reduced);
  ASSERT_TRUE(values_->FinishStep().ok());
  // The fp32 copies are gone; the reduced shards stay for the next step.
  EXPECT_EQ(ledger_.Get(MemoryPool::kHost, MemoryCategory::kGrads).current, reduced);
}

}  // namespace
}  // namespace accel::shard

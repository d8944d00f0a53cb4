// GradReducer on two gloo ranks: at the boundary and per unit, in place (fp32) and through a
// bf16 wire, accumulation over micro-steps, and the spans the optimizer reads.
#include "engine/shard/grad_reducer.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/comm/gloo_test_util.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

const model::ModelLayout& Layout() {
  static const model::ModelLayout* layout = [] {
    auto l = model::ModelLayout::Create(model::Gpt2Config{"t", 2, 2, 6, 11, 7});
    return new model::ModelLayout(std::move(*l));
  }();
  return *layout;
}

struct Case {
  Strategy strategy;
  DType wire;
  bool every_micro_step;
};

// Two micro-steps in which rank r adds r + 1 to every local gradient element; returns the
// first element of every unit's reduced optimizer span (all equal within a unit).
absl::StatusOr<std::vector<float>> Reduce(int rank, comm::Communicator& comm, const Case& c) {
  MemoryLedger ledger;
  ShardOptions o;
  o.strategy = c.strategy;
  o.reduce_dtype = c.wire;
  o.reduce_every_micro_step = c.every_micro_step;
  ACCEL_ASSIGN_OR_RETURN(ShardPlan plan, ShardPlan::Create(Layout(), 2, rank, o));
  ACCEL_ASSIGN_OR_RETURN(auto ctx,
                         ShardContext::Create(&Layout(), std::move(plan), {&comm, &comm, nullptr},
                                              absl::Seconds(20), &ledger, nullptr));
  const bool in_place = c.wire == DType::kF32;
  std::unique_ptr<GradReducer> r =
      c.strategy == Strategy::kNoShard || c.strategy == Strategy::kShardOptimizer
          ? CreateBoundaryReducer(ctx.get(), in_place, c.strategy == Strategy::kNoShard)
          : CreatePerUnitReducer(ctx.get(), in_place, nullptr);
  ACCEL_RETURN_IF_ERROR(r->Allocate());
  ACCEL_RETURN_IF_ERROR(r->ZeroGrads());
  for (int micro = 0; micro < 2; ++micro) {
    r->BeginMicroStep(micro, 2);
    for (int u = ctx->num_units() - 1; u >= 0; --u) {
      ACCEL_ASSIGN_OR_RETURN(float* g, r->LocalGrads(u));
      for (int64_t i = 0; i < ctx->unit(u).padded_numel; ++i) g[i] += rank + 1.0f;
      ACCEL_RETURN_IF_ERROR(r->GradsReady(u));
    }
    ACCEL_RETURN_IF_ERROR(r->EndMicroStep(micro, 2));
  }
  std::vector<float> firsts;
  for (int u = 0; u < ctx->num_units(); ++u) {
    const ValueRef span = r->ReducedOptimizerSpan(u);
    if (span.dtype != c.wire || span.on_host) return absl::InternalError("wrong span kind");
    float first = 0;
    ConvertDType(span.data, span.dtype, &first, DType::kF32, 1);
    firsts.push_back(first);
  }
  return firsts;
}

TEST(GradReducerTest, EveryTimingSumsTheRanksGradients) {
  for (const Case& c : {Case{Strategy::kNoShard, DType::kF32, false},
                        Case{Strategy::kShardOptimizer, DType::kBF16, false},
                        Case{Strategy::kShardGradOp, DType::kF32, false},
                        Case{Strategy::kFullShard, DType::kBF16, false},
                        Case{Strategy::kShardGradOp, DType::kBF16, true}}) {
    absl::Status s = comm::testing::RunGroup(
        2, absl::Seconds(20), [&](int rank, comm::Communicator& comm) -> absl::Status {
          ACCEL_ASSIGN_OR_RETURN(std::vector<float> firsts, Reduce(rank, comm, c));
          for (float f : firsts) {  // (1 + 2) per micro-step, two micro-steps
            if (f != 6.0f) return absl::InternalError(absl::StrCat("reduced to ", f));
          }
          return absl::OkStatus();
        });
    EXPECT_TRUE(s.ok()) << StrategyName(c.strategy) << " " << DTypeName(c.wire) << " " << s;
  }
}

TEST(GradReducerTest, InPlaceBoundaryGradientsAreKeptNotCopied) {
  absl::Status s = comm::testing::RunGroup(
      2, absl::Seconds(20), [&](int rank, comm::Communicator& comm) -> absl::Status {
        MemoryLedger ledger;
        ShardOptions o;
        ACCEL_ASSIGN_OR_RETURN(ShardPlan plan, ShardPlan::Create(Layout(), 2, rank, o));
        ACCEL_ASSIGN_OR_RETURN(
            auto ctx, ShardContext::Create(&Layout(), std::move(plan), {&comm, &comm, nullptr},
                                           absl::Seconds(20), &ledger, nullptr));
        std::unique_ptr<GradReducer> r = CreateBoundaryReducer(ctx.get(), true, true);
        ACCEL_RETURN_IF_ERROR(r->Allocate());
        ACCEL_ASSIGN_OR_RETURN(float* g, r->LocalGrads(1));
        if (r->ReducedOptimizerSpan(1).data != g) {
          return absl::InternalError("the reduced span is not the local buffer");
        }
        int64_t padded = 0;
        for (int u = 0; u < ctx->num_units(); ++u) padded += ctx->unit(u).padded_numel;
        const int64_t grads = ledger.Get(MemoryPool::kDevice, MemoryCategory::kGrads).current;
        return grads == padded * 4 ? absl::OkStatus()
                                   : absl::InternalError(absl::StrCat("grads ", grads));
      });
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace accel::shard

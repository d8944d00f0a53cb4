// The CUDA runners agree with the registry's entries: a family has a CUDA runner exactly when
// its entry lists "cuda", so the submit check (the entry's devices) and the ranks (this table)
// answer the same. No device needed.
#include "engine/model/cuda/cuda_runners.h"

#include "gtest/gtest.h"

namespace accel::model {
namespace {

TEST(CudaRunnersTest, EveryFamilyThatListsCudaHasARunnerAndNoOtherDoes) {
  for (const Architecture* a : Architectures()) {
    EXPECT_EQ(FindCudaRunner(*a) != nullptr, a->TrainsOn("cuda")) << a->name;
  }
  EXPECT_NE(FindCudaRunner(Gpt2Config::Family()), nullptr);
  EXPECT_EQ(FindCudaRunner(LlamaConfig::Family()), nullptr);
}

}  // namespace
}  // namespace accel::model

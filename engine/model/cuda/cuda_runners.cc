#include "engine/model/cuda/cuda_runners.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "engine/base/status_macros.h"
#include "engine/model/cuda/gpt2_cuda.h"

namespace accel::model {
namespace {

class Gpt2CudaRunner final : public ModelRunner {
 public:
  Gpt2CudaRunner(const ModelLayout* layout, cuda::Blas* blas, cudaStream_t stream,
                 Gpt2CudaActivations acts)
      : model_(layout, blas, stream), acts_(std::move(acts)) {}

  absl::StatusOr<float> Forward(ParamAccess& params, const int32_t* inputs,
                                const int32_t* targets) override {
    return model_.Forward(params, inputs, targets, acts_);
  }
  // The device keeps the tokens Forward uploaded: inputs and targets are not needed again.
  absl::Status Backward(ParamAccess& params, const int32_t*, const int32_t*, float dloss) override {
    return model_.Backward(params, acts_, dloss);
  }

 private:
  Gpt2Cuda model_;
  Gpt2CudaActivations acts_;
};

absl::StatusOr<std::unique_ptr<ModelRunner>> MakeGpt2Cuda(const ModelLayout* layout,
                                                          const CudaRunnerOptions& o) {
  ACCEL_ASSIGN_OR_RETURN(Gpt2CudaActivations acts,
                         Gpt2CudaActivations::Create(*layout->config().As<Gpt2Config>(), o.batch,
                                                     o.seq, o.allocator, o.stream, o.bf16_matmuls));
  return std::make_unique<Gpt2CudaRunner>(layout, o.blas, o.stream, std::move(acts));
}

}  // namespace

const CudaRunnerFactory* FindCudaRunner(const Architecture& family) {
  static const auto* runners = new absl::flat_hash_map<std::string, CudaRunnerFactory>{
      {Gpt2Config::Family().name, MakeGpt2Cuda}};
  auto it = runners->find(family.name);
  return it == runners->end() ? nullptr : &it->second;
}

}  // namespace accel::model

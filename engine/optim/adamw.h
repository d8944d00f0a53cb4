// AdamW over one contiguous range [begin, end) of the flat parameter buffer: the whole model in
// one process, or the rank's own shard under ZeRO/FSDP. Owns the first and second moments
// (charged as optimizer state). Weight decay applies only to parameters whose ParamSpec says so
// (rank >= 2: embeddings and linear weights), PyTorch's torch.optim.AdamW arithmetic otherwise
// (engine/kernels/adamw.h). Elements past the end of the layout (shard padding) are never
// updated. The moments live, and the update runs, where a shard::DeviceOps says (host memory by
// default; a CUDA device's, with the same arithmetic, through CudaDeviceOps); then params and
// grads are that device's memory too. Not thread-safe; the host kernels use the OpenMP pool.
#pragma once

#include <cstdint>
#include <vector>

#include <memory>

#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"
#include "engine/kernels/adamw.h"
#include "engine/model/param_specs.h"
#include "engine/shard/device_ops.h"
#include "engine/shard/tile_stream.h"
#include "engine/tensor/dtype.h"

namespace accel::optim {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  // Adam's bias corrections (1 - beta^step); false is DeepSpeed's `bias_correction: false`
  // (kernels::AdamWHyper::bias_correction).
  bool bias_correction = true;
  // The moments' dtype: f32, or bf16 for low precision (bf16 parameters without an fp32
  // master, updated through StepBf16).
  DType state_dtype = DType::kF32;
};

class AdamW {
 public:
  AdamW(AdamW&&) = default;
  // Deleted: member-wise it would destroy the old host ops before the old moments.
  AdamW& operator=(AdamW&&) = delete;
  // InvalidArgument if the range is empty-negative, a hyperparameter is out of its domain
  // (betas in [0, 1), eps > 0, weight_decay >= 0) or state_dtype is f16.
  // Moments in host memory of `pool`, charged to `ledger` (null: MemoryLedger::Default()).
  [[nodiscard]] static absl::StatusOr<AdamW> Create(const model::ModelLayout& layout, int64_t begin,
                                                    int64_t end, const AdamWConfig& config,
                                                    MemoryPool pool = MemoryPool::kHost,
                                                    MemoryLedger* ledger = nullptr);
  // Moments from `ops` (not owned; must outlive the optimizer), updates through it.
  [[nodiscard]] static absl::StatusOr<AdamW> Create(const model::ModelLayout& layout, int64_t begin,
                                                    int64_t end, const AdamWConfig& config,
                                                    shard::DeviceOps* ops);

  // One update. params and grads point at element `begin` of their flat buffers and hold
  // end - begin elements. grad_scale multiplies every gradient (clipping, loss-scale undo).
  // Advances the step count first (so the first update uses step 1).
  // Requires f32 state. Errors are the DeviceOps' (none on the host).
  // Under a stream (set_stream), `hook`'s arrays ride the same tiles and hook->fn runs after
  // each tile's update; without one, or where the stream cannot address the arrays, the hook
  // is not used (its fn never runs, which its owner sees).
  [[nodiscard]] absl::Status Step(float* params, const float* grads, float lr,
                                  float grad_scale = 1.0f, const shard::TileHook* hook = nullptr);
  // The same with bf16 parameters and bf16 state (kernels::AdamWUpdateBf16; Unimplemented on
  // a device without that kernel).
  [[nodiscard]] absl::Status StepBf16(uint16_t* params, const float* grads, float lr,
                                      float grad_scale = 1.0f);

  // NVMe offload (state in files): update in tiles of `numel` elements, each tile's moments,
  // parameters and gradients written back to their files and dropped from memory before the
  // next (DeviceOps::EvictRange); the same arithmetic. 0 (the default): one pass, nothing
  // evicted.
  void set_stream_tile(int64_t numel) { stream_tile_ = numel; }
  // NVMe offload through AsyncIo (not owned; outlives the optimizer): the update reads each
  // tile of parameters, moments and gradients into the stream's buffers and writes it back
  // directly (io_uring, O_DIRECT), overlapping the next tile's reads and the last one's writes
  // with the arithmetic (shard::TileStream). Used where the stream can address the files
  // (TileStream::CanStream); otherwise the tiled mapped path above. Null: not streamed.
  void set_stream(shard::TileStream* stream) { stream_ = stream; }

  int64_t step() const { return step_; }
  void set_step(int64_t step) { step_ = step; }
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }
  const AdamWConfig& config() const { return config_; }
  DType state_dtype() const { return config_.state_dtype; }
  // end - begin elements in state_dtype, in the DeviceOps' memory.
  shard::DeviceBlock& exp_avg() { return m_; }
  shard::DeviceBlock& exp_avg_sq() { return v_; }
  shard::DeviceOps& ops() const { return *ops_; }

  struct DecayRange {
    int64_t begin, end;  // relative to the optimizer's begin
    bool decay;
  };
  const std::vector<DecayRange>& ranges() const { return ranges_; }
  // The ranges of [begin, end) with and without weight decay, merged where adjacent (what an
  // optimizer over that range uses; also for device optimizers that keep no AdamW object).
  static std::vector<DecayRange> DecayRanges(const model::ModelLayout& layout, int64_t begin,
                                             int64_t end);

 private:
  AdamW() = default;
  absl::Status EvictTile(const void* params, size_t param_size, const float* grads,
                         int64_t begin, int64_t end);
  // Runs update(begin, n) over every decay range, in tiles when streaming; `hyper` gets each
  // range's weight decay.
  template <typename Update>
  absl::Status ForEachTile(const void* params, size_t param_size, const float* grads,
                           kernels::AdamWHyper& hyper, Update update);
  // Step's update through stream_ (fp32 only: NVMe offload keeps fp32 masters and moments, as
  // ShardPlan refuses it under low precision, so StepBf16 never streams). False in `streamed`
  // when the stream cannot address these arrays (nothing done then).
  absl::Status StreamTiles(float* params, const float* grads, kernels::AdamWHyper& hyper,
                           const shard::TileHook* hook, bool* streamed);
  // Advances the step count and fills everything but weight_decay.
  kernels::AdamWHyper NextHyper(float lr, float grad_scale);

  AdamWConfig config_;
  int64_t begin_ = 0, end_ = 0, step_ = 0;
  int64_t stream_tile_ = 0;
  shard::TileStream* stream_ = nullptr;
  std::vector<DecayRange> ranges_;
  std::unique_ptr<shard::DeviceOps> own_ops_;  // the host ops of the first Create; outlives m_, v_
  shard::DeviceOps* ops_ = nullptr;
  shard::DeviceBlock m_, v_;
};

}  // namespace accel::optim

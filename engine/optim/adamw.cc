#include "engine/optim/adamw.h"

#include <algorithm>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/adamw.h"

namespace accel::optim {

absl::StatusOr<AdamW> AdamW::Create(const model::ModelLayout& layout, int64_t begin, int64_t end,
                                    const AdamWConfig& config, MemoryPool pool,
                                    MemoryLedger* ledger) {
  std::unique_ptr<shard::DeviceOps> ops =
      shard::CreateHostDeviceOps(ledger != nullptr ? ledger : MemoryLedger::Default(), pool);
  ACCEL_ASSIGN_OR_RETURN(AdamW opt, Create(layout, begin, end, config, ops.get()));
  opt.own_ops_ = std::move(ops);
  return opt;
}

absl::StatusOr<AdamW> AdamW::Create(const model::ModelLayout& layout, int64_t begin, int64_t end,
                                    const AdamWConfig& config, shard::DeviceOps* ops) {
  if (begin < 0 || end < begin) {
    return absl::InvalidArgumentError(absl::StrCat("AdamW range [", begin, ", ", end, ") is invalid"));
  }
  if (!(config.beta1 >= 0 && config.beta1 < 1) || !(config.beta2 >= 0 && config.beta2 < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("AdamW betas must lie in [0, 1), got (",
                                                   config.beta1, ", ", config.beta2, ")"));
  }
  if (!(config.eps > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("AdamW eps must be positive, got ", config.eps));
  }
  if (!(config.weight_decay >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("AdamW weight_decay must be >= 0, got ", config.weight_decay));
  }
  if (config.state_dtype == DType::kF16) {
    return absl::InvalidArgumentError(
        "AdamW state in f16 is not supported (f32, or bf16 for low precision)");
  }
  AdamW opt;
  opt.config_ = config;
  opt.begin_ = begin;
  opt.end_ = end;
  opt.ranges_ = DecayRanges(layout, begin, end);
  opt.ops_ = ops;
  const size_t bytes = static_cast<size_t>(end - begin) * DTypeSize(config.state_dtype);
  ACCEL_ASSIGN_OR_RETURN(opt.m_, ops->Allocate(bytes, MemoryCategory::kOptimizerState));
  ACCEL_ASSIGN_OR_RETURN(opt.v_, ops->Allocate(bytes, MemoryCategory::kOptimizerState));
  return opt;
}

std::vector<AdamW::DecayRange> AdamW::DecayRanges(const model::ModelLayout& layout,
                                                  int64_t begin, int64_t end) {
  std::vector<DecayRange> ranges;
  const auto& entries = layout.flat().entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t lo = std::max(begin, entries[i].offset);
    const int64_t hi = std::min(end, entries[i].offset + entries[i].numel);
    if (lo >= hi) continue;
    const bool decay = layout.specs()[i].weight_decay;
    if (!ranges.empty() && ranges.back().decay == decay && ranges.back().end == lo - begin) {
      ranges.back().end = hi - begin;
    } else {
      ranges.push_back({lo - begin, hi - begin, decay});
    }
  }
  return ranges;
}

absl::Status AdamW::EvictTile(const void* params, size_t param_size, const float* grads,
                              int64_t begin, int64_t end) {
  // Under NVMe offload the tile's state goes back to its files now, not at the end of the
  // step, so about one tile of each is in memory at a time (elsewhere: nothing).
  const size_t state_size = DTypeSize(config_.state_dtype);
  const size_t n = static_cast<size_t>(end - begin);
  ACCEL_RETURN_IF_ERROR(ops_->EvictRange(m_.as<char>() + begin * state_size, n * state_size));
  ACCEL_RETURN_IF_ERROR(ops_->EvictRange(v_.as<char>() + begin * state_size, n * state_size));
  ACCEL_RETURN_IF_ERROR(
      ops_->EvictRange(static_cast<const char*>(params) + begin * param_size, n * param_size));
  return ops_->EvictRange(grads + begin, n * sizeof(float));
}

template <typename Update>
absl::Status AdamW::ForEachTile(const void* params, size_t param_size, const float* grads,
                                kernels::AdamWHyper& hyper, Update update) {
  for (const DecayRange& r : ranges_) {
    hyper.weight_decay = r.decay ? config_.weight_decay : 0.0f;
    for (int64_t b = r.begin; b < r.end;) {
      // Tiles start at multiples of the tile size, so their pages are not shared.
      const int64_t e = stream_tile_ > 0 ? std::min(r.end, (b / stream_tile_ + 1) * stream_tile_)
                                         : r.end;
      ACCEL_RETURN_IF_ERROR(update(b, e - b));
      if (stream_tile_ > 0) ACCEL_RETURN_IF_ERROR(EvictTile(params, param_size, grads, b, e));
      b = e;
    }
  }
  return absl::OkStatus();
}

absl::Status AdamW::StreamTiles(float* params, const float* grads, kernels::AdamWHyper& hyper,
                                const shard::TileHook* hook, bool* streamed) {
  std::vector<shard::StreamArray> arrays = {{params, sizeof(float), true},
                                            {m_.data(), sizeof(float), true},
                                            {v_.data(), sizeof(float), true},
                                            {const_cast<float*>(grads), sizeof(float), false}};
  if (hook != nullptr) arrays.insert(arrays.end(), hook->arrays.begin(), hook->arrays.end());
  *streamed = stream_ != nullptr && stream_->CanStream(*ops_, arrays);
  if (!*streamed) return absl::OkStatus();
  return stream_->Run(*ops_, arrays, end_ - begin_,
                      [&](int64_t b, int64_t len, std::span<void* const> at) -> absl::Status {
    float* p = static_cast<float*>(at[0]);
    // Elementwise arithmetic: cutting the decay ranges at tile edges changes no bit.
    for (const DecayRange& r : ranges_) {
      const int64_t lo = std::max(r.begin, b), hi = std::min(r.end, b + len);
      if (lo >= hi) continue;
      hyper.weight_decay = r.decay ? config_.weight_decay : 0.0f;
      ACCEL_RETURN_IF_ERROR(ops_->AdamWUpdate(p + (lo - b), static_cast<float*>(at[1]) + (lo - b),
                                              static_cast<float*>(at[2]) + (lo - b),
                                              static_cast<const float*>(at[3]) + (lo - b),
                                              hi - lo, hyper));
    }
    if (hook == nullptr || !hook->fn) return absl::OkStatus();
    return hook->fn(b, len, p, at.subspan(4));
  });
}

kernels::AdamWHyper AdamW::NextHyper(float lr, float grad_scale) {
  ++step_;
  kernels::AdamWHyper hyper;
  hyper.lr = lr;
  hyper.beta1 = config_.beta1;
  hyper.beta2 = config_.beta2;
  hyper.eps = config_.eps;
  hyper.step = step_;
  hyper.grad_scale = grad_scale;
  hyper.bias_correction = config_.bias_correction;
  return hyper;
}

absl::Status AdamW::Step(float* params, const float* grads, float lr, float grad_scale,
                         const shard::TileHook* hook) {
  kernels::AdamWHyper hyper = NextHyper(lr, grad_scale);
  bool streamed = false;
  absl::Status s = StreamTiles(params, grads, hyper, hook, &streamed);
  if (!s.ok() || streamed) return s;
  float* m = m_.as<float>();
  float* v = v_.as<float>();
  return ForEachTile(params, sizeof(float), grads, hyper, [&](int64_t b, int64_t n) {
    return ops_->AdamWUpdate(params + b, m + b, v + b, grads + b, n, hyper);
  });
}

absl::Status AdamW::StepBf16(uint16_t* params, const float* grads, float lr, float grad_scale) {
  kernels::AdamWHyper hyper = NextHyper(lr, grad_scale);
  uint16_t* m = m_.as<uint16_t>();
  uint16_t* v = v_.as<uint16_t>();
  return ForEachTile(params, sizeof(uint16_t), grads, hyper, [&](int64_t b, int64_t n) {
    return ops_->AdamWUpdateBf16(params + b, m + b, v + b, grads + b, n, hyper);
  });
}

}  // namespace accel::optim

// The two Precisions (precision.h): fp32 parameters as they are, and 16-bit parameters with
// transient fp32 copies.
#include "engine/shard/precision.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::shard {

std::string Precision::DTypesJson() const {
  const std::string params(DTypeName(options_.param_dtype));
  const std::string grads(DTypeName(options_.reduce_dtype));
  const std::string master = low_precision() || fp32() ? params : "f32";
  return absl::StrCat(R"({"params":")", params, R"(","grads":")", grads, R"(","master":")", master,
                      R"(","optimizer":")", low_precision() ? params : "f32", R"("})");
}

namespace {

class Fp32Precision final : public Precision {
 public:
  explicit Fp32Precision(ShardContext* ctx) : Precision(ctx->options()) {}
  absl::StatusOr<const float*> ComputeParams(int, const void* full) override {
    return static_cast<const float*>(full);
  }
  const uint16_t* Bf16(const void*) const override { return nullptr; }
  void Release(int) override {}
  void ReleaseAll() override {}
  void SkipFp32Copy(std::vector<std::vector<std::pair<int64_t, int64_t>>>) override {}
  bool fp32() const override { return true; }
};

class MixedPrecision final : public Precision {
 public:
  explicit MixedPrecision(ShardContext* ctx)
      : Precision(ctx->options()), ctx_(*ctx), copies_(ctx->num_units()) {}

  absl::StatusOr<const float*> ComputeParams(int u, const void* full) override {
    DeviceBlock& copy = copies_[u];
    if (!copy.empty()) return copy.as<float>();
    DeviceOps& ops = ctx_.ops();
    const int64_t n = ctx_.unit(u).padded_numel;
    ACCEL_ASSIGN_OR_RETURN(copy, ops.Acquire(n * sizeof(float), MemoryCategory::kParams, false));
    const DType dtype = options_.param_dtype;
    const auto* src = static_cast<const uint16_t*>(full);
    int64_t next = 0;  // converts the complement of the skipped ranges
    auto convert_to = [&](int64_t end) {
      return ops.Convert(src + next, dtype, copy.as<float>() + next, DType::kF32, end - next);
    };
    if (dtype == DType::kBF16 && static_cast<size_t>(u) < skip_.size()) {
      for (const auto& [offset, numel] : skip_[u]) {
        ACCEL_RETURN_IF_ERROR(convert_to(offset));
        next = offset + numel;
      }
    }
    ACCEL_RETURN_IF_ERROR(convert_to(n));
    return copy.as<float>();
  }

  const uint16_t* Bf16(const void* full) const override {
    if (options_.param_dtype != DType::kBF16) return nullptr;
    return static_cast<const uint16_t*>(full);
  }
  void Release(int u) override {
    if (u != 0) ctx_.ops().Recycle(std::move(copies_[u]));
  }
  void ReleaseAll() override {
    for (DeviceBlock& copy : copies_) ctx_.ops().Recycle(std::move(copy));
  }
  void SkipFp32Copy(std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges) override {
    skip_ = std::move(ranges);
  }
  bool fp32() const override { return false; }

 private:
  ShardContext& ctx_;
  std::vector<DeviceBlock> copies_;  // per unit, while the model uses it
  std::vector<std::vector<std::pair<int64_t, int64_t>>> skip_;
};

}  // namespace

std::unique_ptr<Precision> CreateFp32Precision(ShardContext* ctx) {
  return std::make_unique<Fp32Precision>(ctx);
}

std::unique_ptr<Precision> CreateMixedPrecision(ShardContext* ctx) {
  return std::make_unique<MixedPrecision>(ctx);
}

}  // namespace accel::shard

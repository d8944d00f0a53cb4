#include "engine/model/param_specs.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/model/registry.h"

namespace accel::model {

absl::StatusOr<ModelLayout> ModelLayout::Create(const ModelConfig& config) {
  ACCEL_RETURN_IF_ERROR(config.Validate());
  ModelLayout g;
  g.config_ = config;
  g.specs_ = config.architecture().param_specs(config);
  g.units_.resize(config.num_layers() + 1);
  for (const ParamSpec& s : g.specs_) {
    if (s.unit < 0 || s.unit >= static_cast<int>(g.units_.size())) {
      return absl::InternalError(absl::StrCat("architecture ", config.architecture().name,
                                              ": tensor ", s.name, " is in unit ", s.unit, " of ",
                                              g.units_.size()));
    }
    ACCEL_RETURN_IF_ERROR(g.flat_.Add(s.name, s.shape));
    const LayoutEntry& e = g.flat_.entries().back();
    UnitRange& u = g.units_[s.unit];
    if (u.numel == 0) u.offset = e.offset;
    u.numel += e.numel;
  }
  return g;
}

int64_t ModelLayout::OffsetInUnit(std::string_view name) const {
  const LayoutEntry* e = flat_.Find(std::string(name));
  if (e == nullptr) return -1;
  const ParamSpec& spec = specs_[e - flat_.entries().data()];
  return e->offset - units_[spec.unit].offset;
}

namespace {

// Entry i's values into p (its numel floats). Each entry has its own generator, keyed by the
// seed and the entry's index, so any subset of entries can be initialised alone.
void InitEntry(const ModelLayout& layout, uint64_t seed, size_t i, float* p) {
  const ParamSpec& spec = layout.specs()[i];
  const int64_t n = layout.flat().entries()[i].numel;
  if (spec.init == ParamInit::kOnes || spec.init == ParamInit::kZeros) {
    std::fill(p, p + n, spec.init == ParamInit::kOnes ? 1.0f : 0.0f);
    return;
  }
  const double stddev = spec.init_std;
  // Box-Muller over a 64-bit Mersenne Twister: portable, unlike std::normal_distribution.
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + i);
  for (int64_t j = 0; j < n; j += 2) {
    double u1 = (static_cast<double>(gen() >> 11) + 1.0) * 0x1.0p-53;
    double u2 = static_cast<double>(gen() >> 11) * 0x1.0p-53;
    double r = stddev * std::sqrt(-2.0 * std::log(u1));
    p[j] = static_cast<float>(r * std::cos(6.283185307179586 * u2));
    if (j + 1 < n) p[j + 1] = static_cast<float>(r * std::sin(6.283185307179586 * u2));
  }
}

}  // namespace

void InitParams(const ModelLayout& layout, uint64_t seed, float* params) {
  const auto& entries = layout.flat().entries();
  for (size_t i = 0; i < entries.size(); ++i) InitEntry(layout, seed, i, params + entries[i].offset);
}

void InitUnit(const ModelLayout& layout, uint64_t seed, int unit, float* unit_params) {
  const UnitRange& range = layout.unit(unit);
  const auto& entries = layout.flat().entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].offset < range.offset || entries[i].offset >= range.offset + range.numel) {
      continue;
    }
    InitEntry(layout, seed, i, unit_params + (entries[i].offset - range.offset));
  }
}

}  // namespace accel::model

#include "engine/model/param_specs.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::model {

std::vector<ParamSpec> Gpt2ParamSpecs(const Gpt2Config& c) {
  const int64_t C = c.n_embd;
  std::vector<ParamSpec> specs;
  auto add = [&](std::string name, std::vector<int64_t> shape, int unit, ParamInit init) {
    bool decay = shape.size() >= 2;
    specs.push_back({std::move(name), std::move(shape), unit, decay, init});
  };
  add("wte.weight", {c.vocab_size, C}, 0, ParamInit::kNormal);
  add("wpe.weight", {c.n_positions, C}, 0, ParamInit::kNormal);
  add("ln_f.weight", {C}, 0, ParamInit::kOnes);
  add("ln_f.bias", {C}, 0, ParamInit::kZeros);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = absl::StrCat("h.", l, ".");
    const int unit = static_cast<int>(l) + 1;
    add(p + "ln_1.weight", {C}, unit, ParamInit::kOnes);
    add(p + "ln_1.bias", {C}, unit, ParamInit::kZeros);
    add(p + "attn.c_attn.weight", {C, 3 * C}, unit, ParamInit::kNormal);
    add(p + "attn.c_attn.bias", {3 * C}, unit, ParamInit::kZeros);
    add(p + "attn.c_proj.weight", {C, C}, unit, ParamInit::kResidualProjection);
    add(p + "attn.c_proj.bias", {C}, unit, ParamInit::kZeros);
    add(p + "ln_2.weight", {C}, unit, ParamInit::kOnes);
    add(p + "ln_2.bias", {C}, unit, ParamInit::kZeros);
    add(p + "mlp.c_fc.weight", {C, 4 * C}, unit, ParamInit::kNormal);
    add(p + "mlp.c_fc.bias", {4 * C}, unit, ParamInit::kZeros);
    add(p + "mlp.c_proj.weight", {4 * C, C}, unit, ParamInit::kResidualProjection);
    add(p + "mlp.c_proj.bias", {C}, unit, ParamInit::kZeros);
  }
  return specs;
}

absl::StatusOr<Gpt2Layout> Gpt2Layout::Create(const Gpt2Config& config) {
  ACCEL_RETURN_IF_ERROR(config.Validate());
  Gpt2Layout g;
  g.config_ = config;
  g.specs_ = Gpt2ParamSpecs(config);
  g.units_.resize(config.n_layer + 1);
  for (const ParamSpec& s : g.specs_) {
    ACCEL_RETURN_IF_ERROR(g.flat_.Add(s.name, s.shape));
    const LayoutEntry& e = g.flat_.entries().back();
    UnitRange& u = g.units_[s.unit];
    if (u.numel == 0) u.offset = e.offset;
    u.numel += e.numel;
  }
  auto rel = [&](const std::string& name) {
    const LayoutEntry* e = g.flat_.Find(name);
    const ParamSpec& first = g.specs_[&*e - &g.flat_.entries()[0]];
    return e->offset - g.units_[first.unit].offset;
  };
  g.root_ = {rel("wte.weight"), rel("wpe.weight"), rel("ln_f.weight"), rel("ln_f.bias")};
  g.block_ = {rel("h.0.ln_1.weight"),        rel("h.0.ln_1.bias"),
              rel("h.0.attn.c_attn.weight"), rel("h.0.attn.c_attn.bias"),
              rel("h.0.attn.c_proj.weight"), rel("h.0.attn.c_proj.bias"),
              rel("h.0.ln_2.weight"),        rel("h.0.ln_2.bias"),
              rel("h.0.mlp.c_fc.weight"),    rel("h.0.mlp.c_fc.bias"),
              rel("h.0.mlp.c_proj.weight"),  rel("h.0.mlp.c_proj.bias")};
  return g;
}

namespace {

// Entry i's values into p (its numel floats). Each entry has its own generator, keyed by the
// seed and the entry's index, so any subset of entries can be initialised alone.
void InitEntry(const Gpt2Layout& layout, uint64_t seed, size_t i, float* p) {
  const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(layout.config().n_layer));
  const ParamSpec& spec = layout.specs()[i];
  const int64_t n = layout.flat().entries()[i].numel;
  if (spec.init == ParamInit::kOnes || spec.init == ParamInit::kZeros) {
    std::fill(p, p + n, spec.init == ParamInit::kOnes ? 1.0f : 0.0f);
    return;
  }
  const double stddev = spec.init == ParamInit::kNormal ? 0.02 : residual_std;
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

void InitGpt2Params(const Gpt2Layout& layout, uint64_t seed, float* params) {
  const auto& entries = layout.flat().entries();
  for (size_t i = 0; i < entries.size(); ++i) InitEntry(layout, seed, i, params + entries[i].offset);
}

void InitGpt2Unit(const Gpt2Layout& layout, uint64_t seed, int unit, float* unit_params) {
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

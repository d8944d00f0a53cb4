#include "engine/model/gpt2_specs.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace accel::model {

std::vector<ParamSpec> Gpt2ParamSpecs(const Gpt2Config& c) {
  const int64_t C = c.n_embd;
  std::vector<ParamSpec> specs;
  // Computed in float as it always was, so that initial weights stay bit-identical.
  const double residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(c.n_layer));
  auto add = [&](std::string name, std::vector<int64_t> shape, int unit, ParamInit init,
                 double std = 0.02) {
    bool decay = shape.size() >= 2;
    specs.push_back({std::move(name), std::move(shape), unit, decay, init,
                     init == ParamInit::kNormal ? std : 0.0});
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
    add(p + "attn.c_proj.weight", {C, C}, unit, ParamInit::kNormal, residual_std);
    add(p + "attn.c_proj.bias", {C}, unit, ParamInit::kZeros);
    add(p + "ln_2.weight", {C}, unit, ParamInit::kOnes);
    add(p + "ln_2.bias", {C}, unit, ParamInit::kZeros);
    add(p + "mlp.c_fc.weight", {C, 4 * C}, unit, ParamInit::kNormal);
    add(p + "mlp.c_fc.bias", {4 * C}, unit, ParamInit::kZeros);
    add(p + "mlp.c_proj.weight", {4 * C, C}, unit, ParamInit::kNormal, residual_std);
    add(p + "mlp.c_proj.bias", {C}, unit, ParamInit::kZeros);
  }
  return specs;
}

Gpt2Offsets Gpt2OffsetsOf(const ModelLayout& layout) {
  auto at = [&](const char* name) { return layout.OffsetInUnit(name); };
  auto block = [&](const char* name) { return layout.OffsetInUnit(std::string("h.0.") + name); };
  return {{at("wte.weight"), at("wpe.weight"), at("ln_f.weight"), at("ln_f.bias")},
          {block("ln_1.weight"), block("ln_1.bias"), block("attn.c_attn.weight"),
           block("attn.c_attn.bias"), block("attn.c_proj.weight"), block("attn.c_proj.bias"),
           block("ln_2.weight"), block("ln_2.bias"), block("mlp.c_fc.weight"),
           block("mlp.c_fc.bias"), block("mlp.c_proj.weight"), block("mlp.c_proj.bias")}};
}

}  // namespace accel::model

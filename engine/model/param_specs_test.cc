#include "engine/model/param_specs.h"

#include "engine/model/gpt2_specs.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace accel::model {
namespace {

ModelLayout MakeLayout(int64_t L = 3, int64_t C = 16) {
  auto layout = ModelLayout::Create(Gpt2Config{"t", L, 4, C, 50, 24});
  EXPECT_TRUE(layout.ok());
  return std::move(*layout);
}

TEST(ParamSpecsTest, UnitsAreContiguousAndCoverEverything) {
  ModelLayout layout = MakeLayout();
  ASSERT_EQ(layout.num_units(), 4);
  int64_t next = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    EXPECT_EQ(layout.unit(u).offset, next) << "unit " << u;
    next += layout.unit(u).numel;
  }
  EXPECT_EQ(next, layout.num_params());
  EXPECT_EQ(layout.num_params(), layout.config().NumParams());
  // Every block unit has the same size: 12C² + 13C.
  for (int u = 1; u < layout.num_units(); ++u) EXPECT_EQ(layout.unit(u).numel, 12 * 256 + 13 * 16);
}

TEST(ParamSpecsTest, HuggingFaceNamesShapesAndDecayFlags) {
  ModelLayout layout = MakeLayout();
  const FlatLayout& flat = layout.flat();
  ASSERT_NE(flat.Find("h.2.attn.c_attn.weight"), nullptr);
  EXPECT_EQ(flat.Find("h.2.attn.c_attn.weight")->shape, (std::vector<int64_t>{16, 48}));
  EXPECT_EQ(flat.Find("h.0.mlp.c_proj.weight")->shape, (std::vector<int64_t>{64, 16}));
  EXPECT_EQ(flat.Find("wpe.weight")->shape, (std::vector<int64_t>{24, 16}));
  EXPECT_EQ(flat.Find("lm_head.weight"), nullptr);  // tied
  for (const ParamSpec& s : layout.specs()) EXPECT_EQ(s.weight_decay, s.shape.size() >= 2) << s.name;
}

TEST(ParamSpecsTest, BlockOffsetsPointAtTheNamedTensorsOfEveryBlock) {
  ModelLayout layout = MakeLayout();
  const Gpt2Offsets offsets = Gpt2OffsetsOf(layout);
  for (int l = 0; l < 3; ++l) {
    const int64_t base = layout.unit(l + 1).offset;
    const std::string p = "h." + std::to_string(l) + ".";
    EXPECT_EQ(base + offsets.block.qkv_w, layout.flat().Find(p + "attn.c_attn.weight")->offset);
    EXPECT_EQ(base + offsets.block.fcproj_b, layout.flat().Find(p + "mlp.c_proj.bias")->offset);
    EXPECT_EQ(base + offsets.block.ln2_w, layout.flat().Find(p + "ln_2.weight")->offset);
  }
  EXPECT_EQ(offsets.root.lnf_b, layout.flat().Find("ln_f.bias")->offset);
}

TEST(ParamSpecsTest, InitFollowsGpt2AndIsSeeded) {
  ModelLayout layout = MakeLayout(4, 64);
  std::vector<float> a(layout.num_params()), b(layout.num_params()), c(layout.num_params());
  InitParams(layout, 7, a.data());
  InitParams(layout, 7, b.data());
  InitParams(layout, 8, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  auto stddev = [&](const std::string& name) {
    const LayoutEntry* e = layout.flat().Find(name);
    double s = 0;
    for (int64_t i = 0; i < e->numel; ++i) s += double(a[e->offset + i]) * a[e->offset + i];
    return std::sqrt(s / e->numel);
  };
  EXPECT_NEAR(stddev("h.1.mlp.c_fc.weight"), 0.02, 0.002);
  EXPECT_NEAR(stddev("h.1.mlp.c_proj.weight"), 0.02 / std::sqrt(8.0), 0.0005);
  EXPECT_EQ(a[layout.flat().Find("h.3.ln_1.weight")->offset], 1.0f);
  EXPECT_EQ(a[layout.flat().Find("h.3.attn.c_attn.bias")->offset], 0.0f);
}

TEST(ParamSpecsTest, UnitByUnitInitGivesTheSameValues) {
  ModelLayout layout = MakeLayout(4, 64);
  std::vector<float> whole(layout.num_params()), units(layout.num_params(), -1.0f);
  InitParams(layout, 7, whole.data());
  for (int u = 0; u < layout.num_units(); ++u) {
    InitUnit(layout, 7, u, units.data() + layout.unit(u).offset);
  }
  EXPECT_EQ(units, whole);
}

}  // namespace
}  // namespace accel::model

// Adding an architecture is a new registry entry (engine/model/registry.h): this test registers
// a toy third family — "toymlp", token embeddings and residual linear layers, with its own
// config type, config.json reader and writer, parameter table, activation plan, Hugging Face
// names and CPU runner — and shows that nothing else needs to change: the registry reads its
// config.json, the layout counts its parameters, the memory plan plans it, the trainer builds
// its runner and trains steps through the same paths as GPT-2's, its weights are written and
// read back by Hugging Face name, and a cuda job is refused by its entry. Its own binary: a
// registered family stays registered for the process.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/model/architecture.h"
#include "engine/model/config_json.h"
#include "engine/model/registry.h"
#include "engine/config/planned_run.h"
#include "engine/plan/memory_plan.h"
#include "engine/train/repetitive_text_test_fixture.h"
#include "engine/train/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::train {
namespace {

using ::testing::HasSubstr;

// ---- The toy family: everything an entry needs, in one place. --------------------------------
//   x = embed[tok];  per layer l: x = x + x·W_lᵀ + b_l;  logits = x · embedᵀ (tied)
// Units: 0 = embed.weight (V, C); 1 + l = layers.l.weight (C, C), layers.l.bias (C).

struct ToyConfig {
  std::string name = "toy";
  int64_t n_layer = 2, width = 16, vocab_size = 256, max_positions = 64;

  absl::Status Validate() const {
    for (int64_t v : {n_layer, width, vocab_size, max_positions}) {
      if (v <= 0) return absl::InvalidArgumentError(absl::StrCat("toy ", name, ": sizes > 0"));
    }
    return absl::OkStatus();
  }
  int64_t NumParams() const { return vocab_size * width + n_layer * (width * width + width); }
  double TrainFlopsPerToken(int64_t) const { return 6.0 * static_cast<double>(NumParams()); }
  model::ModelShape Shape() const {
    return {.model_type = "toymlp",
            .block_class = "ToyLayer",
            .num_layers = n_layer,
            .hidden_size = width,
            .num_heads = 1,
            .num_kv_heads = 1,
            .head_dim = width,
            .intermediate_size = width,
            .vocab_size = vocab_size,
            .max_positions = max_positions,
            .tied_embeddings = true};
  }
  static const model::Architecture& Family();
};

std::vector<model::ParamSpec> ToySpecs(const ToyConfig& c) {
  std::vector<model::ParamSpec> specs = {
      {"embed.weight", {c.vocab_size, c.width}, 0, true, model::ParamInit::kNormal, 0.02}};
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const int unit = static_cast<int>(1 + l);
    specs.push_back({absl::StrCat("layers.", l, ".weight"),
                     {c.width, c.width},
                     unit,
                     true,
                     model::ParamInit::kNormal,
                     0.02});
    specs.push_back(
        {absl::StrCat("layers.", l, ".bias"), {c.width}, unit, false, model::ParamInit::kZeros, 0});
  }
  return specs;
}

absl::StatusOr<int64_t> ToyActivationBytes(const ToyConfig& c, int64_t B, int64_t T) {
  if (B < 1 || T < 1 || T > c.max_positions) {
    return absl::InvalidArgumentError(absl::StrCat("toy: bad (B, T) = (", B, ", ", T, ")"));
  }
  // Each layer's input and the output (L + 1 of (B, T, C)), and the logits (B, T, V).
  return 4 * ((c.n_layer + 1) * B * T * c.width + B * T * c.vocab_size);
}

// The CPU runner: plain loops, in ParamAccess's order (engine/model/param_access.h).
class ToyRunner final : public model::ModelRunner {
 public:
  ToyRunner(const model::ModelLayout* layout, int64_t B, int64_t T)
      : c_(*layout->config().As<ToyConfig>()),
        BT_(B * T),
        xs_((c_.n_layer + 1) * BT_ * c_.width),
        probs_(BT_ * c_.vocab_size) {}

  absl::StatusOr<float> Forward(model::ParamAccess& access, const int32_t* inputs,
                                const int32_t* targets) override {
    const int64_t C = c_.width, V = c_.vocab_size;
    ACCEL_ASSIGN_OR_RETURN(const float* embed, access.Params(0, model::Pass::kForward));
    for (int64_t i = 0; i < BT_; ++i) {
      for (int64_t k = 0; k < C; ++k) xs_[i * C + k] = embed[inputs[i] * C + k];
    }
    for (int64_t l = 0; l < c_.n_layer; ++l) {
      const int unit = static_cast<int>(1 + l);
      ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, model::Pass::kForward));
      const float *x = &xs_[l * BT_ * C], *W = p, *b = p + C * C;
      float* y = &xs_[(l + 1) * BT_ * C];
      for (int64_t i = 0; i < BT_; ++i) {
        for (int64_t o = 0; o < C; ++o) {
          float s = x[i * C + o] + b[o];
          for (int64_t k = 0; k < C; ++k) s += W[o * C + k] * x[i * C + k];
          y[i * C + o] = s;
        }
      }
      ACCEL_RETURN_IF_ERROR(access.Release(unit, model::Pass::kForward));
    }
    const float* x = &xs_[c_.n_layer * BT_ * C];
    double loss = 0;
    for (int64_t i = 0; i < BT_; ++i) {
      float* pr = &probs_[i * V];
      float max = -INFINITY;
      for (int64_t v = 0; v < V; ++v) {
        float s = 0;
        for (int64_t k = 0; k < C; ++k) s += x[i * C + k] * embed[v * C + k];
        pr[v] = s;
        max = std::max(max, s);
      }
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += (pr[v] = std::exp(pr[v] - max));
      for (int64_t v = 0; v < V; ++v) pr[v] = static_cast<float>(pr[v] / sum);
      if (targets != nullptr) loss -= std::log(pr[targets[i]]);
    }
    ACCEL_RETURN_IF_ERROR(access.Release(0, model::Pass::kForward));
    return static_cast<float>(loss / static_cast<double>(BT_));
  }

  absl::Status Backward(model::ParamAccess& access, const int32_t* inputs, const int32_t* targets,
                        float dloss) override {
    const int64_t C = c_.width, V = c_.vocab_size;
    ACCEL_ASSIGN_OR_RETURN(const float* embed, access.Params(0, model::Pass::kBackward));
    ACCEL_ASSIGN_OR_RETURN(float* gembed, access.Grads(0));
    const float* xL = &xs_[c_.n_layer * BT_ * C];
    std::vector<float> dx(BT_ * C, 0.0f), dprev(BT_ * C);
    for (int64_t i = 0; i < BT_; ++i) {
      for (int64_t v = 0; v < V; ++v) {
        const float d =
            (probs_[i * V + v] - (v == targets[i] ? 1.0f : 0.0f)) * dloss / static_cast<float>(BT_);
        for (int64_t k = 0; k < C; ++k) {
          dx[i * C + k] += d * embed[v * C + k];
          gembed[v * C + k] += d * xL[i * C + k];
        }
      }
    }
    for (int64_t l = c_.n_layer - 1; l >= 0; --l) {
      const int unit = static_cast<int>(1 + l);
      ACCEL_ASSIGN_OR_RETURN(const float* p, access.Params(unit, model::Pass::kBackward));
      ACCEL_ASSIGN_OR_RETURN(float* g, access.Grads(unit));
      const float *x = &xs_[l * BT_ * C], *W = p;
      float *gW = g, *gb = g + C * C;
      for (int64_t i = 0; i < BT_; ++i) {
        for (int64_t k = 0; k < C; ++k) dprev[i * C + k] = dx[i * C + k];
        for (int64_t o = 0; o < C; ++o) {
          const float dy = dx[i * C + o];
          gb[o] += dy;
          for (int64_t k = 0; k < C; ++k) {
            gW[o * C + k] += dy * x[i * C + k];
            dprev[i * C + k] += dy * W[o * C + k];
          }
        }
      }
      dx.swap(dprev);
      ACCEL_RETURN_IF_ERROR(access.Release(unit, model::Pass::kBackward));
      ACCEL_RETURN_IF_ERROR(access.GradsReady(unit));
    }
    for (int64_t i = 0; i < BT_; ++i) {
      for (int64_t k = 0; k < C; ++k) gembed[inputs[i] * C + k] += dx[i * C + k];
    }
    ACCEL_RETURN_IF_ERROR(access.Release(0, model::Pass::kBackward));
    return access.GradsReady(0);
  }

 private:
  const ToyConfig& c_;
  int64_t BT_;
  std::vector<float> xs_, probs_;
};

absl::StatusOr<model::ModelConfig> ToyFromJson(std::string_view text, std::string_view source) {
  ACCEL_ASSIGN_OR_RETURN(nlohmann::json j, model::ParseConfigJson(text, std::string(source)));
  ToyConfig c;
  c.name = std::string(source);
  for (auto [key, field] : {std::pair<const char*, int64_t*>{"n_layer", &c.n_layer},
                            {"width", &c.width},
                            {"vocab_size", &c.vocab_size},
                            {"max_positions", &c.max_positions}}) {
    if (!j.contains(key) || !j[key].is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(source), ": ", key, " must be an integer"));
    }
    *field = j[key].get<int64_t>();
  }
  ACCEL_RETURN_IF_ERROR(c.Validate());
  return c;
}

std::string ToyToJson(const model::ModelConfig& config) {
  const ToyConfig& c = *config.As<ToyConfig>();
  return nlohmann::ordered_json{{"model_type", "toymlp"},
                                {"n_layer", c.n_layer},
                                {"width", c.width},
                                {"vocab_size", c.vocab_size},
                                {"max_positions", c.max_positions}}
      .dump(2);
}

const model::Architecture& ToyConfig::Family() {
  static const model::Architecture* entry = [] {
    auto* a = new model::Architecture;
    a->name = "toymlp";
    a->model_types = {"toymlp", "toymlp-renamed"};  // an alias, as mistral is Llama's
    a->block_classes = {"ToyLayer"};
    a->positions_key = "max_positions";
    a->from_json = ToyFromJson;
    a->to_json = ToyToJson;
    a->preset_names = [] { return std::vector<std::string>{"toy-tiny"}; };
    a->preset = [](std::string_view) -> absl::StatusOr<model::ModelConfig> {
      ToyConfig c;
      c.name = "toy-tiny";
      return c;
    };
    a->param_specs = [](const model::ModelConfig& c) { return ToySpecs(*c.As<ToyConfig>()); };
    a->activation_bytes = [](const model::ModelConfig& c, int64_t B, int64_t T,
                             model::ActivationOptions) {
      return ToyActivationBytes(*c.As<ToyConfig>(), B, T);
    };
    a->bf16_only_ranges = [](const model::ModelLayout&, int) {
      return std::vector<std::pair<int64_t, int64_t>>{};  // it never multiplies in bf16
    };
    a->hf.is_buffer = [](std::string_view) { return false; };
    a->hf.embedding = "embed.weight";
    a->cpu_runner = [](const model::ModelLayout* layout, const model::CpuRunnerOptions& o)
        -> absl::StatusOr<std::unique_ptr<model::ModelRunner>> {
      if (o.activations.checkpoint_blocks) {
        return absl::UnimplementedError("toymlp: no activation checkpointing");
      }
      ACCEL_RETURN_IF_ERROR(
          ToyActivationBytes(*layout->config().As<ToyConfig>(), o.batch, o.seq).status());
      return std::make_unique<ToyRunner>(layout, o.batch, o.seq);
    };
    a->devices = {"cpu"};
    a->display = {.name = "Toy MLP", .mlp = "linear", .details = true};
    return a;
  }();
  return *entry;
}

// ---- The test: one entry, and the engine's own paths. --------------------------------------

class ToyArchitectureTest : public RepetitiveTextTest {
 protected:
  static void SetUpTestSuite() {
    static const absl::Status registered = model::RegisterArchitecture(&ToyConfig::Family());
    ASSERT_TRUE(registered.ok()) << registered;
  }
  // A config.json of the toy family beside the data.
  std::string WriteConfig(const std::string& model_type = "toymlp") {
    const std::string path = dir_ + "/config.json";
    EXPECT_TRUE(WriteFileAtomic(Env::Default(), path,
                                absl::StrCat(R"({"model_type": ")", model_type,
                                             R"(", "n_layer": 2, "width": 16, )",
                                             R"("vocab_size": 256, "max_positions": 64})"))
                    .ok());
    return path;
  }
  TrainOptions ToyOptions() {
    TrainOptions o = Options();
    o.model_config = WriteConfig();
    o.steps = 15;
    return o;
  }
};

TEST_F(ToyArchitectureTest, ItsConfigIsReadAndCountedThroughTheRegistry) {
  for (const char* type : {"toymlp", "toymlp-renamed"}) {
    auto config = model::LoadModelConfig(Env::Default(), WriteConfig(type));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(&config->architecture(), &ToyConfig::Family());
    EXPECT_EQ(config->model_type(), "toymlp");
    EXPECT_EQ(config->block_class(), "ToyLayer");
    auto layout = model::ModelLayout::Create(*config);
    ASSERT_TRUE(layout.ok()) << layout.status();
    EXPECT_EQ(layout->num_params(), config->NumParams());
    EXPECT_EQ(layout->num_params(), 256 * 16 + 2 * (16 * 16 + 16));
    EXPECT_EQ(layout->num_units(), 3);
    // Written and read back by the registry.
    auto back = model::ModelConfigFromJson(model::ModelConfigToJson(*config), "again.json");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->NumParams(), config->NumParams());
  }
  // Its presets and block class join the built-in ones; GPT-2's and Llama's are unchanged.
  auto preset = model::ModelPreset("toy-tiny");
  ASSERT_TRUE(preset.ok()) << preset.status();
  EXPECT_EQ(preset->architecture().name, "toymlp");
  EXPECT_EQ(model::ModelPreset("gpt2-tiny")->architecture().name, "gpt2");
  EXPECT_TRUE(model::IsBlockClass("ToyLayer"));
  EXPECT_EQ(model::FindArchitecture("toymlp-renamed"), &ToyConfig::Family());
}

TEST_F(ToyArchitectureTest, ItIsPlannedByTheMemoryPlan) {
  auto config = model::LoadModelConfig(Env::Default(), WriteConfig());
  ASSERT_TRUE(config.ok()) << config.status();
  TrainOptions o = ToyOptions();
  auto bytes = model::PlannedActivationBytes(*config, o.batch, o.seq, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, 4 * (3 * 4 * 32 * 16 + 4 * 32 * 256));
  auto memory = plan::PlanMemory(*config, config::PlannedRunOf(o), {});
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->num_params, config->NumParams());
  EXPECT_EQ(memory->Peak(MemoryPool::kDevice, MemoryCategory::kActivations), *bytes);
  // The entry's own refusal reaches the plan: a sequence above its positions.
  o.seq = 65;
  EXPECT_THAT(plan::PlanMemory(*config, config::PlannedRunOf(o), {}).status().message(),
              HasSubstr("toy: bad (B, T)"));
}

// Built by the trainer from its entry's CPU runner, sharded and stepped as any model; the
// weights go out and back in by Hugging Face name.
TEST_F(ToyArchitectureTest, ItTrainsThroughTheTrainer) {
  TrainOptions o = ToyOptions();
  auto trainer = Trainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  EXPECT_EQ(&(*trainer)->layout().config().architecture(), &ToyConfig::Family());
  std::vector<float> losses;
  ASSERT_TRUE((*trainer)
                  ->Train([&](const StepMetrics& m) {
                    losses.push_back(m.loss);
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_EQ(losses.size(), 15u);
  EXPECT_NEAR(losses.front(), std::log(256.0), 0.1);
  // It learns: every step lowers the loss (5.545 to 5.339 over 15 steps when written).
  for (size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]) << i;
  EXPECT_LT(losses.back(), losses.front() - 0.1) << absl::StrJoin(losses, ", ");

  const std::string weights = dir_ + "/out/model.safetensors";
  ASSERT_TRUE(Env::Default()->CreateDirs(dir_ + "/out").ok());
  ASSERT_TRUE((*trainer)->SaveWeights(weights).ok());
  auto trained = (*trainer)->GatherParams();
  ASSERT_TRUE(trained.ok()) << trained.status();
  TrainOptions again = o;
  again.init_weights = weights;
  auto loaded = Trainer::Create(again);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto params = (*loaded)->GatherParams();
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(*params, *trained);
}

TEST_F(ToyArchitectureTest, UnknownModelTypesAreRefusedListingEveryFamily) {
  TrainOptions o = ToyOptions();
  o.model_config = WriteConfig("toymlp2");
  auto trainer = Trainer::Create(o);
  ASSERT_FALSE(trainer.ok());
  EXPECT_EQ(trainer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(trainer.status().message(),
              HasSubstr("config.json: model_type: not supported (supported: gpt2, llama, "
                        "mistral, qwen2, qwen3, toymlp, toymlp-renamed)"));
  // A family's runner per device is its entry's: the toy has none on cuda.
  EXPECT_FALSE(ToyConfig::Family().TrainsOn("cuda"));
  EXPECT_THAT(model::FamiliesOn("cpu"), ::testing::Contains("Toy MLP"));
}

}  // namespace
}  // namespace accel::train

// Top level, precision, optimizer and scheduler sections of a DeepSpeed JSON.
#include "engine/config/deepspeed_json.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/config/batch_bounds.h"
#include "engine/config/values.h"

namespace accel::config {
namespace {

using nlohmann::json;

// Sections that only configure monitoring or logging: accepted, no effect.
constexpr std::string_view kInert[] = {
    "steps_per_print", "wall_clock_breakdown", "dump_state", "memory_breakdown",
    "flops_profiler", "tensorboard", "wandb", "csv_monitor", "comet", "comms_logger", "timers",
    "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer", "dataloader_drop_last",
    "checkpoint", "data_types", "prescale_gradients", "gradient_predivide_factor",
    "sparse_gradients", "disable_allgather", "seed"};
// Features this engine does not have: fine when absent or {"enabled": false}.
constexpr std::string_view kUnsupported[] = {
    "amp", "elasticity", "autotuning", "compression_training", "pipeline", "sparse_attention",
    "curriculum_learning", "data_efficiency", "nebula", "quantize_training", "eigenvalue",
    "progressive_layer_drop", "hybrid_engine", "tensor_parallel"};

std::vector<std::string_view> TopLevelKeys() {
  std::vector<std::string_view> keys = {
      "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
      "gradient_clipping", "communication_data_type", "fp16", "bf16", "bfloat16", "optimizer",
      "scheduler", "zero_optimization", "aio", "activation_checkpointing",
      "seq_parallel_communication_data_type", "sequence_parallel_size", "compile"};
  for (std::string_view k : kInert) keys.push_back(k);
  for (std::string_view k : kUnsupported) keys.push_back(k);
  return keys;
}

void ReadUnsupported(Reader& r) {
  for (std::string_view key : kUnsupported) {
    const KeyPath path = {std::string(key)};
    const json* v = r.Find(path);
    if (v == nullptr) continue;
    const bool off = v->is_object() && (v->empty() || (v->contains("enabled") &&
                                                       (*v)["enabled"].is_boolean() &&
                                                       !(*v)["enabled"].get<bool>()));
    if (!off) r.Error(path, "is not supported by this engine (remove it or set enabled: false)");
  }
  if (r.Find({"gradient_predivide_factor"}) != nullptr) {
    auto f = r.Number({"gradient_predivide_factor"});
    if (f && *f != 1.0) r.Warn({"gradient_predivide_factor"}, "has no effect in this engine");
  }
}

// Each key either holds here as it does in DeepSpeed or is named with what happens instead.
void ReadActivationCheckpointing(Reader& r, DsActivationCheckpointing* out) {
  const KeyPath base = {"activation_checkpointing"};
  if (r.Object(base) == nullptr) return;
  out->present = true;
  r.CheckKeys(base, {"partition_activations", "cpu_checkpointing",
                     "contiguous_memory_optimization", "number_checkpoints",
                     "synchronize_checkpoint_boundary", "profile"});
  auto key = [](const char* k) { return KeyPath{"activation_checkpointing", k}; };
  if (r.Bool(key("partition_activations")).value_or(false)) {
    r.Warn(key("partition_activations"),
           "splits checkpoints over a model-parallel group; this engine has none (each rank "
           "keeps only its own micro-batch's block inputs already)");
  }
  if (r.Bool(key("cpu_checkpointing")).value_or(false)) {
    r.Warn(key("cpu_checkpointing"),
           "block inputs stay in the memory the rank computes in (host memory on CPU ranks)");
  }
  // Block inputs are one contiguous buffer per block already.
  r.Bool(key("contiguous_memory_optimization"));
  if (r.Int(key("number_checkpoints"), 1).has_value()) {
    r.Warn(key("number_checkpoints"),
           "only sizes DeepSpeed's buffers; every transformer block is checkpointed here");
  }
  for (const char* k : {"synchronize_checkpoint_boundary", "profile"}) {
    if (r.Bool(key(k)).value_or(false)) r.Warn(key(k), "has no effect in this engine");
  }
}

// DeepSpeed settings for features this engine has no counterpart of, which change nothing
// about the result: accepted with a warning naming the key.
void ReadNoEffect(Reader& r) {
  // Ulysses sequence parallelism splits each sequence over ranks: a plan this engine does not
  // have, refused in one line (resolve.cc says the same of Accelerate's parallelism_config).
  const KeyPath sp = {"sequence_parallel_size"};
  if (auto size = r.Int(sp, 1); size && *size > 1) {
    r.Error(sp, absl::StrCat(*size, ": sequence parallelism is not supported by this engine"));
  }
  const KeyPath seq = {"seq_parallel_communication_data_type"};
  if (r.Has(seq) && r.Enum(seq, FloatTypeNames())) {
    r.Warn(seq, "does nothing here: this engine has no sequence parallelism; ignored");
  }
  // compile: torch.compile / DeepCompile (its keys change between DeepSpeed versions, so they
  // are not checked one by one).
  const KeyPath compile = {"compile"};
  const nlohmann::json* c = r.Object(compile);
  if (c == nullptr || c->empty()) return;
  std::vector<std::string> on;  // the switches of DeepCompile and of the older torch.compile form
  for (const char* key : {"deepcompile", "enabled"}) {
    if (c->contains(key) && (*c)[key].is_boolean() && (*c)[key].get<bool>()) {
      on.push_back(absl::StrCat(key, ": true"));
    }
  }
  r.Warn(compile, absl::StrCat("does nothing here: this engine does not compile the model",
                               on.empty() ? "" : absl::StrCat(" (", absl::StrJoin(on, ", "),
                                                              " is not applied)"),
                               "; ignored"));
}

void ReadFp16(Reader& r, DsFp16* out) {
  const KeyPath base = {"fp16"};
  if (r.Object(base) == nullptr) return;
  out->present = true;
  r.CheckKeys(base, {"enabled", "auto_cast", "loss_scale", "initial_scale_power",
                     "loss_scale_window", "hysteresis", "consecutive_hysteresis",
                     "min_loss_scale", "fp16_master_weights_and_grads", "type"});
  auto key = [](const char* k) { return KeyPath{"fp16", k}; };
  out->enabled = ReadAutoable<bool>(r.IsAuto(key("enabled")), r.Has(key("enabled")),
                                    [&] { return r.Bool(key("enabled")); });
  out->loss_scale = r.Number(key("loss_scale"), 0.0);
  out->initial_scale_power = r.Int(key("initial_scale_power"), 0, 63);
  out->loss_scale_window = r.Int(key("loss_scale_window"), 1);
  out->hysteresis = r.Int(key("hysteresis"), 1, 1 << 20);
  out->min_loss_scale = r.Number(key("min_loss_scale"), 0.0);
  r.Bool(key("auto_cast"));
  r.Bool(key("consecutive_hysteresis"));
  if (r.Bool(key("fp16_master_weights_and_grads")).value_or(false)) {
    r.Error(key("fp16_master_weights_and_grads"),
            "fp16 master weights are not supported by this engine (masters are fp32)");
  }
}

void ReadBf16(Reader& r, DsBf16* out) {
  KeyPath base = {"bf16"};
  if (r.Has({"bfloat16"})) {
    if (r.Has(base)) {
      r.Error({"bfloat16"}, "give either bf16 or its legacy name bfloat16, not both");
      return;
    }
    r.Warn({"bfloat16"}, "legacy section name; read as bf16");
    base = {"bfloat16"};
  }
  if (r.Object(base) == nullptr) return;
  out->present = true;
  // DeepSpeed's bf16 section reads only these; fp16's loss-scaling keys copied into it
  // (loss_scale, initial_scale_power, hysteresis, ...) do nothing there.
  r.CheckKeysLenient(base,
                     {"enabled", "immediate_grad_update", "check_grad_overflow",
                      "bf16_master_weights_and_grads", "bf16_optimizer_states"},
                     "DeepSpeed's bf16 section reads enabled and immediate_grad_update; bf16 "
                     "needs no loss scaling");
  KeyPath enabled = base;
  enabled.push_back("enabled");
  out->enabled = ReadAutoable<bool>(r.IsAuto(enabled), r.Has(enabled),
                                    [&] { return r.Bool(enabled); });
  for (const char* k : {"immediate_grad_update", "check_grad_overflow"}) {
    r.Bool({base[0], k});
  }
  for (const char* k : {"bf16_master_weights_and_grads", "bf16_optimizer_states"}) {
    if (r.Bool({base[0], k}).value_or(false)) {
      r.Error({base[0], k}, "is not supported by this engine (masters and states are fp32)");
    }
  }
}

void ReadOptimizer(Reader& r, DsOptimizer* out) {
  const KeyPath base = {"optimizer"};
  if (r.Object(base) == nullptr) return;
  out->present = true;
  r.CheckKeys(base, {"type", "params"});
  auto type = r.String({"optimizer", "type"});
  if (!type) {
    if (!r.Has({"optimizer", "type"})) r.Error(base, "missing \"type\"");
    return;
  }
  static const std::vector<std::string_view> kTypes = {"Adam", "AdamW", "SGD"};
  for (std::string_view t : kTypes) {
    if (EqualsIgnoreCase(t, *type)) out->type = std::string(t);
  }
  if (out->type.empty()) {
    r.Error({"optimizer", "type"},
            absl::StrCat(r.Show(*type), " is not supported by this engine (supported: ",
                         JoinNames(kTypes), ")", r.Hint(*type, kTypes)));
    return;
  }
  if (r.Object({"optimizer", "params"}) == nullptr) return;
  auto key = [](const char* k) { return KeyPath{"optimizer", "params", k}; };
  if (out->type == "SGD") {
    r.CheckKeys({"optimizer", "params"}, {"lr", "momentum", "weight_decay", "nesterov",
                                          "dampening"});
  } else {
    r.CheckKeys({"optimizer", "params"}, {"lr", "betas", "eps", "weight_decay", "torch_adam",
                                          "adam_w_mode", "bias_correction", "amsgrad", "fused"});
    out->adam_w_mode = r.Bool(key("adam_w_mode"));
    r.Bool(key("torch_adam"));
    if (r.Bool(key("amsgrad")).value_or(false)) {
      r.Error(key("amsgrad"), "AMSGrad is not supported by this engine");
    }
    out->bias_correction = r.Bool(key("bias_correction"));
    out->eps = ReadAutoable<double>(r.IsAuto(key("eps")), r.Has(key("eps")),
                                    [&] { return r.Number(key("eps"), 0.0, 1.0); });
    if (r.IsAuto(key("betas"))) {
      out->betas = Autoable<std::array<double, 2>>::Auto();
    } else if (const json* b = r.Find(key("betas")); b != nullptr) {
      double b0 = 0, b1 = 0;
      std::string error;
      if (!b->is_array() || b->size() != 2 || !ParseNumberValue((*b)[0], &b0, &error) ||
          !ParseNumberValue((*b)[1], &b1, &error) || b0 < 0 || b0 >= 1 || b1 < 0 || b1 >= 1) {
        r.Error(key("betas"), absl::StrCat(r.Show(*b), " is not a pair of numbers in [0, 1)"));
      } else {
        out->betas = Autoable<std::array<double, 2>>::Of({b0, b1});
      }
    }
  }
  out->lr = ReadAutoable<double>(r.IsAuto(key("lr")), r.Has(key("lr")),
                                 [&] { return r.Number(key("lr"), 0.0); });
  out->weight_decay =
      ReadAutoable<double>(r.IsAuto(key("weight_decay")), r.Has(key("weight_decay")),
                           [&] { return r.Number(key("weight_decay"), 0.0); });
}

void ReadScheduler(Reader& r, DsScheduler* out) {
  const KeyPath base = {"scheduler"};
  if (r.Object(base) == nullptr) return;
  out->present = true;
  r.CheckKeys(base, {"type", "params"});
  auto type = r.String({"scheduler", "type"});
  if (!type) {
    if (!r.Has({"scheduler", "type"})) r.Error(base, "missing \"type\"");
    return;
  }
  static const std::vector<std::string_view> kTypes = {"WarmupLR", "WarmupDecayLR",
                                                       "WarmupCosineLR"};
  for (std::string_view t : kTypes) {
    if (EqualsIgnoreCase(t, *type)) out->type = std::string(t);
  }
  if (out->type.empty()) {
    r.Error({"scheduler", "type"},
            absl::StrCat(r.Show(*type), " is not supported by this engine (supported: ",
                         JoinNames(kTypes), ")", r.Hint(*type, kTypes)));
    return;
  }
  if (r.Object({"scheduler", "params"}) == nullptr) return;
  auto key = [](const char* k) { return KeyPath{"scheduler", "params", k}; };
  if (out->type == "WarmupCosineLR") {
    r.CheckKeys({"scheduler", "params"}, {"total_num_steps", "warmup_num_steps",
                                          "warmup_min_ratio", "cos_min_ratio", "warmup_type"});
    if (auto v = r.Number(key("warmup_min_ratio"), 0.0, 1.0)) out->warmup_min_ratio = *v;
    if (auto v = r.Number(key("cos_min_ratio"), 0.0, 1.0)) out->cos_min_ratio = *v;
  } else {
    std::vector<std::string_view> known = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps",
                                           "warmup_type"};
    if (out->type == "WarmupDecayLR") known.push_back("total_num_steps");
    r.CheckKeys({"scheduler", "params"}, known);
    out->warmup_min_lr = ReadAutoable<double>(r.IsAuto(key("warmup_min_lr")),
                                              r.Has(key("warmup_min_lr")),
                                              [&] { return r.Number(key("warmup_min_lr"), 0.0); });
    out->warmup_max_lr = ReadAutoable<double>(r.IsAuto(key("warmup_max_lr")),
                                              r.Has(key("warmup_max_lr")),
                                              [&] { return r.Number(key("warmup_max_lr"), 0.0); });
  }
  if (auto wt = r.String(key("warmup_type"))) {
    if (*wt != "log" && *wt != "linear") {
      r.Error(key("warmup_type"), absl::StrCat(r.Show(*wt), " is not one of log, linear"));
    } else {
      out->warmup_type = *wt;
    }
  }
  out->warmup_num_steps = ReadAutoable<int64_t>(
      r.IsAuto(key("warmup_num_steps")), r.Has(key("warmup_num_steps")),
      [&] { return r.Int(key("warmup_num_steps"), 0); });
  out->total_num_steps = ReadAutoable<int64_t>(
      r.IsAuto(key("total_num_steps")), r.Has(key("total_num_steps")),
      [&] { return r.Int(key("total_num_steps"), 1); });
}

Autoable<int64_t> AutoInt(Reader& r, const char* key, int64_t max) {
  return ReadAutoable<int64_t>(r.IsAuto({key}), r.Has({key}),
                               [&] { return r.Int({key}, 1, max); });
}

}  // namespace

DeepSpeedJson ReadDeepSpeedJson(const Document& doc, Diagnostics* diag) {
  DeepSpeedJson out;
  out.source = doc.source;
  Reader r(doc, diag);
  if (!doc.root.is_object()) {
    diag->Error(doc.source, "", "expected a JSON object at the top level");
    return out;
  }
  diag->DuplicateKeys(doc);
  r.CheckKeysLenient({}, TopLevelKeys(), "DeepSpeed does not read it");
  out.train_batch_size = AutoInt(r, "train_batch_size", int64_t{1} << 40);
  out.train_micro_batch_size_per_gpu = AutoInt(r, "train_micro_batch_size_per_gpu", kMaxMicroBatch);
  out.gradient_accumulation_steps = AutoInt(r, "gradient_accumulation_steps", kMaxGradAccum);
  out.gradient_clipping = ReadAutoable<double>(
      r.IsAuto({"gradient_clipping"}), r.Has({"gradient_clipping"}),
      [&] { return r.Number({"gradient_clipping"}, 0.0); });
  out.communication_data_type = r.Enum({"communication_data_type"}, FloatTypeNames());
  ReadUnsupported(r);
  ReadNoEffect(r);
  ReadFp16(r, &out.fp16);
  ReadBf16(r, &out.bf16);
  ReadOptimizer(r, &out.optimizer);
  ReadScheduler(r, &out.scheduler);
  ReadActivationCheckpointing(r, &out.activation_checkpointing);
  ReadZeroSection(r, &out);
  if (r.Object({"aio"}) != nullptr) ReadAioSection(r, {"aio"}, &out.aio);
  return out;
}

}  // namespace accel::config

// Fuzz target: metadata.json of a sharded checkpoint step (StepMetadataFromJson).
// The file carries its own CRC-32C, so most mutations stop at the checksum; when the first input
// byte is odd the harness recomputes the checksum of the mutated JSON first (the checksum is
// over the compact dump without the "checksum" key, docs/checkpoint_format.md), so the field
// checks behind it are reached too.
// Properties: an error is DataLoss naming the file; an accepted step is consistent (one file per
// rank, ranges tiling [0, num_params), tensors inside it); StepMetadataToJson of it reads back
// as the same step; CheckLayoutMatches against a real layout never crashes.
#include <cstdio>
#include <string>

#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/crc32c.h"
#include "engine/model/gpt2_config.h"
#include "fuzz/fuzz_check.h"
#include "nlohmann/json.hpp"

namespace accel::fuzz {
namespace {

using checkpoint::StepMetadata;
using Json = nlohmann::ordered_json;

constexpr char kPath[] = "/ckpt/step_1/metadata.json";

std::string WithFixedChecksum(std::string_view text) {
  Json root = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) return std::string(text);
  root.erase("checksum");
  char hex[16];
  std::snprintf(hex, sizeof(hex), "%08x", checkpoint::crc32c::Value(root.dump()));
  root["checksum"] = std::string("crc32c:") + hex;
  return root.dump();
}

// The configs are stored as JSON objects when they are JSON, so compare them as JSON.
bool SameConfig(const std::string& a, const std::string& b) {
  if (a == b) return true;
  Json ja = Json::parse(a, nullptr, false), jb = Json::parse(b, nullptr, false);
  return !ja.is_discarded() && ja == jb;
}

void CheckSame(const StepMetadata& a, const StepMetadata& b) {
  FUZZ_CHECK(a.meta.step == b.meta.step && a.meta.data_position == b.meta.data_position &&
                 a.meta.optimizer_step == b.meta.optimizer_step &&
                 a.meta.world_size == b.meta.world_size && a.meta.strategy == b.meta.strategy &&
                 a.meta.kind == b.meta.kind,
             "scalar fields changed in the round trip");
  FUZZ_CHECK(SameConfig(a.meta.model_config_json, b.meta.model_config_json) &&
                 SameConfig(a.meta.train_config_json, b.meta.train_config_json) &&
                 SameConfig(a.meta.loss_scaler_json, b.meta.loss_scaler_json),
             "configs changed in the round trip: " + a.meta.model_config_json + " vs " +
                 b.meta.model_config_json);
  FUZZ_CHECK(a.meta.model_files.size() == b.meta.model_files.size(), "model_files count");
  for (size_t i = 0; i < a.meta.model_files.size(); ++i) {
    const auto& x = a.meta.model_files[i];
    const auto& y = b.meta.model_files[i];
    FUZZ_CHECK(x.file == y.file && x.dtype == y.dtype && x.bytes == y.bytes &&
                   x.crc32c == y.crc32c,
               "model file " + x.file + " changed in the round trip");
  }
  FUZZ_CHECK(a.meta.ranges_by_rank == b.meta.ranges_by_rank, "ranges changed");
  FUZZ_CHECK(a.num_params == b.num_params, "num_params changed");
  FUZZ_CHECK(a.tensors.size() == b.tensors.size() && a.units.size() == b.units.size() &&
                 a.files.size() == b.files.size(),
             "table sizes changed");
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& x = a.tensors[i];
    const auto& y = b.tensors[i];
    FUZZ_CHECK(x.name == y.name && x.shape == y.shape && x.offset == y.offset &&
                   x.numel == y.numel && x.unit == y.unit,
               "tensor " + x.name + " changed in the round trip");
  }
  for (size_t i = 0; i < a.units.size(); ++i) {
    FUZZ_CHECK(a.units[i].offset == b.units[i].offset && a.units[i].numel == b.units[i].numel,
               "unit changed in the round trip");
  }
  for (size_t i = 0; i < a.files.size(); ++i) {
    const auto& x = a.files[i];
    const auto& y = b.files[i];
    FUZZ_CHECK(x.rank == y.rank && x.file == y.file && x.ranges == y.ranges &&
                   x.bytes == y.bytes && x.crc32c == y.crc32c,
               "rank file " + x.file + " changed in the round trip");
  }
}

void CheckConsistent(const StepMetadata& m) {
  if (checkpoint::KindHasRankFiles(m.meta.kind)) {
    FUZZ_CHECK(m.meta.world_size >= 1 && m.files.size() == static_cast<size_t>(m.meta.world_size),
               "world_size disagrees with the rank entries");
    absl::Status tiles = checkpoint::CheckRangesTile(m.meta.ranges_by_rank, m.num_params,
                                                     absl::StatusCode::kDataLoss, kPath);
    FUZZ_CHECK(tiles.ok(), "accepted ranges do not tile: " + tiles.ToString());
  }
  for (const auto& t : m.tensors) {
    FUZZ_CHECK(t.offset >= 0 && t.numel >= 0 && t.numel <= m.num_params &&
                   t.offset <= m.num_params - t.numel,
               "accepted tensor " + t.name + " lies outside [0, num_params)");
  }
}

}  // namespace
}  // namespace accel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  if (size == 0) return 0;
  const bool fix = data[0] & 1;
  std::string text(AsText(data + 1, size - 1));
  if (fix) text = WithFixedChecksum(text);
  auto m = accel::checkpoint::StepMetadataFromJson(text, kPath);
  if (!m.ok()) {
    CheckError(m.status(), {absl::StatusCode::kDataLoss}, kPath);
    return 0;
  }
  CheckConsistent(*m);
  const std::string again_text = accel::checkpoint::StepMetadataToJson(*m);
  auto again = accel::checkpoint::StepMetadataFromJson(again_text, kPath);
  FUZZ_CHECK(again.ok(), "what StepMetadataToJson wrote does not read back: " +
                             again.status().ToString() + "\n" + again_text);
  CheckSame(*m, *again);
  static const auto layout = [] {
    auto config = accel::model::Gpt2Preset("gpt2-tiny");
    FUZZ_CHECK(config.ok(), "preset");
    auto l = accel::model::ModelLayout::Create(*config);
    FUZZ_CHECK(l.ok(), "layout");
    return *l;
  }();
  absl::Status s = accel::checkpoint::CheckLayoutMatches(*m, layout, kPath);
  if (!s.ok()) CheckError(s, {absl::StatusCode::kInvalidArgument}, kPath);
  return 0;
}

#include "engine/checkpoint/checkpoint_metadata.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/crc32c.h"
#include "engine/checkpoint/safetensors_internal.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

using Json = nlohmann::ordered_json;

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

// A config stored as a JSON object when it is one (readable in the file), else as a string.
Json ConfigValue(const std::string& text) {
  if (text.empty()) return Json::object();
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) return parsed;
  return text;
}

// Readable and diff-friendly: one key per line, one tensor / rank per line (the checksum is
// over the compact dump, so whitespace is free).
void AppendValue(const Json& v, const std::string& indent, int depth, std::string* out) {
  const bool expand_object = v.is_object() && depth < 2 && !v.empty();
  const bool expand_array = v.is_array() && !v.empty() && v.front().is_object();
  if (!expand_object && !expand_array) {
    *out += v.dump();
    return;
  }
  const std::string inner = indent + "  ";
  *out += expand_object ? "{\n" : "[\n";
  size_t i = 0;
  for (auto it = v.begin(); it != v.end(); ++it, ++i) {
    *out += inner;
    if (expand_object) {
      *out += Json(it.key()).dump() + ": ";
      AppendValue(it.value(), inner, depth + 1, out);
    } else {
      *out += it->dump();
    }
    *out += i + 1 < v.size() ? ",\n" : "\n";
  }
  *out += indent + (expand_object ? "}" : "]");
}

std::string ConfigText(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.empty()) return "";
  return v.dump();
}

// Typed field access on the parsed document; every failure is DataLoss naming file and field.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  absl::Status Missing(std::string_view field, std::string_view want) const {
    return absl::DataLossError(absl::StrCat(path_, ": field \"", std::string(field),
                                            "\" is missing or not ", std::string(want)));
  }
  absl::StatusOr<const Json*> Field(const Json& obj, std::string_view key,
                                    Json::value_t type) const {
    auto it = obj.find(std::string(key));
    const bool ok =
        it != obj.end() &&
        (it->type() == type || (type == Json::value_t::number_integer && it->is_number_unsigned()));
    if (!ok) return Missing(key, Json(type).type_name());
    return &*it;
  }
  absl::StatusOr<int64_t> Int(const Json& obj, std::string_view key) const {
    ACCEL_ASSIGN_OR_RETURN(const Json* v, Field(obj, key, Json::value_t::number_integer));
    return v->get<int64_t>();
  }
  absl::StatusOr<std::string> String(const Json& obj, std::string_view key) const {
    ACCEL_ASSIGN_OR_RETURN(const Json* v, Field(obj, key, Json::value_t::string));
    return v->get<std::string>();
  }
  absl::StatusOr<std::vector<int64_t>> Ints(const Json& v, std::string_view what) const {
    if (!v.is_array()) return Missing(what, "an array of integers");
    std::vector<int64_t> out;
    for (const Json& e : v) {
      if (!e.is_number_integer()) return Missing(what, "an array of integers");
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  absl::StatusOr<std::pair<int64_t, int64_t>> Pair(const Json& v, std::string_view what) const {
    ACCEL_ASSIGN_OR_RETURN(std::vector<int64_t> p, Ints(v, what));
    if (p.size() != 2) return Missing(what, "a [begin, end] pair");
    return std::make_pair(p[0], p[1]);
  }
  absl::Status Bad(std::string_view what) const {
    return absl::DataLossError(absl::StrCat(path_, ": ", std::string(what)));
  }

 private:
  const std::string& path_;
};

}  // namespace

bool IsKnownKind(std::string_view kind) {
  return kind == kKindSharded || kind == kKindFull || kind == kKind16Bit ||
         kind == kKindSharded16Bit || kind == kKindShardedFull;
}

bool KindHasRankFiles(std::string_view kind) {
  return kind == kKindSharded || kind == kKindSharded16Bit || kind == kKindShardedFull;
}

std::string RankFileName(int rank) { return absl::StrCat("rank_", rank, ".bin"); }

uint64_t StepMetadata::total_bytes() const {
  uint64_t total = 0;
  for (const RankFileRecord& f : files) total += f.bytes;
  return total;
}

void SetLayoutTable(const model::ModelLayout& layout, StepMetadata* out) {
  out->num_params = layout.num_params();
  out->tensors.clear();
  out->units.clear();
  for (size_t i = 0; i < layout.specs().size(); ++i) {
    const LayoutEntry& e = layout.flat().entries()[i];
    out->tensors.push_back({e.name, e.shape, e.offset, e.numel, layout.specs()[i].unit});
  }
  for (int u = 0; u < layout.num_units(); ++u) out->units.push_back(layout.unit(u));
}

std::string StepMetadataToJson(const StepMetadata& m) {
  Json root;
  root["format"] = kCheckpointFormatName;
  root["format_version"] = kCheckpointFormatVersion;
  root["step"] = m.meta.step;
  root["data_position"] = m.meta.data_position;
  root["optimizer_step"] = m.meta.optimizer_step;
  root["world_size"] = m.meta.world_size;
  root["strategy"] = m.meta.strategy;
  // Written only when they differ from the defaults, so a plain sharded step reads (and
  // checksums) exactly as before the other kinds existed.
  if (m.meta.kind != kKindSharded) root["kind"] = m.meta.kind;
  if (!m.meta.model_files.empty()) {
    root["model_files"] = Json::array();
    for (const ModelFileInfo& f : m.meta.model_files) {
      root["model_files"].push_back({{"file", f.file},
                                     {"dtype", std::string(SafetensorsDTypeName(f.dtype))},
                                     {"bytes", f.bytes},
                                     {"crc32c", Hex32(f.crc32c)}});
    }
  }
  if (!m.meta.owner.anonymous()) {
    root["owner"] = {{"job", m.meta.owner.job}, {"daemon", m.meta.owner.daemon}};
  }
  root["model_config"] = ConfigValue(m.meta.model_config_json);
  root["train_config"] = ConfigValue(m.meta.train_config_json);
  if (!m.meta.loss_scaler_json.empty()) root["loss_scaler"] = ConfigValue(m.meta.loss_scaler_json);
  if (m.meta.eval_loss.has_value()) root["eval_loss"] = *m.meta.eval_loss;
  Json layout;
  layout["dtype"] = "F32";
  layout["num_params"] = m.num_params;
  layout["units"] = Json::array();
  for (const model::UnitRange& u : m.units) layout["units"].push_back({u.offset, u.numel});
  layout["tensors"] = Json::array();
  for (const TensorRecord& t : m.tensors) {
    layout["tensors"].push_back({{"name", t.name},
                                 {"shape", t.shape},
                                 {"offset", t.offset},
                                 {"numel", t.numel},
                                 {"unit", t.unit}});
  }
  root["layout"] = std::move(layout);
  root["ranks"] = Json::array();
  for (const RankFileRecord& f : m.files) {
    Json ranges = Json::array();
    for (const auto& [b, e] : f.ranges) ranges.push_back({b, e});
    root["ranks"].push_back({{"rank", f.rank},
                             {"file", f.file},
                             {"ranges", std::move(ranges)},
                             {"bytes", f.bytes},
                             {"crc32c", Hex32(f.crc32c)}});
  }
  root["checksum"] = "crc32c:" + Hex32(crc32c::Value(root.dump()));
  std::string out;
  AppendValue(root, "", 0, &out);
  return out + "\n";
}

absl::StatusOr<StepMetadata> StepMetadataFromJson(std::string_view text, const std::string& path) {
  Reader r(path);
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return r.Bad(absl::StrCat("invalid JSON at offset ", e.byte, ": ", e.what()));
  } catch (const Json::exception& e) {
    // A number beyond double (1E400) is out_of_range, not a parse_error (found by fuzzing).
    return r.Bad(absl::StrCat("invalid JSON: ", e.what()));
  }
  if (!root.is_object()) return r.Bad("not a JSON object (at offset 0)");
  ACCEL_ASSIGN_OR_RETURN(std::string checksum, r.String(root, "checksum"));
  root.erase("checksum");
  const std::string expected = "crc32c:" + Hex32(crc32c::Value(root.dump()));
  if (checksum != expected) {
    return r.Bad(absl::StrCat("checksum mismatch: the file says ", checksum, ", its content has ",
                              expected));
  }
  ACCEL_ASSIGN_OR_RETURN(std::string format, r.String(root, "format"));
  if (format != kCheckpointFormatName) {
    return r.Bad(absl::StrCat("field \"format\" is \"", format, "\", expected \"",
                              kCheckpointFormatName, "\""));
  }
  ACCEL_ASSIGN_OR_RETURN(int64_t version, r.Int(root, "format_version"));
  if (version != kCheckpointFormatVersion) {
    return r.Bad(absl::StrCat("format version ", version, "; this build reads version ",
                              kCheckpointFormatVersion));
  }
  StepMetadata m;
  ACCEL_ASSIGN_OR_RETURN(m.meta.step, r.Int(root, "step"));
  ACCEL_ASSIGN_OR_RETURN(m.meta.data_position, r.Int(root, "data_position"));
  ACCEL_ASSIGN_OR_RETURN(m.meta.optimizer_step, r.Int(root, "optimizer_step"));
  ACCEL_ASSIGN_OR_RETURN(int64_t world, r.Int(root, "world_size"));
  ACCEL_ASSIGN_OR_RETURN(m.meta.strategy, r.String(root, "strategy"));
  if (root.contains("kind")) {
    ACCEL_ASSIGN_OR_RETURN(m.meta.kind, r.String(root, "kind"));
    if (!IsKnownKind(m.meta.kind)) return r.Bad(absl::StrCat("unknown kind \"", m.meta.kind, "\""));
  }
  if (root.contains("model_files")) {
    ACCEL_ASSIGN_OR_RETURN(const Json* files, r.Field(root, "model_files", Json::value_t::array));
    for (const Json& f : *files) {
      if (!f.is_object()) return r.Missing("model_files", "an array of objects");
      ModelFileInfo info;
      ACCEL_ASSIGN_OR_RETURN(info.file, r.String(f, "file"));
      if (info.file.empty() || info.file.find('/') != std::string::npos) {
        return r.Bad("unexpected model file name " + info.file);
      }
      ACCEL_ASSIGN_OR_RETURN(std::string dtype, r.String(f, "dtype"));
      absl::StatusOr<DType> parsed = ParseDType(dtype);
      if (!parsed.ok()) return r.Missing("model_files.dtype", "F32, BF16 or F16");
      info.dtype = *parsed;
      ACCEL_ASSIGN_OR_RETURN(int64_t bytes, r.Int(f, "bytes"));
      info.bytes = static_cast<uint64_t>(bytes);
      ACCEL_ASSIGN_OR_RETURN(std::string crc, r.String(f, "crc32c"));
      char* end = nullptr;
      info.crc32c = static_cast<uint32_t>(std::strtoul(crc.c_str(), &end, 16));
      if (crc.size() != 8 || end != crc.c_str() + 8) {
        return r.Missing("model_files.crc32c", "8 hex digits");
      }
      m.meta.model_files.push_back(std::move(info));
    }
  }
  if (root.contains("owner")) {  // absent: written anonymously (or before owners existed)
    ACCEL_ASSIGN_OR_RETURN(const Json* owner, r.Field(root, "owner", Json::value_t::object));
    ACCEL_ASSIGN_OR_RETURN(m.meta.owner.job, r.String(*owner, "job"));
    ACCEL_ASSIGN_OR_RETURN(m.meta.owner.daemon, r.String(*owner, "daemon"));
  }
  if (root.contains("eval_loss")) {  // absent: the step was saved without an evaluation
    if (!root["eval_loss"].is_number()) return r.Missing("eval_loss", "a number");
    m.meta.eval_loss = root["eval_loss"].get<double>();
  }
  if (!KindHasRankFiles(m.meta.kind) && m.meta.model_files.empty()) {
    return r.Bad(absl::StrCat("a \"", m.meta.kind, "\" step must list its model_files"));
  }
  if (!root.contains("model_config") || !root.contains("train_config")) {
    return r.Missing("model_config", "present");
  }
  m.meta.model_config_json = ConfigText(root["model_config"]);
  m.meta.train_config_json = ConfigText(root["train_config"]);
  if (root.contains("loss_scaler")) m.meta.loss_scaler_json = ConfigText(root["loss_scaler"]);

  ACCEL_ASSIGN_OR_RETURN(const Json* layout, r.Field(root, "layout", Json::value_t::object));
  ACCEL_ASSIGN_OR_RETURN(m.num_params, r.Int(*layout, "num_params"));
  ACCEL_ASSIGN_OR_RETURN(const Json* units, r.Field(*layout, "units", Json::value_t::array));
  for (const Json& u : *units) {
    ACCEL_ASSIGN_OR_RETURN(auto p, r.Pair(u, "layout.units"));
    m.units.push_back({p.first, p.second});
  }
  ACCEL_ASSIGN_OR_RETURN(const Json* tensors, r.Field(*layout, "tensors", Json::value_t::array));
  for (const Json& t : *tensors) {
    if (!t.is_object()) return r.Missing("layout.tensors", "an array of objects");
    TensorRecord rec;
    ACCEL_ASSIGN_OR_RETURN(rec.name, r.String(t, "name"));
    ACCEL_ASSIGN_OR_RETURN(const Json* shape, r.Field(t, "shape", Json::value_t::array));
    ACCEL_ASSIGN_OR_RETURN(rec.shape, r.Ints(*shape, "layout.tensors.shape"));
    ACCEL_ASSIGN_OR_RETURN(rec.offset, r.Int(t, "offset"));
    ACCEL_ASSIGN_OR_RETURN(rec.numel, r.Int(t, "numel"));
    ACCEL_ASSIGN_OR_RETURN(int64_t unit, r.Int(t, "unit"));
    rec.unit = static_cast<int>(unit);
    // Overflow-safe: a shape or offset near int64's limits is corruption, not arithmetic to
    // wrap (both overflowed here before fuzzing found them).
    const std::optional<int64_t> numel = internal::CheckedNumel(rec.shape);
    if (!numel || rec.numel != *numel || rec.offset < 0 || rec.numel > m.num_params ||
        rec.offset > m.num_params - rec.numel) {
      return r.Bad(absl::StrCat("tensor \"", rec.name, "\" has an inconsistent shape, offset ",
                                "or size for ", m.num_params, " parameters"));
    }
    m.tensors.push_back(std::move(rec));
  }
  ACCEL_ASSIGN_OR_RETURN(const Json* ranks, r.Field(root, "ranks", Json::value_t::array));
  if (!KindHasRankFiles(m.meta.kind)) {
    // The model file is the whole state; world_size records who saved it.
    if (world < 1 || !ranks->empty()) {
      return r.Bad(absl::StrCat("a \"", m.meta.kind, "\" step has no rank files, but world_size ",
                                world, " and ", ranks->size(), " rank entries"));
    }
    m.meta.world_size = static_cast<int>(world);
    return m;
  }
  if (world < 1 || static_cast<int64_t>(ranks->size()) != world) {
    return r.Bad(absl::StrCat("world_size ", world, " but ", ranks->size(), " rank entries"));
  }
  m.meta.world_size = static_cast<int>(world);
  for (const Json& f : *ranks) {
    if (!f.is_object()) return r.Missing("ranks", "an array of objects");
    RankFileRecord rec;
    ACCEL_ASSIGN_OR_RETURN(int64_t rank, r.Int(f, "rank"));
    rec.rank = static_cast<int>(rank);
    if (rank != static_cast<int64_t>(m.files.size())) {
      return r.Bad(absl::StrCat("rank entry ", m.files.size(), " says rank ", rank));
    }
    ACCEL_ASSIGN_OR_RETURN(rec.file, r.String(f, "file"));
    if (rec.file != RankFileName(rec.rank)) return r.Bad("unexpected file name " + rec.file);
    ACCEL_ASSIGN_OR_RETURN(const Json* ranges, r.Field(f, "ranges", Json::value_t::array));
    for (const Json& p : *ranges) {
      ACCEL_ASSIGN_OR_RETURN(auto range, r.Pair(p, "ranks.ranges"));
      rec.ranges.push_back(range);
    }
    ACCEL_ASSIGN_OR_RETURN(int64_t bytes, r.Int(f, "bytes"));
    rec.bytes = static_cast<uint64_t>(bytes);
    ACCEL_ASSIGN_OR_RETURN(std::string crc, r.String(f, "crc32c"));
    char* end = nullptr;
    rec.crc32c = static_cast<uint32_t>(std::strtoul(crc.c_str(), &end, 16));
    if (crc.size() != 8 || end != crc.c_str() + 8) return r.Missing("ranks.crc32c", "8 hex digits");
    m.meta.ranges_by_rank.push_back(rec.ranges);
    m.files.push_back(std::move(rec));
  }
  ACCEL_RETURN_IF_ERROR(
      CheckRangesTile(m.meta.ranges_by_rank, m.num_params, absl::StatusCode::kDataLoss, path));
  return m;
}

absl::Status CheckLayoutMatches(const StepMetadata& m, const model::ModelLayout& layout,
                                const std::string& path) {
  StepMetadata want;
  SetLayoutTable(layout, &want);
  auto differ = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(path,
                                                   ": the checkpoint's layout does not fit model ",
                                                   layout.config().name(), ": ", parts...));
  };
  if (m.num_params != want.num_params) {
    return differ(m.num_params, " parameters saved, the model has ", want.num_params);
  }
  if (m.tensors.size() != want.tensors.size()) {
    return differ(m.tensors.size(), " tensors saved, the model has ", want.tensors.size());
  }
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorRecord& a = m.tensors[i];
    const TensorRecord& b = want.tensors[i];
    if (a.name != b.name || a.shape != b.shape || a.offset != b.offset || a.unit != b.unit) {
      return differ("tensor ", i, " is \"", a.name, "\" ", ShapeToString(a.shape), " at ", a.offset,
                    " (unit ", a.unit, "), the model has \"", b.name, "\" ", ShapeToString(b.shape),
                    " at ", b.offset, " (unit ", b.unit, ")");
    }
  }
  for (size_t u = 0; u < std::min(m.units.size(), want.units.size()); ++u) {
    if (m.units[u].offset != want.units[u].offset || m.units[u].numel != want.units[u].numel) {
      return differ("unit ", u, " differs");
    }
  }
  if (m.units.size() != want.units.size()) {
    return differ(m.units.size(), " units saved, the model has ", want.units.size());
  }
  return absl::OkStatus();
}

absl::Status CheckRangesTile(
    const std::vector<std::vector<std::pair<int64_t, int64_t>>>& ranges_by_rank, int64_t num_params,
    absl::StatusCode code, std::string_view context) {
  std::vector<std::pair<int64_t, int64_t>> all;
  for (const auto& ranges : ranges_by_rank) {
    for (const auto& r : ranges) {
      if (r.first < r.second) all.push_back(r);
      if (r.first > r.second || r.first < 0) {
        return absl::Status(code, absl::StrCat(std::string(context), ": invalid range [", r.first,
                                               ", ", r.second, ")"));
      }
    }
  }
  std::sort(all.begin(), all.end());
  int64_t covered = 0;
  for (const auto& [b, e] : all) {
    if (b != covered) {
      return absl::Status(
          code, absl::StrCat(std::string(context), ": the ranks' ranges ",
                             b < covered ? "overlap" : "leave a gap", " at element ",
                             std::min(b, covered), " (every element must be saved once)"));
    }
    covered = e;
  }
  if (covered != num_params) {
    return absl::Status(code, absl::StrCat(std::string(context), ": the ranks' ranges end at ",
                                           covered, " of ", num_params, " parameters"));
  }
  return absl::OkStatus();
}

}  // namespace accel::checkpoint

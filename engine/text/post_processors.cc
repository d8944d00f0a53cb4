#include "engine/text/post_processors.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/string_map.h"

namespace accel::text {
namespace {

class ByteLevel : public PostProcessor {
 public:
  void Process(std::vector<int32_t>*, bool) const override {}
};

// The single-sequence template as a list of pieces: a run of special-token ids, or the
// sequence itself (an empty `ids` with is_sequence).
class Template : public PostProcessor {
 public:
  struct Piece {
    bool is_sequence = false;
    std::vector<int32_t> ids;
  };
  explicit Template(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {}
  void Process(std::vector<int32_t>* ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    std::vector<int32_t> out;
    out.reserve(ids->size() + 4);
    for (const Piece& piece : pieces_) {
      if (piece.is_sequence) {
        out.insert(out.end(), ids->begin(), ids->end());
      } else {
        out.insert(out.end(), piece.ids.begin(), piece.ids.end());
      }
    }
    *ids = std::move(out);
  }

 private:
  std::vector<Piece> pieces_;
};

class Sequence : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void Process(std::vector<int32_t>* ids, bool add_special_tokens) const override {
    for (const auto& part : parts_) part->Process(ids, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

absl::StatusOr<std::unique_ptr<PostProcessor>> TemplateFromJson(const Json& j, const JsonPath& at) {
  // special_tokens: {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
  StringMap<std::vector<int32_t>> specials;
  if (!IsNullOrAbsent(j, "special_tokens")) {
    ACCEL_ASSIGN_OR_RETURN(const Json* map, GetObject(j, at, "special_tokens"));
    for (const auto& [name, value] : map->items()) {
      const JsonPath entry = at.Key("special_tokens").Key(name);
      ACCEL_ASSIGN_OR_RETURN(const Json* ids, GetArray(value, entry, "ids"));
      std::vector<int32_t>& out = specials[name];
      for (const Json& id : *ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
          return JsonError(entry.Key("ids"), "must hold ids in [0, 2^31)");
        }
        out.push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
    }
  }
  ACCEL_ASSIGN_OR_RETURN(const Json* single, GetArray(j, at, "single"));
  std::vector<Template::Piece> pieces;
  for (size_t i = 0; i < single->size(); ++i) {
    const JsonPath item = at.Key("single").Index(i);
    const Json& piece = (*single)[i];
    if (piece.is_object() && piece.contains("Sequence")) {
      ACCEL_ASSIGN_OR_RETURN(std::string id,
                             GetString(piece["Sequence"], item.Key("Sequence"), "id"));
      if (id != "A")
        return Unsupported(item.Key("Sequence.id"),
                           absl::StrCat("\"", id, "\" in a single template"));
      pieces.push_back({true, {}});
    } else if (piece.is_object() && piece.contains("SpecialToken")) {
      ACCEL_ASSIGN_OR_RETURN(std::string id,
                             GetString(piece["SpecialToken"], item.Key("SpecialToken"), "id"));
      const auto it = specials.find(id);
      if (it == specials.end()) {
        return JsonError(item, absl::StrCat("names special token \"", id,
                                            "\", which special_tokens does not define"));
      }
      pieces.push_back({false, it->second});
    } else {
      return JsonError(item, "must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  return std::unique_ptr<PostProcessor>(new Template(std::move(pieces)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostProcessor>> PostProcessorFromJson(const Json& j,
                                                                     const JsonPath& at) {
  if (j.is_null()) return std::unique_ptr<PostProcessor>();
  ACCEL_ASSIGN_OR_RETURN(std::string type, GetString(j, at, "type"));
  if (type == "ByteLevel") return std::unique_ptr<PostProcessor>(new ByteLevel());
  if (type == "TemplateProcessing") return TemplateFromJson(j, at);
  if (type == "Sequence") {
    ACCEL_ASSIGN_OR_RETURN(auto parts,
                           GetParts<PostProcessor>(j, at, "processors", PostProcessorFromJson));
    return std::unique_ptr<PostProcessor>(new Sequence(std::move(parts)));
  }
  return Unsupported(at, absl::StrCat("type \"", type, "\""));
}

}  // namespace accel::text

#include "engine/text/tokenizer_config.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/json_fields.h"

namespace accel::text {
namespace {

absl::StatusOr<std::optional<std::string>> TokenName(const Json& j, const JsonPath& at,
                                                     std::string_view key) {
  if (IsNullOrAbsent(j, key)) return std::optional<std::string>();
  const Json& v = j.find(key).value();
  if (v.is_string()) return std::optional<std::string>(v.get<std::string>());
  if (v.is_object()) {
    ACCEL_ASSIGN_OR_RETURN(std::string content, GetString(v, at.Key(key), "content"));
    return std::optional<std::string>(std::move(content));
  }
  return JsonError(at.Key(key), "must be a string or an object with \"content\"");
}

absl::StatusOr<std::optional<bool>> OptionalBool(const Json& j, const JsonPath& at,
                                                 std::string_view key) {
  if (IsNullOrAbsent(j, key)) return std::optional<bool>();
  ACCEL_ASSIGN_OR_RETURN(bool v, GetBool(j, at, key, false));
  return std::optional<bool>(v);
}

}  // namespace

absl::StatusOr<TokenizerConfig> ParseTokenizerConfig(std::string_view text,
                                                     std::string_view origin) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  const JsonPath at{std::string(origin), ""};
  if (j.is_discarded()) return JsonError(at, "is not valid JSON");
  if (!j.is_object()) return JsonError(at, "must hold a JSON object");
  TokenizerConfig config;
  ACCEL_ASSIGN_OR_RETURN(config.bos_token, TokenName(j, at, "bos_token"));
  ACCEL_ASSIGN_OR_RETURN(config.eos_token, TokenName(j, at, "eos_token"));
  ACCEL_ASSIGN_OR_RETURN(config.pad_token, TokenName(j, at, "pad_token"));
  ACCEL_ASSIGN_OR_RETURN(config.unk_token, TokenName(j, at, "unk_token"));
  ACCEL_ASSIGN_OR_RETURN(config.add_bos_token, OptionalBool(j, at, "add_bos_token"));
  ACCEL_ASSIGN_OR_RETURN(config.add_eos_token, OptionalBool(j, at, "add_eos_token"));
  if (!IsNullOrAbsent(j, "chat_template")) {
    // A string, or a list of named templates ({name, template}) of which the "default" one is
    // the chat template (transformers picks it when no name is asked for).
    const Json& t = j["chat_template"];
    if (t.is_array()) {
      for (const Json& entry : t) {
        if (entry.is_object() && entry.value("name", "") == "default" &&
            entry.contains("template") && entry["template"].is_string()) {
          config.chat_template = entry["template"].get<std::string>();
        }
      }
      if (!config.chat_template.has_value()) {
        return JsonError(at.Key("chat_template"),
                         "is a list of templates without a \"default\" {name, template} entry");
      }
    } else if (!t.is_string()) {
      return JsonError(at.Key("chat_template"), "must be a string or a list of {name, template}");
    } else {
      config.chat_template = t.get<std::string>();
    }
  }
  if (!IsNullOrAbsent(j, "added_tokens_decoder")) {
    ACCEL_ASSIGN_OR_RETURN(const Json* map, GetObject(j, at, "added_tokens_decoder"));
    for (const auto& [key, value] : map->items()) {
      const JsonPath entry = at.Key("added_tokens_decoder").Key(key);
      int32_t id;
      if (!absl::SimpleAtoi(key, &id) || id < 0) return JsonError(entry, "key must be an id");
      // transformers' AddedToken: normalized defaults to "not special".
      ACCEL_ASSIGN_OR_RETURN(bool special, GetBool(value, entry, "special", false));
      ACCEL_ASSIGN_OR_RETURN(AddedToken token, AddedTokenFromJson(value, entry, !special));
      config.added_tokens.emplace_back(id, std::move(token));
    }
    std::sort(config.added_tokens.begin(), config.added_tokens.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  return config;
}

}  // namespace accel::text

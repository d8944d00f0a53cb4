#include "engine/model/config_json.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace accel::model {
namespace {

// A finite stand-in for a non-finite literal: parsed, then turned back into NaN. A real file
// holding exactly this value reads as non-finite too, which its readers refuse anyway.
constexpr char kStandIn[] = "-1.7976931348623157e+308";

// `text` with NaN, Infinity and -Infinity outside strings replaced by kStandIn.
std::string ReplaceNonFinite(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (std::string_view word : {"NaN", "Infinity", "-Infinity"}) {
      if (text.substr(i, word.size()) == word) {
        out += kStandIn;
        i += word.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

void RestoreNonFinite(nlohmann::json& j) {
  if (j.is_number_float() && j.get<double>() == std::numeric_limits<double>::lowest()) {
    j = std::numeric_limits<double>::quiet_NaN();
  } else if (j.is_structured()) {
    for (nlohmann::json& v : j) RestoreNonFinite(v);
  }
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseConfigJson(std::string_view text, const std::string& src) {
  const std::string cleaned = ReplaceNonFinite(text);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(cleaned);
  } catch (const nlohmann::json::parse_error& e) {
    // The position only: the parser's message quotes the text ("last read: '...'").
    int line = 1, column = 1;
    for (size_t i = 0; i + 1 < e.byte && i < cleaned.size(); ++i) {
      if (cleaned[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": not valid JSON (line ", line, ", column ", column, ")"));
  } catch (const nlohmann::json::exception&) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": not valid JSON"));
  }
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(src, ": not a JSON object"));
  RestoreNonFinite(j);
  return j;
}

std::string JsonKind(const nlohmann::json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "true/false";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return std::isfinite(v.get<double>()) ? "a number" : "a non-finite number";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  return "null";
}

}  // namespace accel::model

#include "engine/config/document.h"

#include <exception>
#include <regex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"

namespace accel::config {
namespace {

using nlohmann::json;

// Rejects flow nesting ("[[[[...", "{{{{") deeper than kMaxDepth before a recursive parser sees
// it. Block nesting is bounded by the converter below.
bool FlowNestingTooDeep(std::string_view text) {
  int depth = 0;
  for (char c : text) {
    if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

bool IsYamlInt(const std::string& s) {
  static const std::regex kInt("[-+]?(0|[1-9][0-9_]*)");
  return std::regex_match(s, kInt);
}

bool IsYamlFloat(const std::string& s) {
  static const std::regex kFloat("[-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+][0-9]+)?");
  return std::regex_match(s, kFloat);
}

// PyYAML's implicit resolvers for plain scalars (YAML 1.1), the subset configs use.
json PlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s.size() <= 5) {
    static const char* kTrue[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char* kFalse[] = {"false", "False", "FALSE", "no",  "No",
                                   "NO",    "off",   "Off",   "OFF"};
    for (const char* t : kTrue) {
      if (s == t) return true;
    }
    for (const char* f : kFalse) {
      if (s == f) return false;
    }
  }
  if (s.size() > 64) return s;
  if (IsYamlInt(s)) {
    std::string digits;
    for (char c : s) {
      if (c != '_' && c != '+') digits += c;
    }
    try {
      return std::stoll(digits);
    } catch (const std::exception&) {
      return s;  // out of range: keep the text, the reader reports it
    }
  }
  if (IsYamlFloat(s) && s != "." && s != "+." && s != "-.") {
    std::string digits;
    for (char c : s) {
      if (c != '_') digits += c;
    }
    try {
      return std::stod(digits);
    } catch (const std::exception&) {
      return s;
    }
  }
  return s;
}

class YamlConverter {
 public:
  YamlConverter(Document* doc) : doc_(doc) {}

  // Returns false (with error_ set) when a limit is hit. A duplicate key is recorded in
  // doc_->duplicate_keys and its value skipped.
  bool Convert(const YAML::Node& node, KeyPath* path, int depth, json* out) {
    if (++nodes_ > kMaxNodes) {
      error_ = absl::StrCat("more than ", kMaxNodes, " YAML nodes (alias expansion?)");
      return false;
    }
    if (depth > kMaxDepth) {
      error_ = absl::StrCat("nesting deeper than ", kMaxDepth, " levels");
      return false;
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        *out = nullptr;
        return true;
      case YAML::NodeType::Scalar: {
        const std::string& text = node.Scalar();
        const std::string& tag = node.Tag();
        if (tag == "?") {
          *out = PlainScalar(text);
        } else {
          *out = text;  // quoted ("!") or explicitly tagged: keep the text
        }
        return true;
      }
      case YAML::NodeType::Sequence: {
        *out = json::array();
        int index = 0;
        for (const YAML::Node& item : node) {
          path->push_back(std::to_string(index++));
          json value;
          bool ok = Convert(item, path, depth + 1, &value);
          path->pop_back();
          if (!ok) return false;
          out->push_back(std::move(value));
        }
        return true;
      }
      case YAML::NodeType::Map: {
        *out = json::object();
        for (const auto& kv : node) {
          std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("<complex key>");
          const YAML::Mark m = kv.first.Mark();
          path->push_back(key);
          const Mark mark{m.line + 1, m.column + 1};
          if (out->contains(key)) {
            doc_->duplicate_keys.push_back({*path, mark, doc_->MarkOf(*path).line});
            path->pop_back();
            continue;
          }
          doc_->marks.emplace(PathString(*path), mark);
          json value;
          bool ok = Convert(kv.second, path, depth + 1, &value);
          path->pop_back();
          if (!ok) return false;
          (*out)[key] = std::move(value);
        }
        return true;
      }
    }
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  Document* doc_;
  size_t nodes_ = 0;
  std::string error_;
};

// nlohmann::json keeps the last of a repeated key without a word (DeepSpeed's own loader
// refuses them). This walks text that parsed already, so it trusts the syntax, and records every
// key given twice in its object, with its position and the first one's line.
void FindJsonDuplicateKeys(std::string_view text, Document* doc) {
  struct Frame {
    bool object;
    bool expect_key;
    int64_t index = 0;                 // arrays: the current element
    std::string key;                   // objects: the current member
    std::map<std::string, int> lines;  // objects: each key's first line
  };
  std::vector<Frame> stack;
  KeyPath path;  // the path of the innermost open container
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\n') {
      ++line;
      line_start = i + 1;
    } else if (ch == '{' || ch == '[') {
      if (!stack.empty()) {
        path.push_back(stack.back().object ? stack.back().key
                                           : std::to_string(stack.back().index));
      }
      stack.push_back({ch == '{', ch == '{'});
    } else if (ch == '}' || ch == ']') {
      if (stack.empty()) return;  // cannot happen after a parse; never read out of bounds
      stack.pop_back();
      if (!stack.empty()) path.pop_back();
    } else if (ch == ',') {
      if (stack.empty()) return;
      if (stack.back().object) {
        stack.back().expect_key = true;
      } else {
        ++stack.back().index;
      }
    } else if (ch == '"') {
      const size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (i >= text.size()) return;
      if (stack.empty() || !stack.back().object || !stack.back().expect_key) continue;
      Frame& top = stack.back();
      top.expect_key = false;
      top.key = json::parse(text.substr(start, i - start + 1)).get<std::string>();
      const Mark mark{line, static_cast<int>(start - line_start) + 1};
      auto [it, first] = top.lines.emplace(top.key, line);
      if (first) continue;
      KeyPath key_path = path;
      key_path.push_back(top.key);
      doc->duplicate_keys.push_back({std::move(key_path), mark, it->second});
    }
  }
}

std::string Located(std::string_view source, Mark mark) {
  if (mark.line <= 0) return std::string(source);
  return absl::StrCat(std::string(source), ":", mark.line, ":", mark.column);
}

}  // namespace

Mark MarkAtOffset(std::string_view text, size_t offset) {
  Mark mark{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++mark.line;
      mark.column = 1;
    } else {
      ++mark.column;
    }
  }
  return mark;
}

absl::StatusOr<Document> ParseYamlDocument(std::string_view text, std::string_view source,
                                           Echo echo) {
  Document doc;
  doc.source = std::string(source);
  doc.echo = echo;
  const bool quote = echo == Echo::kContent;
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(doc.source, ": file is larger than ", kMaxConfigBytes, " bytes"));
  }
  if (FlowNestingTooDeep(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat(doc.source, ": YAML nesting deeper than ", kMaxDepth, " levels"));
  }
  try {
    YAML::Node node = YAML::Load(std::string(text));
    YamlConverter converter(&doc);
    KeyPath path;
    if (!converter.Convert(node, &path, 0, &doc.root)) {
      return absl::InvalidArgumentError(absl::StrCat(doc.source, ": ", converter.error()));
    }
  } catch (const YAML::Exception& e) {
    const Mark mark{e.mark.line + 1, e.mark.column + 1};
    // yaml-cpp's message can carry a character of the text ("unknown escape character: x").
    return absl::InvalidArgumentError(
        absl::StrCat(Located(doc.source, e.mark.is_null() ? Mark{} : mark), ": malformed YAML",
                     quote ? absl::StrCat(": ", e.msg) : ""));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(doc.source, ": malformed YAML", quote ? absl::StrCat(": ", e.what()) : ""));
  }
  return doc;
}

absl::StatusOr<Document> ParseJsonDocument(std::string_view text, std::string_view source,
                                           Echo echo) {
  Document doc;
  doc.source = std::string(source);
  doc.echo = echo;
  const bool quote = echo == Echo::kContent;
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(doc.source, ": file is larger than ", kMaxConfigBytes, " bytes"));
  }
  if (FlowNestingTooDeep(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat(doc.source, ": JSON nesting deeper than ", kMaxDepth, " levels"));
  }
  // nlohmann::json stops at a NUL byte as if the text ended there, so "1\0{..." parsed as 1
  // and the rest was ignored (and then overran the duplicate-key scan; found by fuzzing). JSON
  // has no NUL outside strings and none raw inside them.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        Located(doc.source, MarkAtOffset(text, nul)), ": malformed JSON: a NUL byte"));
  }
  try {
    doc.root = json::parse(text.begin(), text.end());
    FindJsonDuplicateKeys(text, &doc);
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based index of the byte where parsing stopped.
    const Mark mark = MarkAtOffset(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string reason = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    const size_t colon = reason.find(": ");
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    // The reason ends with the text the parser read ("last read: '...'").
    return absl::InvalidArgumentError(absl::StrCat(Located(doc.source, mark), ": malformed JSON",
                                                   quote ? absl::StrCat(": ", reason) : ""));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(doc.source, ": malformed JSON", quote ? absl::StrCat(": ", e.what()) : ""));
  }
  return doc;
}

Document EnvironmentDocument(const EnvMap& env) {
  Document doc;
  doc.source = "environment";
  doc.root = json::object();
  for (const auto& [name, value] : env) doc.root[name] = value;
  return doc;
}

}  // namespace accel::config

#include "engine/config/diagnostics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accel::config {

std::string PathString(const KeyPath& path) { return absl::StrJoin(path, "."); }

Mark Document::MarkOf(const KeyPath& path) const {
  KeyPath p = path;
  while (!p.empty()) {
    auto it = marks.find(PathString(p));
    if (it != marks.end()) return it->second;
    p.pop_back();
  }
  return Mark{};
}

std::string Diagnostics::Format(std::string_view source, Mark mark, std::string_view path,
                                std::string_view message) {
  std::string out(source);
  if (mark.line > 0) absl::StrAppend(&out, ":", mark.line, ":", mark.column);
  if (!path.empty()) absl::StrAppend(&out, ": ", std::string(path));
  absl::StrAppend(&out, ": ", std::string(message));
  return out;
}

void Diagnostics::Error(const Document& doc, const KeyPath& path, std::string_view message) {
  errors_.push_back(Format(doc.source, doc.MarkOf(path), PathString(path), message));
}

void Diagnostics::Error(const Document& doc, Mark mark, const KeyPath& path,
                        std::string_view message) {
  errors_.push_back(Format(doc.source, mark, PathString(path), message));
}

void Diagnostics::Warn(const Document& doc, const KeyPath& path, std::string_view message) {
  warnings_.push_back(Format(doc.source, doc.MarkOf(path), PathString(path), message));
}

void Diagnostics::Warn(const Document& doc, Mark mark, const KeyPath& path,
                       std::string_view message) {
  warnings_.push_back(Format(doc.source, mark, PathString(path), message));
}

void Diagnostics::Error(std::string_view source, std::string_view path,
                        std::string_view message) {
  errors_.push_back(Format(source, Mark{}, path, message));
}

void Diagnostics::Warn(std::string_view source, std::string_view path, std::string_view message) {
  warnings_.push_back(Format(source, Mark{}, path, message));
}

void Diagnostics::DuplicateKeys(const Document& doc) {
  for (const DuplicateKey& d : doc.duplicate_keys) {
    // The repeated key may be no key of ours: under its parent's path unless it may be quoted.
    const KeyPath path = doc.echo == Echo::kContent || d.path.empty()
                             ? d.path
                             : KeyPath(d.path.begin(), d.path.end() - 1);
    errors_.push_back(Format(doc.source, d.mark, PathString(path),
                             absl::StrCat("key given twice (also at line ", d.first_line, ")")));
  }
}

absl::Status Diagnostics::ToStatus() const {
  if (errors_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors_, "\n"));
}

std::string Quote(const nlohmann::json& value) {
  // dump() escapes control characters and, with replace, survives invalid UTF-8 in fuzzed input.
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace accel::config

#include "job/settings_doc.h"

#include "absl/strings/str_cat.h"
#include "job/settings.h"

namespace accel::job {
namespace {

// The default cell: the row's own words, else the default as written (text backquoted), else
// "—" (none).
std::string DefaultCell(const Setting& s) {
  if (!s.doc_default.empty()) return std::string(s.doc_default);
  if (s.default_value.empty()) return "—";
  const bool text = s.type == SettingType::kText || s.type == SettingType::kEnum ||
                    s.type == SettingType::kPath;
  return text ? absl::StrCat("`", s.default_value, "`") : std::string(s.default_value);
}

}  // namespace

std::string RenderKeysTable() {
  std::string out = "| key | default | meaning |\n|---|---|---|\n";
  for (const Setting& s : JobSettings()) {
    if (s.doc_folded) continue;
    const std::string key =
        s.doc_key.empty() ? absl::StrCat("`", s.key, "`") : std::string(s.doc_key);
    absl::StrAppend(&out, "| ", key, " | ", DefaultCell(s), " | ", s.help, " |\n");
  }
  return out;
}

absl::StatusOr<std::string> ReplaceKeysBlock(const std::string& doc) {
  const size_t begin = doc.find(kKeysBegin);
  const size_t end = doc.find(kKeysEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    return absl::InvalidArgumentError(
        absl::StrCat("docs/job.md: the markers ", kKeysBegin, " and ", kKeysEnd,
                     " must enclose the keys table"));
  }
  const size_t body = begin + std::string(kKeysBegin).size();
  return absl::StrCat(doc.substr(0, body), "\n", RenderKeysTable(), doc.substr(end));
}

}  // namespace accel::job

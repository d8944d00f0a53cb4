#include "engine/data/records.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/data/token_source.h"

namespace accel::data {
namespace {

constexpr std::pair<DatasetFormat, std::string_view> kFormatNames[] = {
    {DatasetFormat::kText, "text"},
    {DatasetFormat::kJsonl, "jsonl"},
    {DatasetFormat::kPromptCompletion, "prompt_completion"},
    {DatasetFormat::kMessages, "messages"},
    {DatasetFormat::kTokens, "tokens"},
};

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// Calls fn(line_number, line) for each line, without its '\n' (and without a final '\r').
template <typename Fn>
void ForEachLine(std::string_view contents, Fn fn) {
  int64_t number = 0;
  size_t start = 0;
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    fn(++number, start, line);
    start = end + 1;
  }
}

}  // namespace

absl::StatusOr<DatasetFormat> ParseDatasetFormat(std::string_view name) {
  for (const auto& [format, n] : kFormatNames) {
    if (n == name) return format;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("data.format: unknown format \"", std::string(name),
                   "\"; expected one of text, jsonl, prompt_completion, messages, tokens"));
}

std::string_view DatasetFormatName(DatasetFormat format) {
  for (const auto& [f, name] : kFormatNames) {
    if (f == format) return name;
  }
  return "unknown";
}

bool FormatHasMask(DatasetFormat format) {
  return format == DatasetFormat::kPromptCompletion || format == DatasetFormat::kMessages;
}

DatasetFormat DetectDatasetFormat(std::string_view path, std::string_view head) {
  if (head.size() >= 4) {
    int32_t magic;
    std::memcpy(&magic, head.data(), 4);
    if (magic == kTokenShardMagic || magic == kTokenShard32Magic) return DatasetFormat::kTokens;
  }
  const absl::string_view name(path.data(), path.size());
  if (absl::EndsWith(name, ".jsonl") || absl::EndsWith(name, ".json")) return DatasetFormat::kJsonl;
  return DatasetFormat::kText;
}

std::vector<Record> SplitRecords(DatasetFormat format, std::string_view contents) {
  std::vector<Record> records;
  if (format == DatasetFormat::kTokens) return records;
  if (format != DatasetFormat::kText) {
    ForEachLine(contents, [&](int64_t number, size_t, std::string_view line) {
      if (!IsBlank(line)) records.push_back({number, line});
    });
    return records;
  }
  // Text: a document runs from its first non-blank line to its last one.
  int64_t first_line = 0;
  size_t begin = 0, end = 0;
  auto flush = [&] {
    if (first_line != 0) records.push_back({first_line, contents.substr(begin, end - begin)});
    first_line = 0;
  };
  ForEachLine(contents, [&](int64_t number, size_t offset, std::string_view line) {
    if (IsBlank(line)) {
      flush();
      return;
    }
    if (first_line == 0) {
      first_line = number;
      begin = offset;
    }
    end = offset + line.size();
  });
  flush();
  return records;
}

}  // namespace accel::data

// Dataset formats and how a file splits into records (docs/data.md "Dataset formats").
//
//   text               plain UTF-8 files; a document is a run of lines between blank lines (a
//                      line holding only spaces, tabs or '\r' is blank), as Hugging Face
//                      datasets' text loader with sample_by="paragraph". The document's text is
//                      its lines with their inner newlines; the separating blank lines are dropped.
//   jsonl              one JSON object per line with a string field (`text_field`, default "text")
//   prompt_completion  TRL's {"prompt", "completion"}: two strings, or two message lists
//   messages           TRL's conversational {"messages": [{"role", "content"}, ...]}
//   tokens             llm.c token shards, used as they are (never split or prepared)
// In the JSON formats a blank line is skipped; every other line is one record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace accel::data {

enum class DatasetFormat { kText, kJsonl, kPromptCompletion, kMessages, kTokens };

// "text", "jsonl", "prompt_completion", "messages", "tokens"; InvalidArgument naming the value
// and the accepted names otherwise.
[[nodiscard]] absl::StatusOr<DatasetFormat> ParseDatasetFormat(std::string_view name);
std::string_view DatasetFormatName(DatasetFormat format);
// Formats whose documents carry a loss mask (prompt_completion, messages).
bool FormatHasMask(DatasetFormat format);

// The format of a file when none is given: tokens when `head` (its first bytes) starts with an
// llm.c shard magic, jsonl for a name ending in .jsonl or .json, text otherwise.
DatasetFormat DetectDatasetFormat(std::string_view path, std::string_view head);

// One record of a file: a view into the file's contents and its 1-based line number (the
// first line of a text document), for errors ("data.jsonl:12: ...").
struct Record {
  int64_t line = 0;
  std::string_view text;
};

// The records of `contents` in file order. kTokens has no records (an empty vector).
std::vector<Record> SplitRecords(DatasetFormat format, std::string_view contents);

}  // namespace accel::data

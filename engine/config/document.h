// Front doors for text: a YAML file, a JSON file or the environment, each turned into a
// Document (a JSON tree plus key positions) that the config readers walk.
//
// YAML scalars are typed the way PyYAML (YAML 1.1, what Accelerate loads with) types them: plain
// true/false/yes/no/on/off are booleans, plain digits integers, plain numbers with a dot floats,
// null/~/empty null, quoted text always a string.
//
// A key given twice in one mapping (YAML or JSON; PyYAML and Python's json keep the last one
// silently, DeepSpeed's loader refuses them) does not fail the parse: it is recorded in
// Document::duplicate_keys with its line, the tree keeps the first value, and the reader
// (ReadAccelerateConfig, ReadDeepSpeedJson) reports it as an error among the file's other
// problems, after what makes a file unusable altogether (a SageMaker config).
//
// Errors (all InvalidArgument, naming the source): malformed text with line and column, input
// over kMaxConfigBytes, nesting deeper than kMaxDepth, more than kMaxNodes nodes (alias bombs).
// yaml-cpp and nlohmann::json throw; nothing escapes these functions.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "engine/config/diagnostics.h"

namespace accel::config {

inline constexpr size_t kMaxConfigBytes = 4 << 20;
inline constexpr int kMaxDepth = 64;
inline constexpr size_t kMaxNodes = 100000;

using EnvMap = std::map<std::string, std::string>;

// Echo::kPositionsOnly (a file acceld read for a client; engine/base/echo.h): the parse errors
// carry the position but not the parser's message (which quotes the text), and the Document
// remembers it, so the readers quote no value and no unknown key of it either.
[[nodiscard]] absl::StatusOr<Document> ParseYamlDocument(std::string_view text,
                                                         std::string_view source,
                                                         Echo echo = Echo::kContent);
[[nodiscard]] absl::StatusOr<Document> ParseJsonDocument(std::string_view text,
                                                         std::string_view source,
                                                         Echo echo = Echo::kContent);
// Every variable as a string member of one object; source "environment".
Document EnvironmentDocument(const EnvMap& env);

// 1-based line and column of byte `offset` (0-based) in text.
Mark MarkAtOffset(std::string_view text, size_t offset);

}  // namespace accel::config

// Diagnostics: the errors and warnings found while reading and resolving config files, each
// naming its file (or "environment"), the key path, and the line and column where known:
//
//   configs/fsdp.yaml:7:3: fsdp_config.fsdp_sharding_strategy: "FULL_SHRAD" is not one of ...
//   ds.json: zero_optimization.offload_param.device: "gpu" is not one of none, cpu, nvme
//
// Reading goes on after an error, so one run reports every problem of a file. Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "engine/base/echo.h"
#include "nlohmann/json.hpp"

namespace accel::config {

using KeyPath = std::vector<std::string>;
std::string PathString(const KeyPath& path);  // "zero_optimization.offload_param.device"

struct Mark {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based
};

// A key given twice in one mapping: where the repeat stands, and the line of the first one.
struct DuplicateKey {
  KeyPath path;
  Mark mark;
  int first_line = 0;
};

// A parsed YAML or JSON file (or the environment) as one JSON tree. For YAML, `marks` records
// where each key sat in the text, keyed by PathString of the key. `duplicate_keys` lists every
// repeated key (the tree keeps the first value); the readers report them as errors.
struct Document {
  std::string source;
  // kPositionsOnly: a file acceld read for a client; Reader::Show and Reader::UnknownKey quote
  // nothing of it (engine/base/echo.h).
  Echo echo = Echo::kContent;
  nlohmann::json root;
  std::map<std::string, Mark> marks;
  std::vector<DuplicateKey> duplicate_keys;

  // Mark of the key at `path` or of its nearest ancestor that has one.
  Mark MarkOf(const KeyPath& path) const;
};

class Diagnostics {
 public:
  void Error(const Document& doc, const KeyPath& path, std::string_view message);
  void Warn(const Document& doc, const KeyPath& path, std::string_view message);
  // At an explicit position (an unknown key reported under its parent's path).
  void Error(const Document& doc, Mark mark, const KeyPath& path, std::string_view message);
  void Warn(const Document& doc, Mark mark, const KeyPath& path, std::string_view message);
  // For messages not tied to a document key (a path may still be given as text).
  void Error(std::string_view source, std::string_view path, std::string_view message);
  void Warn(std::string_view source, std::string_view path, std::string_view message);
  // Each of doc.duplicate_keys as an error at the repeat ("key given twice (also at line N)").
  void DuplicateKeys(const Document& doc);

  bool ok() const { return errors_.empty(); }
  const std::vector<std::string>& errors() const { return errors_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  // OK, or InvalidArgument whose message is every error, one per line.
  [[nodiscard]] absl::Status ToStatus() const;

 private:
  static std::string Format(std::string_view source, Mark mark, std::string_view path,
                            std::string_view message);
  std::vector<std::string> errors_;
  std::vector<std::string> warnings_;
};

// `value` as it appears in messages: strings quoted, everything else as compact JSON.
std::string Quote(const nlohmann::json& value);

}  // namespace accel::config

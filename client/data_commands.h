// `accelctl data ...`: the dataset tools of engine/data, offline (docs/data.md).
//
//   accelctl data encode --tokenizer PATH [--add-special-tokens]
//       stdin: UTF-8 text, one document per line; stdout: one JSON array of ids per line.
//   accelctl data decode --tokenizer PATH [--skip-special-tokens]
//       stdin: one JSON array of ids per line; stdout: the text, one JSON string per line.
//   accelctl data prepare SOURCE[:WEIGHT]... --tokenizer PATH [--format F] [--text-field K]
//       (default format: detected from the first file, records.h DetectDatasetFormat)
//       [--validation FILE]... [--validation-fraction X] [--skip-invalid] [--seed N]
//       [--cache-dir DIR] [--threads N] [--output text|json]
//       Tokenises the sources into the prepared-dataset cache (engine/data/prepare.h) with a
//       progress bar on stderr; prints where train.bin is, or the result as JSON.
// PATH is a tokenizer.json or the folder holding it. The cache directory defaults to
// $ACCEL_DATA_CACHE, else $XDG_CACHE_HOME/accel/datasets, else ~/.cache/accel/datasets.
// `render` (chat templates) is registered from client/data_render_command.h.
//
// Exit codes (as for the other commands): 0 success; 2 invalid input (flags, a bad record, a
// missing file, a tokenizer that does not load); 1 other failures (I/O).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "engine/base/env.h"

namespace accel::client {

struct DataCommand {
  std::string chosen;  // "encode", "decode" or "prepare"; empty until one is parsed
  CLI::App* data = nullptr;  // the `data` subcommand, for render's registration
  std::string tokenizer;
  bool add_special_tokens = false;
  bool skip_special_tokens = false;
  // prepare
  std::vector<std::string> sources;
  std::string format;  // empty: detected from the first source file (records.h)
  std::string text_field = "text";
  std::vector<std::string> validation;
  double validation_fraction = 0;
  bool skip_invalid = false;
  uint64_t seed = 0;
  std::string cache_dir;
  int threads = 0;  // 0: the machine's cores
  std::string output = "text";
};

// Registers `data` and its subcommands on `app`. `command` must outlive `app`.
void AddDataCommands(CLI::App& app, DataCommand* command);
// Runs the subcommand that app.parse() chose, reading stdin from `in`.
int RunParsedDataCommand(const DataCommand& command, std::istream& in, std::ostream& out,
                         std::ostream& err, Env* fs = Env::Default());

// The cache directory when --cache-dir is not given (see above); empty when HOME is unset too.
std::string DefaultDatasetCacheDir();

}  // namespace accel::client

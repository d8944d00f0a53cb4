// PrepareDataset: text / JSONL / prompt-completion / messages files → the prepared directory
// of docs/data.md "Prepared datasets", once per content, in a cache.
//
//   <cache_dir>/<key>/train.bin [train.mask] [validation.bin [validation.mask]] manifest.json
//
// key = SHA-256 over the format, text_field, skip_invalid, seed, the tokenizer's hash, each
// source's weight and the SHA-256 of each of its files' bytes (in order), and the validation
// split (fraction, or its files' hashes). Paths are not part of the key: the same bytes under
// another name are a cache hit. A directory is complete when it exists: it is built under a
// temporary name and renamed into place (every file fsynced, then the cache directory).
//
// Documents (record_encoder.h) are concatenated in order: the files of a source in sorted
// order, the records of a file in file order, the sources in the order given. A mixture (more
// than one source, or a weight other than 1) is realised deterministically: a source of weight
// w contributes each of its documents floor(w) times, plus once more when the document's
// hash-drawn number in [0, 1) is below w - floor(w); then the train documents are shuffled
// with a fixed-seed Fisher-Yates (SplitMix64 seeded by `seed`). validation_fraction takes each
// document of the sources into validation when its hash-drawn number (a different draw) is
// below the fraction; validation files instead are their own set, never weighted.
// Tokenisation runs on `threads` threads; the output is the same bytes for any thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/data/chat_renderer.h"
#include "engine/data/records.h"

namespace accel::data {

struct DataSource {
  // A file, or a glob whose wildcards (* ? [...]) are in the file name only.
  std::string path;
  double weight = 1.0;  // > 0
};

struct PrepareOptions {
  std::vector<DataSource> sources;
  std::string tokenizer;  // tokenizer.json or its folder
  DatasetFormat format = DatasetFormat::kJsonl;
  std::string text_field = "text";
  std::vector<std::string> validation_files;  // files or globs, same format
  double validation_fraction = 0;             // in [0, 1); exclusive with validation_files
  bool skip_invalid = false;
  uint64_t seed = 0;
  std::string cache_dir;  // required
  int threads = 1;        // >= 1
  // For messages / conversational prompt_completion; when empty, LoadChatRenderer() on the
  // tokenizer's tokenizer_config.json is used.
  ChatRenderer chat;
};

struct PrepareProgress {
  int64_t bytes_done = 0;
  int64_t bytes_total = 0;
  int64_t documents = 0;
};
using ProgressFn = std::function<void(const PrepareProgress&)>;

struct PrepareResult {
  std::string dir;              // <cache_dir>/<key>
  std::string train_path;       // <dir>/train.bin
  std::string validation_path;  // <dir>/validation.bin, or empty
  bool cache_hit = false;
  std::string key;
  int64_t train_documents = 0, train_tokens = 0;
  int64_t validation_documents = 0, validation_tokens = 0;
  int64_t skipped_records = 0;
  int32_t vocab_size = 0;  // the tokenizer's
};

// Where PrepareDataset puts (or put) a dataset, without encoding anything: the sources are read
// and hashed for the key. acceld's lowering computes it at submit so that the typed plan names
// the train.bin the ranks open (they prepare it first when it is not there: docs/data.md).
struct PreparedLocation {
  std::string key;
  std::string dir;              // <cache_dir>/<key>
  std::string train_path;       // <dir>/train.bin
  std::string validation_path;  // <dir>/validation.bin when a validation split is asked for
  bool ready = false;           // the directory is complete (its manifest.json exists)
};
// Errors as PrepareDataset's for options, sources and the tokenizer.
[[nodiscard]] absl::StatusOr<PreparedLocation> LocatePrepared(Env* env,
                                                              const PrepareOptions& options);

// Errors: InvalidArgument for bad options and bad records ("file:line: reason", the first in
// document order) and for an empty dataset; NotFound for a source or tokenizer that is not
// there. `progress` is called from the calling thread, about every 100 ms and at the end.
[[nodiscard]] absl::StatusOr<PrepareResult> PrepareDataset(Env* env, const PrepareOptions& options,
                                                           const ProgressFn& progress = {});

// Where prepared datasets go when no cache directory is given: $ACCEL_DATA_CACHE, else
// $XDG_CACHE_HOME/accel/datasets, else ~/.cache/accel/datasets ("" when HOME is unset too).
std::string DefaultCacheDir();

// The files a source names, sorted; NotFound when a glob matches nothing.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ExpandSource(Env* env,
                                                                    const std::string& pattern);

}  // namespace accel::data

// The dataset's tokenizer: `data.tokenizer` names a tokenizer.json or the folder holding it
// (tokenizer.json, or GPT-2's vocab.json + merges.txt), with tokenizer_config.json beside it
// when present (BOS/EOS names, the chat template). Its hash is the dataset cache's key part and
// the manifest's provenance.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/text/tokenizer.h"

namespace accel::data {

struct TokenizerFiles {
  std::unique_ptr<text::Tokenizer> tokenizer;
  std::string dir;          // the folder of the files
  std::string config_path;  // <dir>/tokenizer_config.json (it may not exist)
  // SHA-256 over the name and bytes of each file read, in a fixed order.
  std::string sha256;
};

// NotFound names the path when nothing is there; load errors name the file and key.
[[nodiscard]] absl::StatusOr<TokenizerFiles> LoadTokenizerFiles(Env* env, const std::string& path);

}  // namespace accel::data

#include "engine/data/tokenizer_files.h"

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/data/sha256.h"
#include "engine/text/tokenizer_config.h"

namespace accel::data {

absl::StatusOr<TokenizerFiles> LoadTokenizerFiles(Env* env, const std::string& path) {
  TokenizerFiles files;
  // A file is a tokenizer.json; anything else must be a folder holding one (or vocab + merges).
  const bool is_file = env->GetFileSize(path).ok();
  files.dir = is_file ? DirName(path) : path;
  files.config_path = JoinPath(files.dir, "tokenizer_config.json");
  if (!is_file && !env->FileExists(path)) {
    return absl::NotFoundError(absl::StrCat("data.tokenizer: ", path, " does not exist"));
  }
  Sha256 hash;
  auto hash_file = [&](const std::string& name, const std::string& bytes) {
    hash.Update(absl::StrCat(name, "\n", bytes.size(), "\n"));
    hash.Update(bytes);
  };
  if (is_file) {
    ACCEL_ASSIGN_OR_RETURN(std::string json, ReadFileToString(env, path));
    std::optional<text::TokenizerConfig> config;
    if (env->FileExists(files.config_path)) {
      ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, files.config_path));
      ACCEL_ASSIGN_OR_RETURN(config, text::ParseTokenizerConfig(text, files.config_path));
      hash_file("tokenizer_config.json", text);
    }
    hash_file("tokenizer.json", json);
    ACCEL_ASSIGN_OR_RETURN(files.tokenizer,
                           text::Tokenizer::FromJson(json, config ? &*config : nullptr, path));
  } else {
    ACCEL_ASSIGN_OR_RETURN(files.tokenizer, text::Tokenizer::Load(env, path));
    for (const char* name : {"tokenizer_config.json", "tokenizer.json", "vocab.json", "merges.txt"}) {
      const std::string file = JoinPath(path, name);
      if (!env->FileExists(file)) continue;
      ACCEL_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(env, file));
      hash_file(name, bytes);
    }
  }
  files.sha256 = hash.HexDigest();
  return files;
}

}  // namespace accel::data

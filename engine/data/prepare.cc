#include "engine/data/prepare.h"

#include <fnmatch.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/data/mixture.h"
#include "engine/data/parallel_encode.h"
#include "engine/data/record_encoder.h"
#include "engine/data/sha256.h"
#include "engine/data/shard_writer.h"
#include "engine/data/tokenizer_files.h"

namespace accel::data {
namespace {

using Json = nlohmann::json;

constexpr int kManifestVersion = 1;

absl::Status CheckOptions(const PrepareOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (o.sources.empty()) return bad("data.sources: no source files given");
  for (const DataSource& s : o.sources) {
    if (!(s.weight > 0) || !std::isfinite(s.weight)) {
      return bad("data.sources: weight ", s.weight, " of ", s.path, " must be a number > 0");
    }
  }
  if (o.format == DatasetFormat::kTokens) {
    return bad("data.format tokens: token shards are used as they are; there is nothing to "
               "prepare");
  }
  if (!(o.validation_fraction >= 0 && o.validation_fraction < 1)) {
    return bad("data.validation: fraction ", o.validation_fraction, " must be in [0, 1)");
  }
  if (o.validation_fraction > 0 && !o.validation_files.empty()) {
    return bad("data.validation: give files or a fraction, not both");
  }
  if (o.cache_dir.empty()) return bad("data.cache_dir: no cache directory given");
  if (o.threads < 1) return bad("threads: ", o.threads, " must be >= 1");
  return absl::OkStatus();
}

absl::StatusOr<SourceFile> ReadSourceFile(Env* env, const std::string& path, DatasetFormat format) {
  SourceFile f;
  f.path = path;
  ACCEL_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(env, path));
  f.contents = std::make_unique<const std::string>(std::move(contents));
  f.records = SplitRecords(format, *f.contents);
  return f;
}

Json CountsJson(const std::vector<int32_t>& ids, const std::vector<uint8_t>& mask,
                int64_t documents) {
  int64_t counted = 0;
  for (uint8_t m : mask) counted += m;
  Json j = {{"documents", documents}, {"tokens", static_cast<int64_t>(ids.size())}};
  if (!mask.empty()) j["loss_tokens"] = counted;
  return j;
}

absl::StatusOr<PrepareResult> ResultFromManifest(Env* env, const std::string& dir) {
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, JoinPath(dir, "manifest.json")));
  const Json m = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object() || !m.contains("train")) {
    return absl::DataLossError(absl::StrCat(dir, "/manifest.json: not a dataset manifest; delete "
                                            "the directory to prepare it again"));
  }
  PrepareResult r;
  r.dir = dir;
  r.train_path = JoinPath(dir, "train.bin");
  r.key = m.value("key", "");
  r.train_documents = m["train"].value("documents", int64_t{0});
  r.train_tokens = m["train"].value("tokens", int64_t{0});
  if (m.contains("validation")) {
    r.validation_path = JoinPath(dir, "validation.bin");
    r.validation_documents = m["validation"].value("documents", int64_t{0});
    r.validation_tokens = m["validation"].value("tokens", int64_t{0});
  }
  r.skipped_records = m.value("skipped_records", int64_t{0});
  r.vocab_size = m["tokenizer"].value("vocab_size", 0);
  return r;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandSource(Env* env, const std::string& pattern) {
  if (pattern.find_first_of("*?[") == std::string::npos) {
    if (!env->FileExists(pattern)) {
      return absl::NotFoundError(absl::StrCat("data source ", pattern, " does not exist"));
    }
    return std::vector<std::string>{pattern};
  }
  const std::string dir = DirName(pattern);
  if (dir.find_first_of("*?[") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data source ", pattern, ": wildcards are allowed in the file name only, not in folders"));
  }
  const std::string name = pattern.substr(pattern.rfind('/') == std::string::npos
                                              ? 0
                                              : pattern.rfind('/') + 1);
  ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> entries, env->ListDir(dir));
  std::vector<std::string> files;
  for (const std::string& e : entries) {
    if (fnmatch(name.c_str(), e.c_str(), FNM_PERIOD) == 0) {
      files.push_back(pattern.find('/') == std::string::npos ? e : JoinPath(dir, e));
    }
  }
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat("data source ", pattern, ": no file matches"));
  }
  return files;  // ListDir is sorted
}

namespace {

// The sources read and hashed: what the key is made of, and what preparation encodes.
struct ReadSources {
  std::vector<SourceFile> files;
  std::vector<MixtureFile> layout;
  Json manifest_sources = Json::array();
  Json manifest_validation_files = Json::array();
  std::string key;
};

absl::StatusOr<ReadSources> ReadAndKey(Env* env, const PrepareOptions& options,
                                       const std::string& tokenizer_sha256) {
  ReadSources out;
  // Every file: train sources first (source by source), then validation files.
  Json key_sources = Json::array();
  for (size_t s = 0; s < options.sources.size(); ++s) {
    ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> paths, ExpandSource(env, options.sources[s].path));
    Json hashes = Json::array(), listed = Json::array();
    for (size_t i = 0; i < paths.size(); ++i) {
      ACCEL_ASSIGN_OR_RETURN(SourceFile f, ReadSourceFile(env, paths[i], options.format));
      const std::string sha = Sha256Hex(*f.contents);
      hashes.push_back(sha);
      listed.push_back({{"path", f.path}, {"sha256", sha}, {"bytes", f.contents->size()}});
      out.layout.push_back({static_cast<int>(s), static_cast<int>(i), false});
      out.files.push_back(std::move(f));
    }
    key_sources.push_back({{"weight", options.sources[s].weight}, {"files", hashes}});
    out.manifest_sources.push_back(
        {{"path", options.sources[s].path}, {"weight", options.sources[s].weight}, {"files", listed}});
  }
  Json key_validation = {{"fraction", options.validation_fraction}, {"files", Json::array()}};
  for (const std::string& pattern : options.validation_files) {
    ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> paths, ExpandSource(env, pattern));
    for (size_t i = 0; i < paths.size(); ++i) {
      ACCEL_ASSIGN_OR_RETURN(SourceFile f, ReadSourceFile(env, paths[i], options.format));
      const std::string sha = Sha256Hex(*f.contents);
      key_validation["files"].push_back(sha);
      out.manifest_validation_files.push_back({{"path", f.path}, {"sha256", sha}});
      out.layout.push_back({-1, static_cast<int>(i), true});
      out.files.push_back(std::move(f));
    }
  }
  const Json key_material = {{"version", kManifestVersion},
                             {"format", DatasetFormatName(options.format)},
                             {"text_field", options.text_field},
                             {"skip_invalid", options.skip_invalid},
                             {"seed", options.seed},
                             {"tokenizer", tokenizer_sha256},
                             {"sources", key_sources},
                             {"validation", key_validation}};
  out.key = Sha256Hex(key_material.dump());
  return out;
}

}  // namespace

std::string DefaultCacheDir() {
  if (const char* dir = std::getenv("ACCEL_DATA_CACHE"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return JoinPath(JoinPath(xdg, "accel"), "datasets");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return JoinPath(JoinPath(home, ".cache/accel"), "datasets");
  }
  return "";
}

absl::StatusOr<PreparedLocation> LocatePrepared(Env* env, const PrepareOptions& options) {
  ACCEL_RETURN_IF_ERROR(CheckOptions(options));
  ACCEL_ASSIGN_OR_RETURN(TokenizerFiles tok, LoadTokenizerFiles(env, options.tokenizer));
  ACCEL_ASSIGN_OR_RETURN(ReadSources read, ReadAndKey(env, options, tok.sha256));
  PreparedLocation where;
  where.key = read.key;
  where.dir = JoinPath(options.cache_dir, read.key);
  where.train_path = JoinPath(where.dir, "train.bin");
  if (options.validation_fraction > 0 || !options.validation_files.empty()) {
    where.validation_path = JoinPath(where.dir, "validation.bin");
  }
  where.ready = env->FileExists(JoinPath(where.dir, "manifest.json"));
  return where;
}

absl::StatusOr<PrepareResult> PrepareDataset(Env* env, const PrepareOptions& options,
                                             const ProgressFn& progress) {
  ACCEL_RETURN_IF_ERROR(CheckOptions(options));
  ACCEL_ASSIGN_OR_RETURN(TokenizerFiles tok, LoadTokenizerFiles(env, options.tokenizer));
  ACCEL_ASSIGN_OR_RETURN(ReadSources read, ReadAndKey(env, options, tok.sha256));
  std::vector<SourceFile>& files = read.files;
  const std::vector<MixtureFile>& layout = read.layout;
  const Json& manifest_sources = read.manifest_sources;
  const Json& manifest_validation_files = read.manifest_validation_files;
  PrepareResult result;
  result.key = read.key;
  result.dir = JoinPath(options.cache_dir, result.key);
  if (env->FileExists(JoinPath(result.dir, "manifest.json"))) {
    ACCEL_ASSIGN_OR_RETURN(result, ResultFromManifest(env, result.dir));
    result.cache_hit = true;
    return result;
  }

  // Tokenise.
  EncoderOptions encoder_options{options.format, options.text_field, options.chat};
  if (!encoder_options.chat && options.format != DatasetFormat::kText &&
      options.format != DatasetFormat::kJsonl) {
    auto renderer = LoadChatRenderer(env, tok.config_path);
    if (renderer.ok()) {
      encoder_options.chat = *std::move(renderer);
    } else if (options.format == DatasetFormat::kMessages) {
      return renderer.status();
    }  // prompt_completion with strings needs none; message lists then fail per record
  }
  ACCEL_ASSIGN_OR_RETURN(RecordEncoder encoder,
                         RecordEncoder::Create(tok.tokenizer.get(), std::move(encoder_options)));
  auto encoded = EncodeRecords(encoder, files, options.threads, progress);

  // Bad records: the first in document order is the error, unless they are skipped.
  std::vector<std::vector<const EncodedDocument*>> docs(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    docs[f].resize(encoded[f].size(), nullptr);
    for (size_t r = 0; r < encoded[f].size(); ++r) {
      if (encoded[f][r].ok()) {
        docs[f][r] = &*encoded[f][r];
        continue;
      }
      if (!options.skip_invalid) {
        return absl::Status(encoded[f][r].status().code(),
                            absl::StrCat(files[f].path, ":", files[f].records[r].line, ": ",
                                         encoded[f][r].status().message()));
      }
      ++result.skipped_records;
    }
  }

  ACCEL_ASSIGN_OR_RETURN(MixturePlan plan,
                         PlanMixture(options, layout, docs, result.skipped_records));
  const bool wide = NeedsWideShard(tok.tokenizer->vocab_size());
  const bool masked = FormatHasMask(options.format);
  const std::string tmp =
      absl::StrCat(result.dir, ".tmp-", getpid(), "-", env->NowMicros());
  ACCEL_RETURN_IF_ERROR(env->CreateDirs(tmp));
  Json manifest = {{"version", kManifestVersion},
                   {"key", result.key},
                   {"format", DatasetFormatName(options.format)},
                   {"text_field", options.text_field},
                   {"skip_invalid", options.skip_invalid},
                   {"skipped_records", result.skipped_records},
                   {"seed", options.seed},
                   {"tokenizer",
                    {{"path", options.tokenizer},
                     {"sha256", tok.sha256},
                     {"vocab_size", tok.tokenizer->vocab_size()}}},
                   {"token_bytes", wide ? 4 : 2},
                   {"mask", masked},
                   {"sources", manifest_sources}};
  auto write_split = [&](const std::vector<DocRef>& refs, const std::string& name) -> absl::Status {
    std::vector<int32_t> ids;
    std::vector<uint8_t> mask;
    for (const DocRef& d : refs) {
      const EncodedDocument& doc = *docs[d.file][d.record];
      ids.insert(ids.end(), doc.ids.begin(), doc.ids.end());
      mask.insert(mask.end(), doc.mask.begin(), doc.mask.end());
    }
    ACCEL_RETURN_IF_ERROR(WriteTokenShard(env, JoinPath(tmp, name + ".bin"), ids, mask, wide));
    manifest[name] = CountsJson(ids, mask, static_cast<int64_t>(refs.size()));
    return absl::OkStatus();
  };
  ACCEL_RETURN_IF_ERROR(write_split(plan.train, "train"));
  if (plan.has_validation) {
    ACCEL_RETURN_IF_ERROR(write_split(plan.validation, "validation"));
    manifest["validation"]["fraction"] = options.validation_fraction;
    manifest["validation"]["files"] = manifest_validation_files;
  }
  ACCEL_RETURN_IF_ERROR(WriteFileAtomic(env, JoinPath(tmp, "manifest.json"), manifest.dump(2) + "\n"));
  ACCEL_RETURN_IF_ERROR(env->SyncDir(tmp));
  if (!env->RenameFile(tmp, result.dir).ok()) {
    // Another prepare of the same inputs finished first: its directory is the same bytes.
    (void)env->DeleteRecursively(tmp);
    if (!env->FileExists(JoinPath(result.dir, "manifest.json"))) {
      return absl::InternalError(absl::StrCat("could not move ", tmp, " to ", result.dir));
    }
  }
  ACCEL_RETURN_IF_ERROR(env->SyncDir(options.cache_dir));
  ACCEL_ASSIGN_OR_RETURN(PrepareResult written, ResultFromManifest(env, result.dir));
  return written;
}

}  // namespace accel::data

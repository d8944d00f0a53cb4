// Loading: tokenizer.json, GPT-2's vocab.json + merges.txt, tokenizer_config.json. The JSON
// adapter: nlohmann parses without exceptions, every field goes through json_fields.h, and a
// stray nlohmann exception still becomes InvalidArgument here, never escaping the API.
#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/json_fields.h"
#include "engine/text/tokenizer.h"

namespace accel::text {

struct Tokenizer::Parts {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
};

namespace {

absl::Status RefuseNonNull(const Json& j, const JsonPath& at, std::string_view key) {
  if (IsNullOrAbsent(j, key)) return absl::OkStatus();
  return Unsupported(at.Key(key), "(other than null)");
}

absl::Status ReadAddedTokens(const Json& j, const JsonPath& at, std::vector<AddedToken>* tokens,
                             std::vector<std::optional<int32_t>>* ids) {
  if (IsNullOrAbsent(j, "added_tokens")) return absl::OkStatus();
  ACCEL_ASSIGN_OR_RETURN(const Json* list, GetArray(j, at, "added_tokens"));
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& t = (*list)[i];
    const JsonPath item = at.Key("added_tokens").Index(i);
    ACCEL_ASSIGN_OR_RETURN(AddedToken token,
                           AddedTokenFromJson(t, item, /*normalized_default=*/true));
    ACCEL_ASSIGN_OR_RETURN(int64_t id, GetInt(t, item, "id"));
    if (id < 0 || id > INT32_MAX) return JsonError(item.Key("id"), "must be in [0, 2^31)");
    tokens->push_back(std::move(token));
    ids->push_back(static_cast<int32_t>(id));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Tokenizer>> ParseTokenizerJson(
    std::string_view text, std::string_view origin,
    const std::function<absl::StatusOr<std::unique_ptr<Tokenizer>>(const Json&, const JsonPath&)>&
        build) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  const JsonPath at{std::string(origin), ""};
  if (j.is_discarded()) return JsonError(at, "is not valid JSON");
  if (!j.is_object()) return JsonError(at, "must hold a JSON object");
  try {
    return build(j, at);
  } catch (const Json::exception& e) {
    return JsonError(at, absl::StrCat("is malformed: ", e.what()));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view tokenizer_json,
                                                               const TokenizerConfig* config,
                                                               std::string_view origin) {
  return ParseTokenizerJson(
      tokenizer_json, origin,
      [&](const Json& j, const JsonPath& at) -> absl::StatusOr<std::unique_ptr<Tokenizer>> {
        if (!IsNullOrAbsent(j, "version")) {
          ACCEL_ASSIGN_OR_RETURN(std::string version, GetString(j, at, "version"));
          if (version != "1.0")
            return Unsupported(at.Key("version"), absl::StrCat("\"", version, "\""));
        }
        ACCEL_RETURN_IF_ERROR(RefuseNonNull(j, at, "truncation"));
        ACCEL_RETURN_IF_ERROR(RefuseNonNull(j, at, "padding"));
        Parts parts;
        const Json null_json;
        auto field = [&](std::string_view key) -> const Json& {
          return IsNullOrAbsent(j, key) ? null_json : j.find(key).value();
        };
        ACCEL_ASSIGN_OR_RETURN(parts.normalizer,
                               NormalizerFromJson(field("normalizer"), at.Key("normalizer")));
        ACCEL_ASSIGN_OR_RETURN(parts.pre_tokenizer, PreTokenizerFromJson(field("pre_tokenizer"),
                                                                         at.Key("pre_tokenizer")));
        ACCEL_ASSIGN_OR_RETURN(const Json* model, GetObject(j, at, "model"));
        ACCEL_ASSIGN_OR_RETURN(parts.model, BpeModel::FromJson(*model, at.Key("model")));
        ACCEL_ASSIGN_OR_RETURN(
            parts.post_processor,
            PostProcessorFromJson(field("post_processor"), at.Key("post_processor")));
        ACCEL_ASSIGN_OR_RETURN(parts.decoder, DecoderFromJson(field("decoder"), at.Key("decoder")));
        std::vector<AddedToken> added;
        std::vector<std::optional<int32_t>> added_ids;
        ACCEL_RETURN_IF_ERROR(ReadAddedTokens(j, at, &added, &added_ids));
        return Build(std::move(parts), std::move(added), std::move(added_ids), config, at.file);
      });
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromVocabAndMerges(
    std::string_view vocab_json, std::string_view merges_txt, const TokenizerConfig* config,
    std::string_view origin) {
  return ParseTokenizerJson(
      vocab_json, origin,
      [&](const Json& j, const JsonPath& at) -> absl::StatusOr<std::unique_ptr<Tokenizer>> {
        StringMap<int32_t> vocab;
        vocab.reserve(j.size());
        for (const auto& [token, id] : j.items()) {
          if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
            return JsonError(at,
                             absl::StrCat("entry \"", token, "\" must have an id in [0, 2^31)"));
          }
          vocab[token] = static_cast<int32_t>(id.get<int64_t>());
        }
        // merges.txt as HF reads it: lines without their "\n" / "\r\n", "#version" lines
        // skipped, every other line exactly two tokens separated by one space.
        std::vector<std::pair<std::string, std::string>> merges;
        size_t rank = 0;
        for (size_t begin = 0; begin < merges_txt.size();) {
          size_t end = merges_txt.find('\n', begin);
          if (end == std::string_view::npos) end = merges_txt.size();
          std::string_view line = merges_txt.substr(begin, end - begin);
          begin = end + 1;
          if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
          if (line.substr(0, 8) == "#version") continue;
          ++rank;
          const size_t space = line.find(' ');
          if (space == std::string_view::npos ||
              line.find(' ', space + 1) != std::string_view::npos) {
            return absl::InvalidArgumentError(
                absl::StrCat(std::string(origin), ": merges.txt merge ", rank,
                             " must be two tokens separated by one space"));
          }
          merges.emplace_back(std::string(line.substr(0, space)),
                              std::string(line.substr(space + 1)));
        }
        const bool has_eot = vocab.contains("<|endoftext|>");
        Parts parts;
        ACCEL_ASSIGN_OR_RETURN(parts.model,
                               BpeModel::Create(std::move(vocab), merges, BpeOptions{}, origin));
        ACCEL_ASSIGN_OR_RETURN(parts.pre_tokenizer, Gpt2PreTokenizer());
        parts.decoder = ByteLevelDecoder();
        std::vector<AddedToken> added;
        if (has_eot) added.push_back(AddedToken{"<|endoftext|>", true, false, false, false, false});
        std::vector<std::optional<int32_t>> added_ids(added.size());
        return Build(std::move(parts), std::move(added), std::move(added_ids), config, origin);
      });
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Build(
    Parts parts, std::vector<AddedToken> added, std::vector<std::optional<int32_t>> added_ids,
    const TokenizerConfig* config, std::string_view origin) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  if (config != nullptr) {
    t->config_ = *config;
    // transformers adds the entries of added_tokens_decoder that tokenizer.json lacks.
    for (const auto& [id, token] : config->added_tokens) {
      const bool known = std::any_of(added.begin(), added.end(), [&](const AddedToken& a) {
        return a.content == token.content;
      });
      if (!known) {
        added.push_back(token);
        added_ids.push_back(id);
      }
    }
  }
  ACCEL_ASSIGN_OR_RETURN(t->added_, AddedVocabulary::Create(added, added_ids, *parts.model,
                                                            parts.normalizer.get(), origin));
  t->normalizer_ = std::move(parts.normalizer);
  t->pre_tokenizer_ = std::move(parts.pre_tokenizer);
  t->model_ = std::move(parts.model);
  t->post_processor_ = std::move(parts.post_processor);
  t->decoder_ = std::move(parts.decoder);
  t->vocab_size_ = std::max(t->added_->end_id(), t->model_->max_id() + 1);
  auto special_id = [&](const std::optional<std::string>& name,
                        std::string_view key) -> absl::StatusOr<std::optional<int32_t>> {
    if (!name) return std::optional<int32_t>();
    std::optional<int32_t> id = t->TokenToId(*name);
    if (!id) {
      return absl::InvalidArgumentError(absl::StrCat("tokenizer_config.json: ", std::string(key),
                                                     " \"", *name, "\" is not a token of ",
                                                     std::string(origin)));
    }
    return id;
  };
  ACCEL_ASSIGN_OR_RETURN(t->bos_id_, special_id(t->config_.bos_token, "bos_token"));
  ACCEL_ASSIGN_OR_RETURN(t->eos_id_, special_id(t->config_.eos_token, "eos_token"));
  return t;
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(Env* env, const std::string& dir) {
  std::optional<TokenizerConfig> config;
  const std::string config_path = JoinPath(dir, "tokenizer_config.json");
  if (env->FileExists(config_path)) {
    ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, config_path));
    ACCEL_ASSIGN_OR_RETURN(config, ParseTokenizerConfig(text, config_path));
  }
  const TokenizerConfig* config_ptr = config ? &*config : nullptr;
  const std::string json_path = JoinPath(dir, "tokenizer.json");
  if (env->FileExists(json_path)) {
    ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, json_path));
    return FromJson(text, config_ptr, json_path);
  }
  const std::string vocab_path = JoinPath(dir, "vocab.json");
  const std::string merges_path = JoinPath(dir, "merges.txt");
  if (env->FileExists(vocab_path) && env->FileExists(merges_path)) {
    ACCEL_ASSIGN_OR_RETURN(std::string vocab, ReadFileToString(env, vocab_path));
    ACCEL_ASSIGN_OR_RETURN(std::string merges, ReadFileToString(env, merges_path));
    return FromVocabAndMerges(vocab, merges, config_ptr, vocab_path);
  }
  return absl::NotFoundError(absl::StrCat(
      dir, ": no tokenizer.json, and no vocab.json + merges.txt pair, in this directory"));
}

}  // namespace accel::text

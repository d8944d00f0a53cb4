// Tokenizer: Hugging Face tokenizers' encode and decode in C++, giving exactly the ids of HF's
// Rust core (tokenizers 0.22) for the files it accepts, which tests/text's oracle checks on a
// multilingual corpus for GPT-2, Llama 2, Llama 3 and Qwen3.
//
// Pipeline (HF's order): added tokens are cut out of the raw text; each remaining piece is
// normalized, cut at "normalized" added tokens, pre-tokenized into words, and each word goes
// through the BPE model; the post-processor then adds special tokens when asked.
// What loads: model BPE; normalizers NFC, Prepend, Replace, Sequence; pre-tokenizers ByteLevel,
// Split, Metaspace, Sequence; decoders ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace,
// Sequence;
// post-processors TemplateProcessing, ByteLevel, Sequence. Anything else in a file is refused
// at load with one line naming it (`tokenizer.json: pre_tokenizer type "Whitespace" is not
// supported`), never approximated. docs/data.md "Tokenizers" has the full list.
//
// Input text that is not valid UTF-8 is encoded as its lossy UTF-8 form (each maximal invalid
// subpart → U+FFFD), which is what HF receives from any caller that decodes bytes to a string.
// Thread safety: a loaded Tokenizer is safe to use from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/base/env.h"
#include "engine/text/added_vocabulary.h"
#include "engine/text/bpe.h"
#include "engine/text/decoders.h"
#include "engine/text/normalizers.h"
#include "engine/text/post_processors.h"
#include "engine/text/pre_tokenizers.h"
#include "engine/text/tokenizer_config.h"

namespace accel::text {

class Tokenizer {
 public:
  // A directory holding tokenizer.json, or GPT-2's vocab.json + merges.txt; with
  // tokenizer_config.json when present (its added_tokens_decoder entries missing from
  // tokenizer.json are added, as transformers does). NotFound names the directory when it
  // holds neither form; every other error names the file and key.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(Env* env,
                                                                       const std::string& dir);
  // The text of a tokenizer.json; `config` may be null. `origin` names the file in errors.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tokenizer>> FromJson(
      std::string_view tokenizer_json, const TokenizerConfig* config,
      std::string_view origin = "tokenizer.json");
  // GPT-2's original pair (as transformers converts it: BPE, ByteLevel pre-tokenizer and
  // decoder, "<|endoftext|>" as a special added token when the vocab has it).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tokenizer>> FromVocabAndMerges(
      std::string_view vocab_json, std::string_view merges_txt, const TokenizerConfig* config,
      std::string_view origin = "vocab.json + merges.txt");

  // HF's encode(text, add_special_tokens).ids. Errors only when a regex gives up (Internal).
  [[nodiscard]] absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                                            bool add_special_tokens) const;
  // HF's decode(ids, skip_special_tokens): ids outside the vocabulary are skipped, as HF does.
  std::string Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  // One past the largest id of the vocabulary and the added tokens.
  int32_t vocab_size() const { return vocab_size_; }
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  const TokenizerConfig& config() const { return config_; }

 private:
  struct Parts;
  Tokenizer() = default;
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tokenizer>> Build(
      Parts parts, std::vector<AddedToken> added, std::vector<std::optional<int32_t>> added_ids,
      const TokenizerConfig* config, std::string_view origin);
  // `at_start`: the piece begins at offset 0 of the input.
  [[nodiscard]] absl::Status EncodePiece(std::string text, bool at_start,
                                         std::vector<int32_t>* ids) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<AddedVocabulary> added_;
  TokenizerConfig config_;
  int32_t vocab_size_ = 0;
  std::optional<int32_t> bos_id_, eos_id_;
};

}  // namespace accel::text

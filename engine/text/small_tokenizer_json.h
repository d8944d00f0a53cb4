// Test-only: a small Llama-2-shaped tokenizer.json (byte fallback, Prepend/Replace normalizer,
// BOS template) with added tokens carrying each flag: <mask> lstrip, <r> rstrip, "word"
// single_word, <plain> none, "<n> n" normalized (matched after the normalizer, in its
// normalized form). tokenizer_test.cc checks it by hand; oracle_test.cc runs it through Hugging
// Face's Rust core with the corpus, so the flags' semantics are HF's.
#pragma once

#include <string>

#include "absl/strings/str_format.h"
#include "engine/text/json_fields.h"

namespace accel::text::small_tokenizer {

constexpr int32_t kUnk = 0, kBos = 1, kEos = 2, kSpace = 259, kA = 260, kSpaceA = 261;

inline Json AddedTokenJson(int id, const std::string& content, bool special, bool lstrip = false,
                           bool rstrip = false, bool single_word = false) {
  return {{"id", id},          {"content", content}, {"single_word", single_word},
          {"lstrip", lstrip},  {"rstrip", rstrip},   {"normalized", false},
          {"special", special}};
}

// <unk> <s> </s>, 256 byte tokens, "▁", "a", "▁a", "b"; four added tokens with flags.
inline Json TokenizerJson() {
  Json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) vocab[absl::StrFormat("<0x%02X>", b)] = 3 + b;
  vocab["▁"] = kSpace, vocab["a"] = kA, vocab["▁a"] = kSpaceA, vocab["b"] = 262;
  Json j = Json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null,
    "post_processor": {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "fuse_unk": true,
              "byte_fallback": true, "vocab": {}, "merges": ["▁ a"]}})");
  j["model"]["vocab"] = vocab;
  j["added_tokens"] = Json::array(
      {AddedTokenJson(0, "<unk>", true), AddedTokenJson(1, "<s>", true),
       AddedTokenJson(2, "</s>", true), AddedTokenJson(263, "<mask>", true, /*lstrip=*/true),
       AddedTokenJson(264, "<plain>", false),
       AddedTokenJson(265, "<r>", false, false, /*rstrip=*/true),
       AddedTokenJson(266, "word", false, false, false, /*single_word=*/true),
       AddedTokenJson(267, "<n> n", false)});
  // Matched in normalized text, as its normalized form "▁<n>▁n".
  j["added_tokens"][7]["normalized"] = true;
  return j;
}

// The same vocabulary and added tokens in the newer Llama / Mistral shape: no normalizer, a
// Metaspace pre-tokenizer (prepend_scheme `scheme`, `split`) and a Metaspace decoder.
inline Json MetaspaceJson(const std::string& scheme, bool split) {
  Json j = TokenizerJson();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", scheme}, {"split", split}};
  j["decoder"] = Json::parse(R"({"type": "Sequence", "decoders": [
      {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
      {"type": "ByteFallback"}, {"type": "Fuse"}]})");
  j["decoder"]["decoders"][0]["prepend_scheme"] = scheme;
  return j;
}

// The same vocabulary with the other normalizers and Split behaviors: NFC, a Regex Replace,
// and Split Removed, Isolated with invert, Removed with invert.
inline Json SplitJson() {
  Json j = TokenizerJson();
  j["normalizer"] = Json::parse(R"({"type": "Sequence", "normalizers": [{"type": "NFC"},
      {"type": "Replace", "pattern": {"Regex": "[0-9]+"}, "content": "#"},
      {"type": "Prepend", "prepend": "▁"}]})");
  j["pre_tokenizer"] = Json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Removed", "invert": false},
      {"type": "Split", "pattern": {"String": "a"}, "behavior": "Isolated", "invert": true},
      {"type": "Split", "pattern": {"Regex": "\\p{Lu}"}, "behavior": "Removed", "invert": true}]})");
  return j;
}

}  // namespace accel::text::small_tokenizer

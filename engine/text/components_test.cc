// Normalizers, pre-tokenizers, decoders and post-processors one at a time, and the one-line
// refusals of what is not implemented.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/text/decoders.h"
#include "engine/text/normalizers.h"
#include "engine/text/post_processors.h"
#include "engine/text/pre_tokenizers.h"

namespace accel::text {
namespace {

using ::testing::ElementsAre;

std::string Normalize(const char* json, std::string text) {
  auto n = NormalizerFromJson(Json::parse(json), {"tokenizer.json", "normalizer"});
  EXPECT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE((*n)->Normalize(&text).ok());
  return text;
}

std::vector<std::string> PreTokenize(const char* json, std::string text) {
  auto p = PreTokenizerFromJson(Json::parse(json), {"tokenizer.json", "pre_tokenizer"});
  EXPECT_TRUE(p.ok()) << p.status();
  Words words{{std::move(text)}, /*first_at_start=*/true};
  EXPECT_TRUE((*p)->PreTokenize(&words).ok());
  return words.items;
}

std::vector<std::string> Decode(const char* json, std::vector<std::string> tokens) {
  auto d = DecoderFromJson(Json::parse(json), {"tokenizer.json", "decoder"});
  EXPECT_TRUE(d.ok()) << d.status();
  (*d)->DecodeChain(&tokens);
  return tokens;
}

TEST(NormalizerTest, NfcComposes) {
  EXPECT_EQ(Normalize(R"({"type": "NFC"})", "e\u0301 a\u0308"), "é ä");
  EXPECT_EQ(Normalize(R"({"type": "NFC"})", "plain"), "plain");
}

// Llama 2's: Prepend "▁" then every space becomes "▁".
TEST(NormalizerTest, PrependAndReplaceInSequence) {
  const char* llama2 = R"({"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "▁"},
      {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})";
  EXPECT_EQ(Normalize(llama2, "Hello  world"), "▁Hello▁▁world");
  EXPECT_EQ(Normalize(llama2, ""), "");  // Prepend leaves empty text alone
  EXPECT_EQ(
      Normalize(R"({"type": "Replace", "pattern": {"Regex": "[0-9]+"}, "content": "#"})", "a12b3"),
      "a#b#");
}

TEST(PreTokenizerTest, ByteLevelSplitsWithGpt2PatternAndMapsBytes) {
  EXPECT_THAT(
      PreTokenize(R"({"type": "ByteLevel", "add_prefix_space": false})", "Hello world's  12\n"),
      ElementsAre("Hello", "Ġworld", "'s", "Ġ", "Ġ12", "Ċ"));
  EXPECT_THAT(
      PreTokenize(R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": false})", "a b"),
      ElementsAre("ĠaĠb"));
}

// Llama 3's pattern: digits in groups of three, contractions case-insensitive.
TEST(PreTokenizerTest, SplitIsolatedWithTheFilesRegex) {
  const char* llama3 = R"({"type": "Split", "behavior": "Isolated", "invert": false, "pattern": {
      "Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}})";
  EXPECT_THAT(PreTokenize(llama3, "IT'S 12345 ok"),
              ElementsAre("IT", "'S", " ", "123", "45", " ok"));
  EXPECT_THAT(PreTokenize(R"({"type": "Split", "behavior": "Removed", "pattern": {"String": "-"}})",
                          "a-b--c"),
              ElementsAre("a", "b", "c"));
}

// \s means Unicode White_Space, as in Oniguruma (HF): U+180E is a format character, not a space,
// though PCRE2's own \s includes it. GPT-2's pattern then keeps " \u180E" as one word.
TEST(PreTokenizerTest, WhitespaceClassIsOnigurumas) {
  EXPECT_THAT(PreTokenize(R"({"type": "ByteLevel", "add_prefix_space": false})", "a \u180Eb"),
              ElementsAre("a", "Ġáłİ", "b"));
  EXPECT_THAT(
      PreTokenize(R"({"type": "Split", "behavior": "Removed", "pattern": {"Regex": "\\s+"}})",
                  "a\u3000\u0085b\u180Ec"),
      ElementsAre("a", "b\u180Ec"));
  EXPECT_THAT(
      PreTokenize(R"({"type": "Split", "behavior": "Removed", "pattern": {"Regex": "[^\\s]+"}})",
                  "a\u3000b"),
      ElementsAre("\u3000"));
}

// Metaspace: spaces become "▁", prepended per scheme; with split each "▁" starts a word (a run
// of them stays apart, as HF's MergedWithNext leaves it).
TEST(PreTokenizerTest, Metaspace) {
  EXPECT_THAT(
      PreTokenize(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"})",
                  "Hey  friend "),
      ElementsAre("▁Hey", "▁", "▁friend", "▁"));
  EXPECT_THAT(PreTokenize(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                              "split": false})",
                          "a b"),
              ElementsAre("▁a▁b"));
  EXPECT_THAT(PreTokenize(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never",
                              "split": false})",
                          "a b"),
              ElementsAre("a▁b"));
  EXPECT_FALSE(PreTokenizerFromJson(Json::parse(R"({"type": "Metaspace", "replacement": "▁",
                                                    "add_prefix_space": false})"),
                                    {"tokenizer.json", "pre_tokenizer"})
                   .ok());
}

TEST(DecoderTest, MetaspaceDropsTheFirstTokensMarker) {
  EXPECT_THAT(Decode(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"})",
                     {"▁Hey", "▁friend"}),
              ElementsAre("Hey", " friend"));
  EXPECT_THAT(Decode(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never"})",
                     {"▁Hey", "▁friend"}),
              ElementsAre(" Hey", " friend"));
}

TEST(DecoderTest, ByteLevelRebuildsBytesLossily) {
  EXPECT_THAT(Decode(R"({"type": "ByteLevel"})", {"Hello", "Ġworld", "Ċ"}),
              ElementsAre("Hello world\n"));
  // The first two bytes of "€" (E2 82): one U+FFFD, as from_utf8_lossy gives.
  EXPECT_THAT(Decode(R"({"type": "ByteLevel"})", {"âĤ"}), ElementsAre("\uFFFD"));
}

// Llama 2's decoder: ▁ → space, <0xNN> runs → UTF-8 (or one U+FFFD per byte), fuse, strip one
// leading space.
TEST(DecoderTest, Llama2Chain) {
  const char* llama2 = R"({"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
      {"type": "ByteFallback"}, {"type": "Fuse"},
      {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})";
  EXPECT_THAT(Decode(llama2, {"▁Hello", "▁", "<0xE2>", "<0x82>", "<0xAC>"}),
              ElementsAre("Hello €"));
  EXPECT_THAT(Decode(llama2, {"▁a", "<0xE2>", "<0x82>", "b"}), ElementsAre("a\uFFFD\uFFFDb"));
}

TEST(PostProcessorTest, TemplateAddsBosOnlyWithSpecialTokens) {
  auto p = PostProcessorFromJson(Json::parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})"),
                                 {"tokenizer.json", "post_processor"});
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<int32_t> ids{5, 6};
  (*p)->Process(&ids, false);
  EXPECT_THAT(ids, ElementsAre(5, 6));
  (*p)->Process(&ids, true);
  EXPECT_THAT(ids, ElementsAre(1, 5, 6));
}

// What is not implemented is refused in one line naming it, never approximated.
TEST(RefusalTest, UnsupportedComponentsAreNamed) {
  EXPECT_EQ(PreTokenizerFromJson(Json::parse(R"({"type": "Whitespace"})"),
                                 {"tokenizer.json", "pre_tokenizer"})
                .status()
                .message(),
            "tokenizer.json: pre_tokenizer type \"Whitespace\" is not supported");
  EXPECT_EQ(
      PreTokenizerFromJson(Json::parse(R"({"type": "Sequence", "pretokenizers": [{"type": "Split",
                    "pattern": {"String": " "}, "behavior": "MergedWithPrevious"}]})"),
                           {"tokenizer.json", "pre_tokenizer"})
          .status()
          .message(),
      "tokenizer.json: pre_tokenizer.pretokenizers[0].behavior \"MergedWithPrevious\" is "
      "not supported");
  EXPECT_EQ(NormalizerFromJson(Json::parse(R"({"type": "NFKC"})"), {"tokenizer.json", "normalizer"})
                .status()
                .message(),
            "tokenizer.json: normalizer type \"NFKC\" is not supported");
  EXPECT_EQ(DecoderFromJson(Json::parse(R"({"type": "WordPiece"})"), {"tokenizer.json", "decoder"})
                .status()
                .message(),
            "tokenizer.json: decoder type \"WordPiece\" is not supported");
  EXPECT_EQ(PostProcessorFromJson(Json::parse(R"({"type": "BertProcessing"})"),
                                  {"tokenizer.json", "post_processor"})
                .status()
                .message(),
            "tokenizer.json: post_processor type \"BertProcessing\" is not supported");
  auto bad_regex = PreTokenizerFromJson(
      Json::parse(
          R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})"),
      {"tokenizer.json", "pre_tokenizer"});
  EXPECT_EQ(bad_regex.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_regex.status().message()),
              ::testing::HasSubstr("tokenizer.json: pre_tokenizer.pattern: regex \"(unclosed\""));
}

}  // namespace
}  // namespace accel::text

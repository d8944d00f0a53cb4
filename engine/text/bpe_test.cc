#include "engine/text/bpe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace accel::text {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<BpeModel> Make(StringMap<int32_t> vocab,
                               std::vector<std::pair<std::string, std::string>> merges,
                               BpeOptions options = {}) {
  auto model = BpeModel::Create(std::move(vocab), merges, std::move(options), "test");
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

std::vector<int32_t> Tok(const BpeModel& m, std::string_view word) {
  std::vector<int32_t> ids;
  m.Tokenize(word, &ids);
  return ids;
}

// The lowest rank merges first wherever it is: "b c" (rank 0) before "a b" (rank 1), so "abc"
// becomes a + bc, then abc. Merging left to right would give ab + c.
TEST(BpeTest, LowestRankMergesFirst) {
  auto m = Make({{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}},
                {{"b", "c"}, {"a", "b"}, {"a", "bc"}});
  EXPECT_THAT(Tok(*m, "abc"), ElementsAre(5));
  EXPECT_THAT(Tok(*m, "abc"), ElementsAre(5));  // from the cache
  EXPECT_THAT(Tok(*m, "ab"), ElementsAre(3));
}

// Equal ranks merge leftmost first: "aaa" is aa + a, not a + aa.
TEST(BpeTest, EqualRanksMergeLeftmostFirst) {
  auto m = Make({{"a", 0}, {"aa", 1}}, {{"a", "a"}});
  EXPECT_THAT(Tok(*m, "aaa"), ElementsAre(1, 0));
  EXPECT_THAT(Tok(*m, "aaaa"), ElementsAre(1, 1));
}

TEST(BpeTest, ByteFallbackSpellsUnknownCharactersAsBytes) {
  StringMap<int32_t> vocab{{"<unk>", 0}, {"x", 1}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 2 + b;
  }
  auto m = Make(vocab, {}, BpeOptions{.unk_token = "<unk>", .byte_fallback = true});
  EXPECT_THAT(Tok(*m, "xé"), ElementsAre(1, 2 + 0xC3, 2 + 0xA9));
}

TEST(BpeTest, UnknownCharactersFuseOnlyWhenAsked) {
  StringMap<int32_t> vocab{{"<unk>", 0}, {"x", 1}};
  auto fused = Make(vocab, {}, BpeOptions{.unk_token = "<unk>", .fuse_unk = true});
  auto apart = Make(vocab, {}, BpeOptions{.unk_token = "<unk>", .fuse_unk = false});
  auto none = Make(vocab, {});
  EXPECT_THAT(Tok(*fused, "x??x"), ElementsAre(1, 0, 1));
  EXPECT_THAT(Tok(*apart, "x??x"), ElementsAre(1, 0, 0, 1));
  EXPECT_THAT(Tok(*none, "x??x"), ElementsAre(1, 1));  // HF drops them without unk_token
}

// ignore_merges (Llama 3): a word in the vocabulary is one token even when no merge path leads
// there.
TEST(BpeTest, IgnoreMergesTakesWholeWordsFromTheVocab) {
  StringMap<int32_t> vocab{{"a", 0}, {"b", 1}, {"c", 2}, {"abc", 3}};
  EXPECT_THAT(Tok(*Make(vocab, {}, BpeOptions{.ignore_merges = true}), "abc"), ElementsAre(3));
  EXPECT_THAT(Tok(*Make(vocab, {}), "abc"), ElementsAre(0, 1, 2));
}

TEST(BpeTest, MergeOutsideTheVocabIsRefusedWithItsRank) {
  auto m = BpeModel::Create({{"a", 0}, {"b", 1}}, {{"a", "b"}}, {}, "tokenizer.json: model");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("tokenizer.json: model: merge 1 uses token \"ab\""));
}

TEST(BpeTest, FromJsonReadsBothMergeFormsAndRefusesDropout) {
  const Json pairs = Json::parse(R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
                                     "merges": [["a", "b"]]})");
  const Json strings = Json::parse(R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
                                       "merges": ["a b"]})");
  const JsonPath at{"tokenizer.json", "model"};
  for (const Json& j : {pairs, strings}) {
    auto m = BpeModel::FromJson(j, at);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(Tok(**m, "ab"), ElementsAre(2));
  }
  Json dropout = pairs;
  dropout["dropout"] = 0.1;
  auto m = BpeModel::FromJson(dropout, at);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "tokenizer.json: model.dropout value 0.1 is not supported");
  Json unigram = pairs;
  unigram["type"] = "Unigram";
  EXPECT_EQ(BpeModel::FromJson(unigram, at).status().message(),
            "tokenizer.json: model type \"Unigram\" is not supported");
}

}  // namespace
}  // namespace accel::text

// The whole pipeline on a small Llama-2-shaped tokenizer.json written here: templates, added
// tokens and their flags, invalid UTF-8, loading from a directory, and what loading refuses.
#include "engine/text/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/testing/mem_env.h"
#include "engine/text/small_tokenizer_json.h"
#include "engine/text/utf8.h"

namespace accel::text {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace small_tokenizer;  // NOLINT: the fixture's ids and TokenizerJson()

std::unique_ptr<Tokenizer> Load(const Json& j) {
  auto t = Tokenizer::FromJson(j.dump(), nullptr);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

std::vector<int32_t> Encode(const Tokenizer& t, std::string_view text, bool special = false) {
  auto ids = t.Encode(text, special);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(TokenizerTest, TemplateAddsBosWithSpecialTokensOnly) {
  auto t = Load(TokenizerJson());
  EXPECT_THAT(Encode(*t, "a", true), ElementsAre(kBos, kSpaceA));
  EXPECT_THAT(Encode(*t, "a", false), ElementsAre(kSpaceA));
  EXPECT_THAT(Encode(*t, "", true), ElementsAre(kBos));
  EXPECT_EQ(t->Decode({kBos, kSpaceA, kSpaceA}, false), "<s> a a");
  EXPECT_EQ(t->Decode({kBos, kSpaceA, kSpaceA}, true), "a a");
  EXPECT_EQ(t->Decode({kSpaceA, 999999}, false), "a");  // unknown ids are skipped, as HF does
}

// Special tokens are found in text whatever add_special_tokens says, and the normalizer runs on
// each stretch between them (so each one gets its own "▁").
TEST(TokenizerTest, AddedTokensSplitTheTextBeforeNormalization) {
  auto t = Load(TokenizerJson());
  EXPECT_THAT(Encode(*t, "a<s>a"), ElementsAre(kSpaceA, kBos, kSpaceA));
  EXPECT_THAT(Encode(*t, "a <plain>"), ElementsAre(kSpaceA, kSpace, 264));
}

TEST(TokenizerTest, AddedTokenFlagsLstripRstripSingleWord) {
  auto t = Load(TokenizerJson());
  EXPECT_THAT(Encode(*t, "a <mask>"), ElementsAre(kSpaceA, 263));  // lstrip takes the space
  EXPECT_THAT(Encode(*t, "<r>  a"), ElementsAre(265, kSpaceA));    // rstrip takes both
  EXPECT_THAT(Encode(*t, "a word a"), ::testing::Contains(266));
  EXPECT_THAT(Encode(*t, "awordb"), ::testing::Not(::testing::Contains(266)));
  // "<n> n" is normalized: "a <n> n" becomes "▁a▁<n>▁n", where "▁<n>▁n" is found.
  EXPECT_THAT(Encode(*t, "a <n> n"), ElementsAre(kSpaceA, 267));
  EXPECT_THAT(Encode(*t, "<n>  n"), ::testing::Not(::testing::Contains(267)));
}

// Bytes that are not UTF-8 encode as their lossy form (one U+FFFD per maximal subpart), which is
// all HF can be given; byte fallback then spells U+FFFD as EF BF BD.
TEST(TokenizerTest, InvalidUtf8EncodesAsReplacementCharacters) {
  auto t = Load(TokenizerJson());
  EXPECT_EQ(Encode(*t, "a\xFF"), Encode(*t, "a\uFFFD"));
  EXPECT_THAT(Encode(*t, "\xE2\x82"), ElementsAre(kSpace, 3 + 0xEF, 3 + 0xBF, 3 + 0xBD));
}

TEST(TokenizerTest, AddedTokenIdsFollowHuggingFaceOrRefuse) {
  Json j = TokenizerJson();
  j["added_tokens"][3]["id"] = 300;  // HF would give <mask> 263, the next id after the vocab
  auto t = Tokenizer::FromJson(j.dump(), nullptr);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(),
              HasSubstr("tokenizer.json: added token \"<mask>\" has id 300 but Hugging Face "
                        "gives it id 263"));
}

TEST(TokenizerTest, RefusesWhatItDoesNotImplement) {
  Json j = TokenizerJson();
  j["truncation"] = Json::parse(R"({"max_length": 8})");
  EXPECT_EQ(Tokenizer::FromJson(j.dump(), nullptr).status().message(),
            "tokenizer.json: truncation (other than null) is not supported");
  j = TokenizerJson();
  j["pre_tokenizer"] = Json::parse(R"({"type": "Whitespace"})");
  EXPECT_EQ(Tokenizer::FromJson(j.dump(), nullptr).status().message(),
            "tokenizer.json: pre_tokenizer type \"Whitespace\" is not supported");
  EXPECT_EQ(Tokenizer::FromJson("{not json", nullptr).status().message(),
            "tokenizer.json is not valid JSON");
  j = TokenizerJson();
  j["model"]["vocab"] = "oops";
  EXPECT_EQ(Tokenizer::FromJson(j.dump(), nullptr).status().message(),
            "tokenizer.json: model.vocab must be an object");
}

TEST(TokenizerTest, LoadsDirectoryWithConfig) {
  testing::MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/m").ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/m/tokenizer.json", TokenizerJson().dump()).ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "/m/tokenizer_config.json", R"({
      "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
      "add_bos_token": true, "chat_template": "{{ messages }}",
      "added_tokens_decoder": {"268": {"content": "<extra>", "special": true}}})")
                  .ok());
  auto t = Tokenizer::Load(&env, "/m");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->bos_id(), kBos);
  EXPECT_EQ((*t)->eos_id(), kEos);
  EXPECT_EQ((*t)->config().chat_template, "{{ messages }}");
  EXPECT_EQ((*t)->TokenToId("<extra>"), 268);  // from added_tokens_decoder only
  EXPECT_EQ((*t)->vocab_size(), 269);
  EXPECT_THAT(Encode(**t, "<extra>"), ElementsAre(268));

  ASSERT_TRUE(WriteFileAtomic(&env, "/m/tokenizer_config.json", R"({"eos_token": 7})").ok());
  EXPECT_EQ(Tokenizer::Load(&env, "/m").status().message(),
            "/m/tokenizer_config.json: eos_token must be a string or an object with \"content\"");
  EXPECT_EQ(Tokenizer::Load(&env, "/empty").status().code(), absl::StatusCode::kNotFound);
}

// GPT-2's original pair: a vocab of the 256 byte characters plus merges.
TEST(TokenizerTest, VocabAndMergesPair) {
  Json vocab;
  for (int b = 0; b < 256; ++b) vocab[ByteLevelAlphabet()[b]] = b;
  vocab["Ġa"] = 256, vocab["<|endoftext|>"] = 257;
  auto t = Tokenizer::FromVocabAndMerges(vocab.dump(), "#version: 0.2\nĠ a\n", nullptr);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(Encode(**t, "a a<|endoftext|>"), ElementsAre('a', 256, 257));
  EXPECT_EQ((*t)->Decode({'a', 256, 257}, true), "a a");
  auto bad = Tokenizer::FromVocabAndMerges(vocab.dump(), "#version: 0.2\nĠ a\nab\n", nullptr);
  EXPECT_EQ(
      bad.status().message(),
      "vocab.json + merges.txt: merges.txt merge 2 must be two tokens separated by one space");
}

// Many threads encoding at once (sharing the word cache) get what one thread gets.
TEST(TokenizerTest, ConcurrentEncodesAgree) {
  auto t = Load(TokenizerJson());
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) {
    texts.push_back(absl::StrCat("a", std::string(i % 7, ' '), "<s>é", i, " word ", i * 7919));
  }
  std::vector<std::vector<int32_t>> expected;
  for (const auto& text : texts) expected.push_back(Encode(*t, text, true));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 50; ++rep) {
        for (size_t i = 0; i < texts.size(); ++i) {
          const size_t j = (i + k * 13 + rep) % texts.size();
          auto ids = t->Encode(texts[j], true);
          if (!ids.ok() || *ids != expected[j]) ++mismatches;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace accel::text

#include "engine/data/record_encoder.h"

#include "engine/data/dataset_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class RecordEncoderTest : public ::testing::Test {
 protected:
  RecordEncoder Make(DatasetFormat format, ChatRenderer chat = testing::SmallRender) {
    return *RecordEncoder::Create(tokenizer_.get(), {format, "text", std::move(chat)});
  }
  absl::Status Error(DatasetFormat format, std::string_view record) {
    return Make(format).Encode(record).status();
  }
  std::unique_ptr<text::Tokenizer> tokenizer_ = testing::SmallTokenizer();
};

TEST_F(RecordEncoderTest, TextAndJsonlGetBosAndEosAndNoMask) {
  auto doc = Make(DatasetFormat::kText).Encode("a");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_THAT(doc->ids, ElementsAre(1, 261, 2));
  EXPECT_THAT(doc->mask, IsEmpty());
  doc = Make(DatasetFormat::kJsonl).Encode(R"({"text": "b", "id": 7})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_THAT(doc->ids, ElementsAre(1, 259, 262, 2));
}

TEST_F(RecordEncoderTest, JsonlReadsTheConfiguredTextField) {
  auto encoder = *RecordEncoder::Create(tokenizer_.get(), {DatasetFormat::kJsonl, "body", {}});
  auto doc = encoder.Encode(R"({"text": "b", "body": "a"})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_THAT(doc->ids, ElementsAre(1, 261, 2));
  EXPECT_THAT(encoder.Encode(R"({"text": "a"})").status().message(),
              HasSubstr("missing field \"body\" (data.text_field)"));
}

TEST_F(RecordEncoderTest, AnEosAlreadyAtTheEndIsNotDoubled) {
  auto doc = Make(DatasetFormat::kText).Encode("a</s>");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_THAT(doc->ids, ElementsAre(1, 261, 2));
}

TEST_F(RecordEncoderTest, PromptCompletionStringsMaskThePromptLikeTrl) {
  auto doc = Make(DatasetFormat::kPromptCompletion).Encode(R"({"prompt": "a", "completion": "b"})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  // "ab" → <s> ▁a b; the prompt "a" alone is <s> ▁a: two masked ids; EOS counts.
  EXPECT_THAT(doc->ids, ElementsAre(1, 261, 262, 2));
  EXPECT_THAT(doc->mask, ElementsAre(0, 0, 1, 1));
}

TEST_F(RecordEncoderTest, PromptCompletionMessageListsMaskTheRenderedPrompt) {
  auto doc = Make(DatasetFormat::kPromptCompletion)
                 .Encode(R"({"prompt": [{"role": "user", "content": "a"}],
                             "completion": [{"role": "assistant", "content": "b"}]})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  // <plain> ▁a </s> <mask> ▁ b </s>; the prompt with the generation prompt is 4 ids.
  EXPECT_THAT(doc->ids, ElementsAre(264, 261, 2, 263, 259, 262, 2));
  EXPECT_THAT(doc->mask, ElementsAre(0, 0, 0, 0, 1, 1, 1));
}

TEST_F(RecordEncoderTest, MessagesCountOnlyTheAssistantTurns) {
  auto doc = Make(DatasetFormat::kMessages)
                 .Encode(R"({"messages": [{"role": "user", "content": "a"},
                                          {"role": "assistant", "content": "b"},
                                          {"role": "user", "content": "b"},
                                          {"role": "assistant", "content": "a"}]})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_THAT(doc->ids, ElementsAre(264, 261, 2, 263, 259, 262, 2, 264, 259, 262, 2, 263, 261, 2));
  EXPECT_THAT(doc->mask, ElementsAre(0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1));
}

TEST_F(RecordEncoderTest, MessagesEndingWithAUserTurnGetAMaskedEos) {
  auto doc = Make(DatasetFormat::kMessages)
                 .Encode(R"({"messages": [{"role": "assistant", "content": "a"},
                                          {"role": "user", "content": "b"}]})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_THAT(doc->ids, ElementsAre(263, 261, 2, 264, 259, 262, 2));
  EXPECT_THAT(doc->mask, ElementsAre(1, 1, 1, 0, 0, 0, 0));
}

TEST_F(RecordEncoderTest, BadRecordsGetOneLineNamingTheProblem) {
  auto message = [&](DatasetFormat f, std::string_view r) {
    absl::Status s = Error(f, r);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << r;
    return std::string(s.message());
  };
  EXPECT_EQ(message(DatasetFormat::kJsonl, "{\"text\": "), "malformed JSON");
  EXPECT_EQ(message(DatasetFormat::kJsonl, "[1]"), "expected a JSON object, not array");
  EXPECT_EQ(message(DatasetFormat::kJsonl, R"({"text": 3})"),
            "field \"text\" must be a string, not number");
  EXPECT_EQ(message(DatasetFormat::kText, "a\xff" "b"), "not valid UTF-8 (byte 2 of the record)");
  EXPECT_EQ(message(DatasetFormat::kPromptCompletion, R"({"prompt": "a"})"),
            "missing field \"completion\"");
  EXPECT_THAT(message(DatasetFormat::kPromptCompletion, R"({"prompt": "a", "completion": []})"),
              HasSubstr("must both be strings or both message lists, not string and array"));
  EXPECT_EQ(message(DatasetFormat::kMessages, R"({"msgs": []})"), "missing field \"messages\"");
  EXPECT_EQ(message(DatasetFormat::kMessages, R"({"messages": [{"content": "a"}]})"),
            "\"messages\"[0] has no \"role\"");
  EXPECT_EQ(message(DatasetFormat::kMessages, R"({"messages": [{"role": "tool", "content": "a"}]})"),
            "chat template: role \"tool\" is not supported");
}

TEST_F(RecordEncoderTest, MessagesWithoutARendererAreRefused) {
  auto encoder = *RecordEncoder::Create(tokenizer_.get(), {DatasetFormat::kMessages, "text", {}});
  EXPECT_THAT(encoder.Encode(R"({"messages": [{"role": "user", "content": "a"}]})")
                  .status()
                  .message(),
              HasSubstr("needs a chat template"));
}

TEST_F(RecordEncoderTest, ATokenizerWithoutEosIsRefused) {
  auto bare = *text::Tokenizer::FromJson(text::small_tokenizer::TokenizerJson().dump(), nullptr);
  auto encoder = RecordEncoder::Create(bare.get(), {DatasetFormat::kJsonl, "text", {}});
  EXPECT_THAT(encoder.status().message(), HasSubstr("tokenizer has no EOS token"));
}

}  // namespace
}  // namespace accel::data

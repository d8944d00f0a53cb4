// Generate's loop on a scripted decoder: which positions it asks for, where it stops, what it
// streams.
#include "engine/generate/generator.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::generate {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kVocab = 256;

// Greedy on it writes script[k] as the k-th new token, and records each Step's length.
class ScriptedDecoder final : public model::KvDecoder {
 public:
  ScriptedDecoder(std::string script, int64_t capacity)
      : KvDecoder(capacity), script_(std::move(script)) {}
  absl::Status Step(const int32_t* tokens, int64_t n, float* logits) override {
    if (absl::Status s = CheckStep(tokens, n, kVocab); !s.ok()) return s;
    steps.push_back(n);
    if (prompt_ < 0) prompt_ = n;
    position_ += n;
    const int64_t k = position_ - prompt_;
    for (int64_t v = 0; v < kVocab; ++v) logits[v] = 0;
    logits[static_cast<unsigned char>(script_[k % script_.size()])] = 5;
    return absl::OkStatus();
  }
  std::vector<int64_t> steps;

 private:
  std::string script_;
  int64_t prompt_ = -1;
};

std::string Bytes(absl::Span<const int32_t> ids) {
  std::string s;
  for (int32_t id : ids) s += static_cast<char>(id);
  return s;
}

std::vector<int32_t> Prompt(int n) { return std::vector<int32_t>(n, 'p'); }

TEST(GenerateTest, PromptIsOneStepThenOnePositionPerToken) {
  ScriptedDecoder d("hello world", 64);
  auto r = Generate(d, kVocab, Prompt(5), {.max_new_tokens = 4}, Bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->text, "hell");
  EXPECT_EQ(r->stop_reason, "length");
  EXPECT_THAT(d.steps, ElementsAre(5, 1, 1, 1));  // the last token is never fed back
}

TEST(GenerateTest, StopsAtEosStopStringOrContext) {
  ScriptedDecoder eos("ab\x01zz", 64);
  auto r = Generate(eos, kVocab, Prompt(2), {.max_new_tokens = 10, .end_ids = {1}}, Bytes);
  EXPECT_EQ(r->text, "ab");
  EXPECT_THAT(r->ids, ElementsAre('a', 'b'));
  EXPECT_EQ(r->stop_reason, "eos");

  ScriptedDecoder stop("one. two. three.", 64);
  r = Generate(stop, kVocab, Prompt(2), {.max_new_tokens = 50, .stop_strings = {" tw", "zz"}},
               Bytes);
  EXPECT_EQ(r->text, "one.");
  EXPECT_EQ(r->ids.size(), 7u);  // "one. tw": the token that completed the stop string is kept
  EXPECT_EQ(r->stop_reason, "stop");

  ScriptedDecoder context("abcdefgh", 6);
  r = Generate(context, kVocab, Prompt(3), {.max_new_tokens = 50}, Bytes);
  EXPECT_EQ(r->text, "abcd");  // positions 0-5 hold 3 prompt + 3 fed tokens; the 4th is free
  EXPECT_EQ(r->stop_reason, "context");
}

TEST(GenerateTest, StreamsSettledTextOnly) {
  ScriptedDecoder d("say hi. bye", 64);
  std::vector<std::string> pieces;
  auto r = Generate(d, kVocab, Prompt(1), {.max_new_tokens = 50, .stop_strings = {". b"}}, Bytes,
                    [&](std::string_view s) { pieces.emplace_back(s); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "say hi");
  std::string joined;
  for (const std::string& p : pieces) {
    EXPECT_EQ(p.find('.'), std::string::npos) << "a possible stop prefix was streamed";
    joined += p;
  }
  EXPECT_EQ(joined, r->text);
  EXPECT_GT(pieces.size(), 3u);  // as it comes, not at the end
}

TEST(GenerateTest, RefusesEmptyOrTooLongPrompts) {
  ScriptedDecoder d("x", 8);
  auto r = Generate(d, kVocab, {}, {}, Bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("the prompt is empty"));
  r = Generate(d, kVocab, Prompt(8), {}, Bytes);
  EXPECT_THAT(r.status().message(),
              HasSubstr("the prompt is 8 tokens, which leaves no room in the model's context of 8"));
  r = Generate(d, kVocab, Prompt(2), {.max_new_tokens = 0}, Bytes);
  EXPECT_THAT(r.status().message(), HasSubstr("--max-new-tokens 0 must be at least 1"));
  EXPECT_TRUE(d.steps.empty());
}

}  // namespace
}  // namespace accel::generate

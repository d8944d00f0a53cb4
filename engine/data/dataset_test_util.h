// Test-only: the small Llama-2-shaped tokenizer (engine/text/small_tokenizer_json.h) with
// BOS <s> = 1 and EOS </s> = 2, and a hand-written chat renderer for it:
//   render(messages) = for each message, its role tag + content + "</s>"; then "<mask>" when
//   add_generation_prompt. Role tags: user "<plain>" (264), assistant "<mask>" (263); any other
//   role is an error, as a template's raise_exception is.
// With the normalizer's "▁" prefix: "a" → ▁a (261), "b" → ▁ (259) b (262), "ab" → ▁a b.
#pragma once

#include <memory>
#include <string>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "engine/base/env.h"
#include "engine/data/chat_renderer.h"
#include "engine/text/small_tokenizer_json.h"
#include "engine/text/tokenizer.h"
#include "gtest/gtest.h"

namespace accel::data::testing {

inline text::TokenizerConfig SmallConfig() {
  text::TokenizerConfig config;
  config.bos_token = "<s>";
  config.eos_token = "</s>";
  return config;
}

inline std::string SmallConfigJson() { return R"({"bos_token": "<s>", "eos_token": "</s>"})"; }

inline std::unique_ptr<text::Tokenizer> SmallTokenizer() {
  const text::TokenizerConfig config = SmallConfig();
  return *text::Tokenizer::FromJson(text::small_tokenizer::TokenizerJson().dump(), &config);
}

inline absl::StatusOr<std::string> SmallRender(const nlohmann::json& messages, bool gen) {
  std::string out;
  for (const auto& m : messages) {
    const std::string role = m["role"];
    if (role == "user") {
      out += "<plain>";
    } else if (role == "assistant") {
      out += "<mask>";
    } else {
      return absl::InvalidArgumentError(absl::StrCat("role \"", role, "\" is not supported"));
    }
    out += m["content"].get<std::string>() + "</s>";
  }
  if (gen) out += "<mask>";
  return out;
}

// A fixture with a fresh folder per test (root_) holding the small tokenizer's tokenizer.json
// and tokenizer_config.json, so root_ is a tokenizer folder; Write() adds files beside them.
class DatasetFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = absl::StrCat(::testing::TempDir(), "/accel_data_", getpid(), "_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    (void)env_->DeleteRecursively(root_);
    ASSERT_TRUE(env_->CreateDirs(root_).ok());
    tokenizer_json_ = Write("tokenizer.json", text::small_tokenizer::TokenizerJson().dump());
    Write("tokenizer_config.json", SmallConfigJson());
  }
  void TearDown() override { (void)env_->DeleteRecursively(root_); }

  std::string Write(const std::string& name, const std::string& data) {
    const std::string path = JoinPath(root_, name);
    EXPECT_TRUE(WriteFileAtomic(env_, path, data).ok()) << path;
    return path;
  }
  std::string Read(const std::string& path) { return ReadFileToString(env_, path).value_or(""); }

  Env* env_ = Env::Default();
  std::string root_, tokenizer_json_;
};

}  // namespace accel::data::testing

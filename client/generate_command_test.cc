// accelctl generate: in-process through RunAccelctl, and as real accelctl / accel-worker
// processes for the bad input of issue 31.3 (one line on stderr, exit 2).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "client/accelctl.h"
#include "client/generate_command.h"
#include "engine/checkpoint/checkpoint_test_util.h"
#include "engine/checkpoint/hf_weights.h"
#include "engine/model/registry.h"
#include "engine/text/small_tokenizer_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;

struct Outcome {
  int code = 0;
  std::string out, err;
};

Outcome Accelctl(std::vector<std::string> args) {
  args.insert(args.begin(), "generate");
  std::ostringstream out, err;
  Outcome r;
  r.code = RunAccelctl(args, {}, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// A real process; stderr only.
Outcome Process(const std::string& binary, const std::string& args) {
  Outcome r;
  FILE* p = popen((binary + " " + args + " 2>&1 >/dev/null").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.err.append(buf, n);
  r.code = WEXITSTATUS(pclose(p));
  return r;
}

class GenerateCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("accel_generate_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tiny");
    fs::create_directories(dir_ / "tok");
    // gpt2-tiny: byte-level (vocab 256), 256 positions; its initial weights.
    auto config = model::ModelPreset("gpt2-tiny");
    ASSERT_TRUE(config.ok());
    auto layout = model::ModelLayout::Create(*config);
    std::vector<float> params(layout->num_params());
    model::InitParams(*layout, 1, params.data());
    ASSERT_TRUE(checkpoint::SaveHfWeights(Env::Default(), Path("tiny/model.safetensors"), *layout,
                                          params.data())
                    .ok());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(GenerateCommandTest, JsonHasTheNewIdsAndTheirBytes) {
  Outcome r = Accelctl({"--model", Path("tiny"), "--prompt", "Hello", "--max-new-tokens", "9",
                    "--output", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["ids"].size(), 9u);
  EXPECT_EQ(j["stop_reason"], "length");
  // Text mode streams the same continuation (a byte model: its bytes), then a newline.
  Outcome text = Accelctl({"--model", Path("tiny"), "--prompt", "Hello", "--max-new-tokens", "9"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out.size(), 10u);
  EXPECT_EQ(text.out.back(), '\n');
}

TEST_F(GenerateCommandTest, SeededSamplingIsReproducible) {
  auto sample = [&](const std::string& seed) {
    return Accelctl({"--model", Path("tiny"), "--prompt", "ab", "--max-new-tokens", "16",
                     "--temperature", "1.0", "--top-k", "50", "--seed", seed, "--output", "json"})
        .out;
  };
  EXPECT_EQ(sample("3"), sample("3"));
  EXPECT_NE(sample("3"), sample("4"));
}

TEST_F(GenerateCommandTest, BadInputIsOneLineAndExit2InBothFrontEnds) {
  // A checkpoint of another model than the config given.
  const model::ModelLayout small = checkpoint::testing::SmallLayout();
  ASSERT_TRUE(checkpoint::testing::SaveAll(Env::Default(), Path("ck"), small,
                                           checkpoint::testing::State(small.num_params(), 1), 2,
                                           2)
                  .ok());
  // A tokenizer with more tokens (267) than the byte model's 256.
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), Path("tok/tokenizer.json"),
                              text::small_tokenizer::TokenizerJson().dump())
                  .ok());
  const std::string model = "--model " + Path("tiny");
  const std::string long_prompt(300, 'x');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--checkpoint " + Path("ck") + " --model-config " + Path("tiny/config.json") +
           " --prompt hi",
       "holds another model"},
      {"--weights " + Path("tiny/model.safetensors") + " --model-config " + Path("other.json") +
           " --prompt hi",
       "no such file"},
      {model + " --tokenizer " + Path("tok/tokenizer.json") + " --prompt hi",
       "more than the model's vocabulary of 256"},
      {model + " --prompt " + long_prompt,
       "the prompt is 300 tokens, which leaves no room in the model's context of 256 positions"},
      {model + " --prompt ''", "the prompt is empty"},
      {model + " --prompt hi --top-p 2", "--top-p 2 must be in (0, 1]"},
  };
  for (const auto& [args, message] : cases) {
    for (const std::string& front : {std::string(ACCELCTL_BIN) + " generate",
                                     std::string(ACCEL_WORKER_BIN) + " --generate"}) {
      Outcome r = Process(front, args);
      EXPECT_EQ(r.code, 2) << front << " " << args.substr(0, 200) << "\n" << r.err;
      EXPECT_THAT(r.err, StartsWith("error: ")) << front;
      EXPECT_THAT(r.err, HasSubstr(message)) << front;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
}

TEST_F(GenerateCommandTest, MessagesNeedTheChatTemplate) {
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), Path("chat.json"),
                              R"([{"role": "user", "content": "hi"}])")
                  .ok());
  Outcome r = Accelctl({"--model", Path("tiny"), "--messages", Path("chat.json")});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--messages needs a chat template"));
}

TEST_F(GenerateCommandTest, MessagesAreRenderedThroughTheChatTemplateHook) {
  // A model with room for the small tokenizer's 267 tokens, and the tokenizer with its config.
  model::Gpt2Config c;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 16;
  c.vocab_size = 300;
  c.n_positions = 64;
  auto layout = model::ModelLayout::Create(c);
  std::vector<float> params(layout->num_params());
  model::InitParams(*layout, 2, params.data());
  fs::create_directories(dir_ / "m300");
  ASSERT_TRUE(checkpoint::SaveHfWeights(Env::Default(), Path("m300/model.safetensors"), *layout,
                                        params.data())
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), Path("tok/tokenizer.json"),
                              text::small_tokenizer::TokenizerJson().dump())
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), Path("tok/tokenizer_config.json"),
                              R"({"eos_token": "</s>", "chat_template": "unused here"})")
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), Path("chat.json"),
                              R"({"messages": [{"role": "user", "content": "a b"}]})")
                  .ok());
  std::string config_seen;
  nlohmann::json messages_seen;
  bool prompt_seen = false;
  GenerateDeps deps;
  deps.chat_template = [&](const std::string& path) -> absl::StatusOr<MessagesRenderer> {
    config_seen = path;
    return MessagesRenderer([&](const nlohmann::json& m, bool add_generation_prompt) {
      messages_seen = m;
      prompt_seen = add_generation_prompt;
      return absl::StatusOr<std::string>("<s>user: " + m[0]["content"].get<std::string>() +
                                         "\nassistant:");
    });
  };
  std::ostringstream out, err;
  const int code = RunGenerateCommand(
      {"--model", Path("m300"), "--tokenizer", Path("tok/tokenizer.json"), "--messages",
       Path("chat.json"), "--max-new-tokens", "5", "--output", "json"},
      "test", out, err, deps);
  ASSERT_EQ(code, 0) << err.str();
  EXPECT_EQ(config_seen, Path("tok/tokenizer_config.json"));
  EXPECT_EQ(messages_seen[0]["content"], "a b");
  EXPECT_TRUE(prompt_seen);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_LE(j["ids"].size(), 5u);
}

}  // namespace
}  // namespace accel::client

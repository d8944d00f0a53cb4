// `accelctl data render`: in-process through RunDataRender, and the accelctl binary run as a
// process with conversations piped to its stdin.
#include "client/data_render_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"

namespace accel::client {
namespace {

std::string WriteConfig(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name + std::to_string(getpid()) + ".json";
  std::ofstream(path) << text;
  return path;
}

const char kConfig[] = R"({"bos_token": "<s>", "eos_token": {"content": "</s>"},
  "chat_template": "{{ bos_token }}{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}{{ raise_exception('unknown role ' + m.role) }}{% endif %}[{{ m.role }}]{{ m.content | trim }}{{ eos_token }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"})";

struct Result {
  int code;
  std::string out, err;
};

Result RenderLines(const std::string& input, bool generation, const std::string& config) {
  DataRenderCommand command;
  command.tokenizer_config = config;
  command.add_generation_prompt = generation;
  std::istringstream in(input);
  std::ostringstream out, err;
  const int code = RunDataRender(command, in, out, err);
  return {code, out.str(), err.str()};
}

TEST(DataRenderTest, OneJsonStringPerConversation) {
  const std::string config = WriteConfig("render_ok", kConfig);
  const Result r = RenderLines(
      "{\"messages\": [{\"role\": \"user\", \"content\": \" hi \"}]}\n\n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"é\"}, {\"role\": \"assistant\", "
      "\"content\": \"\\\"ok\\\"\"}]}\n",
      true, config);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "\"<s>[user]hi</s>\\n[assistant]\"\n"
            "\"<s>[user]é</s>\\n[assistant]\\\"ok\\\"</s>\\n[assistant]\"\n");
  EXPECT_EQ(RenderLines("{\"messages\": []}\n", false, config).out, "\"<s>\"\n");
}

TEST(DataRenderTest, BadLinesNameTheirNumber) {
  const std::string config = WriteConfig("render_bad", kConfig);
  const std::string good = "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}\n";
  Result r = RenderLines(good + "{\"messages\": [\n", false, config);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "\"<s>[user]a</s>\\n\"\n");
  EXPECT_EQ(r.err, "error: stdin line 2: not valid JSON\n");
  r = RenderLines(good + good + "[1, 2]\n", false, config);
  EXPECT_EQ(r.err, "error: stdin line 3: expected an object with a \"messages\" array\n");
  r = RenderLines("{\"messages\": [{\"role\": \"robot\", \"content\": \"a\"}]}\n", false, config);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: stdin line 1: chat template line 1: raise_exception: unknown role robot\n");
  r = RenderLines(good, false, ::testing::TempDir() + "/missing_tokenizer_config.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing_tokenizer_config.json: cannot open"), std::string::npos) << r.err;
}

TEST(DataRenderTest, RunsAsAProcess) {
  const std::string config = WriteConfig("render_process", kConfig);
  const std::string input = ::testing::TempDir() + "/render_input" + std::to_string(getpid());
  std::ofstream(input) << "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n"
                       << "{\"messages\": [{\"role\": \"assistant\", \"content\": \"y\"}]}\n";
  const std::string command = std::string(ACCELCTL_BINARY) + " data render --tokenizer-config '" +
                              config + "' --add-generation-prompt < '" + input + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_EQ(out, "\"<s>[user]x</s>\\n[assistant]\"\n\"<s>[assistant]y</s>\\n[assistant]\"\n");
  // A bad line: exit 2 from the process too.
  std::ofstream(input) << "not json\n";
  pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  out.clear();
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  EXPECT_EQ(WEXITSTATUS(pclose(pipe)), 2);
  EXPECT_EQ(out, "error: stdin line 1: not valid JSON\n");
}

}  // namespace
}  // namespace accel::client

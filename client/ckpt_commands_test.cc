// accelctl ckpt: consolidate and inspect through the CLI11 parser, with exit codes.
#include "client/ckpt_commands.h"

#include <sstream>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_test_util.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/testing/mem_env.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::client {
namespace {

using namespace ::accel::checkpoint::testing;  // NOLINT: checkpoint test helpers

struct Outcome {
  int code;
  std::string out, err;
};

class CkptCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(SaveAll(&env_, "/ckpt", layout_, state_, 5, 4).ok());
    ASSERT_TRUE(env_.CreateDirs("/out").ok());
  }

  Outcome Run(std::vector<std::string> args) {
    CLI::App app{"test"};
    app.require_subcommand(1);
    CkptCommand command;
    AddCkptCommands(app, &command);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    std::ostringstream out, err;
    try {
      app.parse(reversed);
    } catch (const CLI::ParseError& e) {
      return {2, "", e.what()};
    }
    const int code = RunParsedCkptCommand(command, out, err, &env_);
    return {code, out.str(), err.str()};
  }

  accel::testing::MemEnv env_;
  model::ModelLayout layout_ = SmallLayout();
  State state_{layout_.num_params(), 8};
};

TEST_F(CkptCommandsTest, ConsolidateWritesTheModelFile) {
  Outcome r = Run({"ckpt", "consolidate", "/ckpt/step_5", "/out/model.safetensors"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("from step 5 (world size 4)"), std::string::npos) << r.out;
  auto reader = checkpoint::SafetensorsReader::Open(&env_, "/out/model.safetensors");
  ASSERT_TRUE(reader.ok());
  const LayoutEntry& wpe = *layout_.flat().Find("wpe.weight");
  std::vector<float> got(wpe.numel);
  ASSERT_TRUE((*reader)->ReadFloat("wpe.weight", got.data(), wpe.numel).ok());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), state_.params.begin() + wpe.offset));
  EXPECT_TRUE(env_.FileExists("/out/config.json"));

  // The checkpoint directory stands for its latest step; bf16 halves the data.
  r = Run({"ckpt", "consolidate", "/ckpt", "/out/half.safetensors", "--dtype", "bf16"});
  ASSERT_EQ(r.code, 0) << r.err;
  reader = checkpoint::SafetensorsReader::Open(&env_, "/out/half.safetensors");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->Find("wpe.weight")->dtype_name, "BF16");
}

TEST_F(CkptCommandsTest, ConsolidateErrors) {
  EXPECT_EQ(
      Run({"ckpt", "consolidate", "/ckpt/step_5", "/out/m.safetensors", "--dtype", "fp64"}).code,
      2);
  Outcome r = Run({"ckpt", "consolidate", "/ckpt/step_6", "/out/m.safetensors"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no checkpoint at /ckpt/step_6"), std::string::npos) << r.err;
  EXPECT_EQ(Run({"ckpt", "consolidate", "/ckpt/step_5"}).code, 2);  // missing OUT

  const std::string rank0 = "/ckpt/step_5/rank_0.bin";
  std::string bytes = *ReadFileToString(&env_, rank0);
  bytes.resize(bytes.size() - 1);
  ASSERT_TRUE(OverwriteFile(&env_, rank0, bytes).ok());
  r = Run({"ckpt", "consolidate", "/ckpt/step_5", "/out/m.safetensors"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("truncated at offset"), std::string::npos) << r.err;
}

TEST_F(CkptCommandsTest, InspectTextJsonAndExitCodes) {
  Outcome r = Run({"ckpt", "inspect", "/ckpt"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("step_5"), std::string::npos);
  EXPECT_NE(r.out.find("full_shard"), std::string::npos);
  EXPECT_NE(r.out.find("checksums verified"), std::string::npos) << r.out;

  r = Run({"ckpt", "inspect", "/ckpt", "--output", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["latest"], "step_5");
  EXPECT_EQ(j["steps"][0]["world_size"], 4);
  EXPECT_EQ(j["steps"][0]["strategy"], "full_shard");

  EXPECT_EQ(Run({"ckpt", "inspect", "/ckpt", "--output", "yaml"}).code, 2);
  EXPECT_EQ(Run({"ckpt", "inspect", "/missing"}).code, 2);

  const std::string rank3 = "/ckpt/step_5/rank_3.bin";
  std::string bytes = *ReadFileToString(&env_, rank3);
  bytes[200] ^= 4;
  ASSERT_TRUE(OverwriteFile(&env_, rank3, bytes).ok());
  EXPECT_EQ(Run({"ckpt", "inspect", "/ckpt", "--no-verify"}).code, 0);
  r = Run({"ckpt", "inspect", "/ckpt"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(rank3), std::string::npos) << r.out;
}

}  // namespace
}  // namespace accel::client

// accelctl config: explain/validate/convert through RunAccelctl, with exit codes.
#include "client/config_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <sstream>

#include "client/accelctl.h"
#include "engine/base/env.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/model/gpt2.h"
#include "engine/model/gpt2_config.h"
#include "engine/testing/mem_env.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::client {
namespace {

std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

struct Outcome {
  int code;
  std::string out, err;
};

Outcome Accelctl(std::vector<std::string> args, config::EnvMap env = {}) {
  std::ostringstream out, err;
  const int code = RunAccelctl(args, env, out, err);
  return {code, out.str(), err.str()};
}

TEST(AccelctlConfigTest, ExplainJsonHasTheContractKeys) {
  Outcome r = Accelctl({"config", "explain", Src("configs/ds_zero3_nvme.yaml"), "--output", "json",
                    "--micro-batch", "4", "--hidden-size", "768", "--num-processes", "8"},
                   {{"ACCELERATE_MIXED_PRECISION", "bf16"}});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.size(), 30u);  // the plan's 29 keys and what the engine runs
  EXPECT_EQ(j["engine"]["strategy"], "full_shard");
  EXPECT_EQ(j["engine"]["params"], "bf16");
  EXPECT_EQ(j["engine"]["optimizer_device"], "nvme");
  EXPECT_EQ(j["engine"]["params_device"], "nvme");
  EXPECT_EQ(j["strategy"], "full_shard");
  EXPECT_EQ(j["num_processes"], 8);
  EXPECT_EQ(j["train_batch_size"], 4 * 8);
  EXPECT_EQ(j["mixed_precision"]["mode"], "bf16");
  EXPECT_EQ(j["offload_params"], "nvme");
  EXPECT_EQ(j["prefetch"]["bucket_size"], 530841);
}

// DeepSpeed's parameter offload alone (issue 32): explain says where each store lives.
TEST(AccelctlConfigTest, ExplainShowsParameterOffloadApartFromTheOptimizer) {
  Outcome r = Accelctl({"config", "explain", Src("configs/ds_zero3_param_offload.json"),
                        "--output", "json", "--micro-batch", "1", "--hidden-size", "768",
                        "--num-processes", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["offload_params"], "nvme");
  EXPECT_EQ(j["offload_optimizer"], "none");
  EXPECT_EQ(j["engine"]["params_device"], "nvme");
  EXPECT_EQ(j["engine"]["optimizer_device"], "compute");
  EXPECT_EQ(j["engine"]["offload_param_dir"], "/tmp/accel-nvme-params");
  EXPECT_EQ(j["engine"]["offload_dir"], "");
  r = Accelctl({"config", "explain", Src("configs/ds_zero3_param_offload.json"), "--micro-batch",
                "1", "--hidden-size", "768", "--num-processes", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("parameters offloaded to files in /tmp/accel-nvme-params"),
            std::string::npos)
      << r.out;
}

TEST(AccelctlConfigTest, ExplainTextAndFlags) {
  Outcome r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"),
                    "--mixed-precision", "fp16", "--grad-accum", "2", "--micro-batch", "1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("strategy:"), std::string::npos);
  EXPECT_NE(r.out.find("mode=fp16"), std::string::npos);
  EXPECT_NE(r.out.find("engine: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("train_batch_size:               4"), std::string::npos) << r.out;

  r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--output", "xml"});
  EXPECT_EQ(r.code, kExitInvalid);
  r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"),
                "--mixed-precision", "fp64"});
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_NE(r.err.find("--mixed-precision: \"fp64\""), std::string::npos);
}

// bf16 plans say how this machine multiplies (decided per host: kernels::ChosenBf16Matmul), in
// text and JSON; other precisions have no such line.
TEST(AccelctlConfigTest, ExplainShowsThisMachinesBf16MatmulChoice) {
  const kernels::Bf16MatmulChoice& here = kernels::ChosenBf16Matmul();
  ASSERT_FALSE(here.reason.empty());
  Outcome r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"),
                        "--mixed-precision", "bf16"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("matmuls on this machine's CPU: " + here.reason + "\n"), std::string::npos)
      << r.out;
  r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--mixed-precision",
                "bf16", "--output", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["engine"]["matmuls_here"]["bf16"], here.native);
  EXPECT_EQ(j["engine"]["matmuls_here"]["reason"], here.reason);
  r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--mixed-precision",
                "fp16"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out.find("matmuls on this machine"), std::string::npos) << r.out;
}

TEST(AccelctlConfigTest, InvalidInputsExitWithTwoAndNameTheKey) {
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {{"config", "explain", Src("tests/config/invalid_keys.yaml")}, "invalid_key: unknown key"},
      {{"config", "explain", Src("tests/config/accelerate_tp_hsdp.yaml")},
       "parallelism_config.parallelism_config_tp_size"},
      {{"config", "explain", Src("tests/config/accelerate_ds_zero3_offload_file_doc.yaml")},
       "mixed_precision: cannot be set"},
      {{"config", "explain", Src("tests/config/ds_file_mode.yaml"), "--deepspeed-config",
        Src("tests/config/scenario3_all_auto.json")},
       ""},  // valid: exit 0 checked below
      {{"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--deepspeed-config",
        Src("configs/ds_zero3_nvme.json")},
       "distributed_type is FSDP, not DEEPSPEED"},
      {{"config", "explain", "/nonexistent.yaml"}, "/nonexistent.yaml"},
  };
  for (const Case& c : cases) {
    Outcome r = Accelctl(c.args);
    if (std::string(c.expect).empty()) {
      EXPECT_EQ(r.code, kExitOk) << r.err;
      continue;
    }
    EXPECT_EQ(r.code, kExitInvalid) << c.args[2];
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
  }
}

TEST(AccelctlConfigTest, ValidateManyFiles) {
  Outcome r = Accelctl({"config", "validate", Src("configs/fsdp_full_shard.yaml"),
                    Src("configs/ds_zero3_nvme.json"), Src("tests/config/0_12_0.yaml")});
  EXPECT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("ok: " + Src("configs/ds_zero3_nvme.json") + " (DEEPSPEED, full_shard)"),
            std::string::npos)
      << r.out;

  r = Accelctl({"config", "validate", Src("configs/fsdp_full_shard.yaml"),
                Src("tests/config/invalid_keys.yaml")});
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_NE(r.out.find("invalid: " + Src("tests/config/invalid_keys.yaml")), std::string::npos);
  EXPECT_NE(r.out.find("  " + Src("tests/config/invalid_keys.yaml") + ":15:1: invalid_key"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("1 of 2 file(s) invalid"), std::string::npos);
}

// A FIFO given as a config file blocked accelctl forever (issue 28): each command refuses it
// now, naming the file, before reading a byte. Should one block again, the test opens the
// FIFO's write end to release it and fails instead of hanging.
TEST(AccelctlConfigTest, AFifoIsRefusedByEveryConfigCommand) {
  const std::string fifo = ::testing::TempDir() + "/accelctl_fifo_" + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> commands = {
      {"config", "validate", fifo},
      {"config", "explain", fifo},
      {"config", "convert", fifo},
      {"config", "explain", Src("configs/ds_zero3_nvme.yaml"), "--deepspeed-config", fifo},
      {"config", "convert", Src("configs/ds_zero3_nvme.yaml"), "--deepspeed-config", fifo}};
  for (const std::vector<std::string>& args : commands) {
    std::future<Outcome> run = std::async(std::launch::async, [&] { return Accelctl(args); });
    if (run.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      ADD_FAILURE() << args[1] << " blocked on the FIFO";
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
    }
    const Outcome r = run.get();
    EXPECT_NE(r.code, kExitOk) << args[1];
    EXPECT_NE((r.out + r.err).find(fifo + " is a FIFO, not a regular file"), std::string::npos)
        << args[1] << ": " << r.out << r.err;
  }
  ::unlink(fifo.c_str());
}

TEST(AccelctlConfigTest, UsageErrorsExitWithTwo) {
  EXPECT_EQ(Accelctl({}).code, kExitInvalid);
  EXPECT_EQ(Accelctl({"config"}).code, kExitInvalid);
  EXPECT_EQ(Accelctl({"config", "explain"}).code, kExitInvalid);
  EXPECT_EQ(Accelctl({"config", "explain", "a.yaml", "--num-processes", "x"}).code, kExitInvalid);
  EXPECT_EQ(Accelctl({"--help"}).code, kExitOk);
}

TEST(AccelctlConfigTest, ConvertPrintsOrWritesTheOtherBackendsFiles) {
  Outcome r = Accelctl({"config", "convert", Src("configs/fsdp_full_shard.yaml")});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("distributed_type: DEEPSPEED"), std::string::npos);
  EXPECT_NE(r.out.find("\"stage\": 3"), std::string::npos);
  EXPECT_NE(r.err.find("note: "), std::string::npos);

  r = Accelctl({"config", "convert", Src("configs/ds_zero1.yaml"), "--to", "fsdp"});
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_NE(r.err.find("ZeRO stage 1"), std::string::npos);

  accel::testing::MemEnv fs;
  ConvertArgs args;
  args.file = Src("configs/ds_zero3_offload.yaml");
  std::ostringstream out, err;
  ASSERT_EQ(ConfigConvert(args, {}, out, err), kExitOk) << err.str();  // real file, stdout
  args.output_prefix = "/out/fsdp";
  ASSERT_TRUE(fs.CreateDirs("/out").ok());
  // The input is read through the same Env, so copy it in first.
  auto text = ReadFileToString(Env::Default(), args.file);
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(WriteFileAtomic(&fs, "/in.yaml", *text).ok());
  args.file = "/in.yaml";
  ASSERT_EQ(ConfigConvert(args, {}, out, err, &fs), kExitOk) << err.str();
  auto written = ReadFileToString(&fs, "/out/fsdp.yaml");
  ASSERT_TRUE(written.ok());
  EXPECT_NE(written->find("fsdp_offload_params: true"), std::string::npos) << *written;
  EXPECT_FALSE(fs.FileExists("/out/fsdp.json"));
}

TEST(AccelctlConfigTest, ConfigEnvironmentKeepsOnlyConfigVariables) {
  char a[] = "FSDP_VERSION=2", b[] = "HOME=/root", c[] = "ACCELERATE_MIXED_PRECISION=bf16",
       d[] = "BROKEN";
  char* environ_array[] = {a, b, c, d, nullptr};
  const config::EnvMap env = ConfigEnvironment(environ_array);
  EXPECT_EQ(env.size(), 2u);
  EXPECT_EQ(env.at("FSDP_VERSION"), "2");
  EXPECT_EQ(env.at("ACCELERATE_MIXED_PRECISION"), "bf16");
}

TEST(AccelctlConfigTest, ExplainModelPrintsTheMemoryPlan) {
  // gpt2, B=8, T=1024, fp32 full_shard on 2 ranks of one machine.
  Outcome r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--model",
                        "gpt2", "--micro-batch", "8", "--seq", "1024", "--world", "2",
                        "--mixed-precision", "no", "--output", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json m = nlohmann::json::parse(r.out)["memory_plan"];
  const int64_t psi = 124439808;  // GPT-2 124M
  EXPECT_EQ(m["num_params"], psi);
  EXPECT_EQ(m["world"], 2);
  EXPECT_EQ(m["batch"], 8);
  EXPECT_EQ(m["seq"], 1024);
  const nlohmann::json& device = m["rank"]["compute"];
  // AdamW's two fp32 moments of this rank's half of the real elements (13 units, so at most 13
  // elements of padding decide which rank holds the odd ones).
  const int64_t moments = device["optimizer_state"];
  EXPECT_NEAR(static_cast<double>(moments), 8.0 * psi / 2, 8.0 * 13);
  auto activations = model::Gpt2Activations::PlannedBytes(*model::Gpt2Preset("gpt2"), 8, 1024, {});
  ASSERT_TRUE(activations.ok());
  EXPECT_EQ(device["activations"], *activations);
  EXPECT_GE(device["total"].get<int64_t>(), moments + *activations);
  // The machine holds both ranks, alike: the seeded initial weights are computed (rank 0) and
  // received (rank 1) one unit at a time, so neither holds more than a unit of them.
  const int64_t rank_ram = m["rank"]["ram"], machine_ram = m["machine"]["ram"];
  EXPECT_EQ(machine_ram, 2 * rank_ram);
  EXPECT_LT(m["rank"]["host"]["other"].get<int64_t>(), 4 * psi / 2);
  EXPECT_EQ(m["deepspeed_estimator"]["function"], "estimate_zero3_model_states_mem_needs");
  // No offload: 4·largest layer + 18Ψ/2 per GPU.
  EXPECT_EQ(m["deepspeed_estimator"]["gpu_bytes_per_rank"], 4 * 38597376 + 18 * psi / 2);

  // The text form has the table, and one rank of a world of one holds all the moments.
  r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--model", "gpt2",
                "--micro-batch", "8", "--seq", "1024", "--world", "1", "--mixed-precision", "no"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("memory plan: gpt2 (124439808 parameters), micro-batch 8, sequence 1024"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(std::to_string(8 * psi) + "    949.4 MiB"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("machine total (1 rank here)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DeepSpeed's estimator"), std::string::npos) << r.out;
}

TEST(AccelctlConfigTest, ExplainModelConfigAndBadModels) {
  const std::string dir = ::testing::TempDir() + "/explain_model_config";
  ASSERT_TRUE(Env::Default()->CreateDirs(dir).ok());
  const model::Gpt2Config small{"small", 2, 2, 16, 300, 64};
  ASSERT_TRUE(WriteFileAtomic(Env::Default(), dir + "/config.json",
                              model::Gpt2ConfigToJson(small)).ok());
  Outcome r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--model-config",
                        dir + "/config.json", "--micro-batch", "2", "--seq", "32", "--world", "1",
                        "--mixed-precision", "no", "--output", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json m = nlohmann::json::parse(r.out)["memory_plan"];
  EXPECT_EQ(m["num_params"], small.NumParams());
  EXPECT_EQ(m["rank"]["compute"]["optimizer_state"], 8 * small.NumParams());

  r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--model", "gpt9"});
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_NE(r.err.find("--model: "), std::string::npos) << r.err;
  r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--model", "gpt2",
                "--seq", "4096"});
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_NE(r.err.find("--seq 4096 exceeds the model's 1024 positions"), std::string::npos)
      << r.err;
  (void)Env::Default()->DeleteRecursively(dir);
}


// Issue 32 item 9: a DeepSpeed JSON as the positional file of explain, convert and validate runs
// as an implied DEEPSPEED config, as `accel-worker --deepspeed-config` runs it.
TEST(AccelctlConfigTest, ADeepSpeedJsonAsTheFileIsAnImpliedDeepSpeedConfig) {
  const std::string json = Src("tests/config/ds_squad_adam_no_bias_correction.json");
  Outcome r = Accelctl({"config", "explain", json, "--num-processes", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("distributed_type:"), std::string::npos);
  EXPECT_NE(r.out.find("DEEPSPEED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("unknown key"), std::string::npos) << r.out;
  r = Accelctl({"config", "convert", json, "--num-processes", "2"});
  EXPECT_EQ(r.code, kExitInvalid);  // ZeRO stage 1 has no FSDP counterpart: the plan's refusal
  EXPECT_NE(r.err.find("ZeRO stage 1"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("unknown key"), std::string::npos) << r.err;
  r = Accelctl({"config", "convert", Src("tests/config/ds_optimizer_scheduler_fixed.json")});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("distributed_type: FSDP"), std::string::npos) << r.out;
  r = Accelctl({"config", "validate", json, "--num-processes", "2"});
  EXPECT_EQ(r.code, kExitOk) << r.out << r.err;
}

// Issue 32 item 10: validate takes no job, so it says what it assumed and never reports a
// file's value as kept over a job value it made up.
TEST(AccelctlConfigTest, ValidateSaysWhatItAssumedAndInventsNoJob) {
  const std::string json = Src("tests/config/ds_squad_adam_no_bias_correction.json");
  Outcome r = Accelctl({"config", "validate", json, "--num-processes", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_EQ(r.out.find("over the job's"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("overrides the job's"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  assumed: 2 process(es) (--num-processes); no job, so values the file "
                       "leaves \"auto\" take the defaults (micro batch 4"),
            std::string::npos)
      << r.out;
  // Written for 2 processes (24 = 3 x 4 x 2): on the one assumed, the batch rule fails, and the
  // output says the world was assumed and how to give it.
  r = Accelctl({"config", "validate", json});
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_NE(r.out.find("24 != 3 * 4 * 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  assumed: 1 process (a DeepSpeed JSON names no count; pass "
                       "--num-processes N)"),
            std::string::npos)
      << r.out;
  r = Accelctl({"config", "validate", Src("configs/fsdp_full_shard.yaml")});
  ASSERT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("  assumed: the file's num_processes (--num-processes N overrides it)"),
            std::string::npos)
      << r.out;
}

// Issue 32 item 11: explain shows the optimizer and scheduler a DeepSpeed JSON sets, and warns
// where they override the job's values.
TEST(AccelctlConfigTest, ExplainShowsTheDeepSpeedOptimizerAndScheduler) {
  const std::string json = Src("tests/config/ds_optimizer_scheduler_fixed.json");
  Outcome r = Accelctl({"config", "explain", json, "--lr", "2e-5", "--num-processes", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("\noptimizer:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("AdamW lr=0.001 betas=[0.8,0.999]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("WarmupLR warmup_min_lr=0.0 warmup_max_lr=0.001 warmup_num_steps=1000"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("warning: " + json + ": optimizer.params.lr: 0.001 (fixed in the file) "
                       "overrides the job's lr 2e-05"),
            std::string::npos)
      << r.out;
  r = Accelctl({"config", "explain", json, "--output", "json", "--num-processes", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["engine"]["optimizer"]["type"], "AdamW");
  EXPECT_DOUBLE_EQ(j["engine"]["optimizer"]["lr"].get<double>(), 0.001);
  EXPECT_EQ(j["engine"]["scheduler"]["type"], "WarmupLR");
  EXPECT_EQ(j["engine"]["scheduler"]["warmup_num_steps"], 1000);
  // Without the sections neither key is added (the contract's keys stay), nor a text line.
  r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml"), "--output", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out)["engine"].contains("optimizer"));
  r = Accelctl({"config", "explain", Src("configs/fsdp_full_shard.yaml")});
  EXPECT_EQ(r.out.find("\noptimizer:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace accel::client

// One plan, end to end: what acceld shows for a job is what its workers run, and what a worker
// would refuse is refused by `accelctl submit` (exit 2) with nothing queued. Real acceld and
// accel-worker processes on 127.0.0.1, accelctl in-process.
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary

std::string Configs() {
  return fs::path(ACCEL_DATA).parent_path().parent_path() / "configs";
}

// A FULL_SHARD Accelerate config with a custom config.json and no resources.num_processes: the
// stored spec and the plan show full_shard on the config's 2 ranks and that model's dimensions,
// and the workers' log says the same strategy.
TEST(ControlPlanePlan, StatusShowsTheStrategyAndModelTheWorkersRun) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string model = d.dir() + "/config.json";
  std::ofstream(model) << R"({"n_layer": 3, "n_head": 2, "n_embd": 32, "vocab_size": 256,
                              "n_positions": 64})";
  const std::string job = WriteJob(d.dir(), "custom", R"(
model: {config: config.json}
train: {steps: 4, micro_batch: 2, seq_len: 16, log_every: 2}
)");
  std::string out, err;
  ASSERT_EQ(d.Accelctl({"submit", job, "--config", Configs() + "/fsdp_full_shard.yaml",
                        "--wait", "--output", "json"},
                       &out, &err),
            0)
      << out << err;
  const std::string id = nlohmann::json::parse(out.substr(0, out.find('\n')))["id"];
  ASSERT_EQ(d.Accelctl({"status", id, "--output", "json"}, &out, &err), 0) << err;
  const nlohmann::json status = nlohmann::json::parse(out);
  EXPECT_EQ(status["state"], "SUCCEEDED");
  EXPECT_EQ(status["spec"]["sharding"]["strategy"], "full_shard");
  EXPECT_EQ(status["spec"]["resources"]["num_processes"], 2);
  const nlohmann::json& plan = status["plan"];
  EXPECT_EQ(plan["strategy"], "full_shard");
  EXPECT_EQ(plan["world_size"], 2);
  EXPECT_EQ(plan["precision"], "bf16 mixed");  // the config's mixed_precision: bf16
  EXPECT_EQ(plan["global_batch"], "4");        // 2 × 1 × 2 (int64 is a string in proto3 JSON)
  EXPECT_EQ(plan["model"]["n_layer"], "3");
  EXPECT_EQ(plan["model"]["n_head"], "2");
  EXPECT_EQ(plan["model"]["n_embd"], "32");
  EXPECT_EQ(plan["model"]["vocab_size"], "256");
  EXPECT_THAT(plan["config"].get<std::string>(), HasSubstr("fsdp_full_shard.yaml"));
  // No field shows a default the config.json replaced: no preset is stored beside it.
  EXPECT_TRUE(!status["spec"]["model"].contains("preset") ||
              status["spec"]["model"]["preset"] == "")
      << status["spec"]["model"];
  ASSERT_EQ(d.Accelctl({"logs", id, "--rank", "0"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("mode: full_shard"));
  ASSERT_EQ(d.Accelctl({"status", id}, &out), 0);
  EXPECT_THAT(out, HasSubstr("plan full_shard on 2 cpu ranks, bf16 mixed"));
  EXPECT_THAT(out, HasSubstr("3 layers, 2 heads, width 32, vocabulary 256"));
  ASSERT_EQ(d.Accelctl({"list"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("full_shard"));
}

// Each refusal of the lowering reaches `accelctl submit` as exit 2 naming file and key; nothing
// is queued.
TEST(ControlPlanePlan, WhatAWorkerWouldRefuseIsRefusedAtSubmit) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string yaml = d.dir() + "/accelerate_ds.yaml";
  std::ofstream(yaml) << "distributed_type: DEEPSPEED\nnum_processes: 2\n";
  const std::string job = WriteJob(d.dir(), "ds", "train: {steps: 4}\n");
  const std::string nvme_file = d.dir() + "/not_a_dir";
  std::ofstream(nvme_file) << "x";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {R"({"zero_optimization": {"stage": 2}, "optimizer": {"type": "SGD",
          "params": {"lr": 0.1}}})",
       {"sgd.json", "optimizer.type", "SGD"}},
      {R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"},
          "offload_optimizer": {"device": "cpu"}}})",
       {"offload.json", "zero_optimization.offload_param.device", "stage 3"}},
      {R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme",
          "nvme_path": ")" + nvme_file + R"("}}})",
       {"nvme.json", "zero_optimization.offload_optimizer.nvme_path", "not a directory"}},
  };
  for (const auto& [json, expect] : cases) {
    const std::string path = d.dir() + "/" + expect[0];
    std::ofstream(path) << json;
    std::string out, err;
    EXPECT_EQ(d.Accelctl({"submit", job, "--config", yaml, "--deepspeed-config", path}, &out,
                         &err),
              2)
        << expect[0];
    for (const std::string& e : expect) EXPECT_THAT(err, HasSubstr(e)) << expect[0];
  }
  std::string out;
  ASSERT_EQ(d.Accelctl({"list", "--output", "json"}, &out), 0);
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace accel

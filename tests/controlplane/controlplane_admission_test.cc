// End to end with real processes on 127.0.0.1: a TLS acceld training a job, gangs that do not
// fit together, and bad job files and tokens rejected with nothing queued.
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary

TEST(ControlPlaneE2E, TlsClientsTrainAJobToSucceeded) {
  if (access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/openssl";
  Daemon d(FreshDir());
  const std::string cert = d.dir() + "/cert.pem", key = d.dir() + "/key.pem";
  const std::string cmd =
      "/usr/bin/openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      key + " -out " + cert + " >" + d.dir() + "/openssl.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::ReadAll(d.dir() + "/openssl.log");
  d.Start(2, 0, {"--tls-cert", cert, "--tls-key", key}, cert);
  std::string out, err;
  const std::string job = WriteJob(d.dir(), "tls", R"(
model: {preset: gpt2-tiny}
train: {steps: 10, micro_batch: 2, seq_len: 32, log_every: 5}
resources: {num_processes: 2}
)");
  ASSERT_EQ(d.Accelctl({"submit", job, "--wait", "--output", "json"}, &out, &err), 0)
      << err << testing::ReadAll(d.child().stderr_path);
  // The workers could not have spoken TLS: they trained through acceld's private unix socket.
  // A plaintext client gets nothing.
  auto plain = v1::Coordinator::NewStub(*rpc::MakeChannel(d.address()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::Cluster cluster;
  EXPECT_FALSE(plain->GetCluster(&ctx, v1::GetClusterRequest(), &cluster).ok());
}

// resources.device: cuda reaches the worker's device trainer (worker/device_session.h). With no
// NVIDIA driver here, acceld is told it has one GPU (--gpus 1): the job is admitted, its worker
// gets CUDA_VISIBLE_DEVICES and fails naming the missing device — it never quietly trains on
// the CPU. With a GPU (the device check), the same job trains to SUCCEEDED.
TEST(ControlPlaneE2E, CudaJobsRunOnTheDeviceTrainer) {
  Daemon d(FreshDir());
  d.Start(2, 0, {"--gpus", "1"});
  const std::string id = d.Submit(WriteJob(d.dir(), "cuda", R"(
model: {preset: gpt2-tiny}
train: {steps: 20, micro_batch: 2, seq_len: 32, log_every: 5}
resources: {num_processes: 1, device: cuda}
)"));
  const bool have_driver = access("/dev/nvidiactl", F_OK) == 0;
  if (have_driver) {
    ASSERT_TRUE(d.WaitState(id, v1::SUCCEEDED, 120)) << d.Get(id).error();
    return;
  }
  ASSERT_TRUE(d.WaitState(id, v1::FAILED, 60)) << d.Get(id).DebugString();
  const std::string error = d.Get(id).error();
  EXPECT_TRUE(error.find("no CUDA device") != std::string::npos ||
              error.find("built without the CUDA path") != std::string::npos)
      << error;
}

TEST(ControlPlaneE2E, GangsThatDoNotFitTogetherRunOneAfterTheOther) {
  Daemon d(FreshDir());
  d.Start(3);
  const std::string body = R"(
model: {preset: gpt2-tiny}
train: {steps: 30, micro_batch: 2, seq_len: 32, log_every: 10}
resources: {num_processes: 2}
)";
  const std::string a = d.Submit(WriteJob(d.dir(), "a", body));
  const std::string b = d.Submit(WriteJob(d.dir(), "b", body));
  ASSERT_TRUE(d.WaitState(b, v1::SUCCEEDED, 60));
  ASSERT_EQ(d.Get(a).state(), v1::SUCCEEDED);
  EXPECT_GE(d.Get(b).start_time_us(), d.Get(a).end_time_us());
  std::string out;
  ASSERT_EQ(d.Accelctl({"cluster", "--output", "json"}, &out), 0);
  EXPECT_EQ(nlohmann::json::parse(out)["free_slots"], 3);
}

TEST(ControlPlaneE2E, BadJobFilesAndTokensAreRejectedAndNothingIsQueued) {
  Daemon d(FreshDir());
  d.Start(2);
  std::string out, err;
  const std::string bad = WriteJob(d.dir(), "bad", "train: {steps: 10, stpes: 3}\n");
  EXPECT_EQ(d.Accelctl({"submit", bad}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("train.stpes: unknown key (did you mean train.steps?)"));
  const std::string too_big = WriteJob(d.dir(), "big", "resources: {num_processes: 3}\n");
  EXPECT_EQ(d.Accelctl({"submit", too_big}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("resources.num_processes"));
  // A DeepSpeed JSON that does not resolve: acceld's resolver names the file and the key.
  const std::string configs = fs::path(ACCEL_DATA).parent_path().parent_path() / "configs";
  const std::string bad_json = d.dir() + "/bad_ds.json";
  std::ofstream(bad_json) << R"({"zero_optimization": {"stage": 7}})";
  const std::string ds_job = WriteJob(d.dir(), "ds", "resources: {num_processes: 2}\n");
  EXPECT_EQ(d.Accelctl({"submit", ds_job, "--config", configs + "/ds_zero3_nvme.yaml",
                        "--deepspeed-config", bad_json},
                       &out, &err),
            2);
  EXPECT_THAT(err, HasSubstr(bad_json));
  EXPECT_THAT(err, HasSubstr("zero_optimization.stage"));
  ASSERT_EQ(d.Accelctl({"list", "--output", "json"}, &out), 0);
  EXPECT_EQ(out, "");
  std::ofstream(d.dir() + "/wrong-token") << "not-the-token\n";
  chmod((d.dir() + "/wrong-token").c_str(), 0600);
  CLI::App app;
  client::JobCommand command;
  client::AddJobCommands(app, &command);
  std::vector<std::string> args = {"--token-file", d.dir() + "/wrong-token", "--server",
                                   d.address(), "list"};
  app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  std::ostringstream o, e;
  EXPECT_EQ(client::RunParsedJobCommand(command, o, e), 1);
  EXPECT_THAT(e.str(), HasSubstr("wrong token"));
}

}  // namespace
}  // namespace accel

// acceld with the slurm launcher against a real Slurm cluster on this machine
// (tests/e2e/slurm_cluster.h: munged, slurmctld, one slurmd per network namespace). acceld listens
// on the nodes' bridge and submits each attempt with sbatch; the ranks run in the nodes'
// namespaces, take their rank from Slurm and reach acceld over TCP with the attempt's token.
// 2 nodes x 1 rank and 2 x 2 train to the same final state as the same job on the local
// launcher; killing a task restarts the attempt from the latest checkpoint and still ends with
// that state; `accelctl cancel` scancels; no Slurm job or process is left. Needs root (ctest
// label `slurm`); skips with the one-line reason otherwise.
#include <signal.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/controlplane/chaos_faults.h"
#include "tests/controlplane/daemon_harness.h"
#include "tests/e2e/slurm_cluster.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary
using chaos_testing::ExpectCheckpointDirIntact;
using chaos_testing::ExpectSameTrainingState;
using testing::SlurmCluster;

class SlurmLauncherE2eTest : public ::testing::Test {
 protected:
  // acceld's extra flags, and the CA the test's client trusts (TLS), before SetUp starts it.
  virtual std::vector<std::string> ExtraFlags() { return {}; }
  virtual std::string TlsCa() { return ""; }

  void SetUp() override {
    if (const std::string why = SlurmCluster::SkipReason(); !why.empty()) GTEST_SKIP() << why;
    dir_ = FreshDir();
    // slurmd's sockets live under the cluster's spool: its path must stay short (108 bytes).
    cluster_dir_ = "/tmp/accel-slurm-" + std::to_string(getpid()) + "-" + std::to_string(++count_);
    fs::remove_all(cluster_dir_);
    cluster_ = std::make_unique<SlurmCluster>(cluster_dir_);
    const absl::Status up = cluster_->Up(2, 2);
    ASSERT_TRUE(up.ok()) << up;
    // acceld runs sbatch, scontrol and scancel against this cluster.
    for (const std::string& kv : cluster_->env()) putenv(strdup(kv.c_str()));
    slurm_ = std::make_unique<Daemon>(dir_ + "/slurm-acceld");
    fs::create_directories(slurm_->dir());
    std::vector<std::string> flags = {"--listen", cluster_->bridge_address() + ":0", "--launcher",
                                      "slurm", "--heartbeat-timeout", "120"};
    for (const std::string& f : ExtraFlags()) flags.push_back(f);
    slurm_->Start(1, 0, flags, TlsCa());
  }

  void TearDown() override {
    if (cluster_ == nullptr) return;
    if (slurm_ != nullptr) EXPECT_EQ(slurm_->Terminate(), 0);
    // acceld leaves no Slurm job behind, and no task runs in the nodes.
    EXPECT_TRUE(WaitFor([&] { return cluster_->Jobs().empty(); }, 30));
    EXPECT_TRUE(WaitFor([&] { return cluster_->TaskProcesses().empty(); }, 30));
    cluster_->Down();
    fs::remove_all(cluster_dir_);
  }

  // A tiny job; `resources` and the checkpoint dir vary.
  std::string JobFile(const std::string& name, const std::string& resources, int steps,
                      const std::string& ckpt) {
    return WriteJob(dir_, name,
                    absl::StrCat("model: {preset: gpt2-tiny}\n"
                                 "train: {steps: ",
                                 steps,
                                 ", micro_batch: 2, seq_len: 32, log_every: 1, seed: 7}\n"
                                 "sharding: {strategy: full_shard}\n"
                                 "max_restarts: 2\ncomm_timeout_s: 60\nstop_grace_s: 2\n"
                                 "resources: ",
                                 resources, "\ncheckpoint: {dir: ", ckpt, ", every_n_steps: 2}\n"));
  }

  // The same job on a local acceld (every rank on this host): the reference final state.
  std::string Reference(int ranks, int steps) {
    Daemon local(dir_ + "/local-acceld-" + std::to_string(ranks));
    fs::create_directories(local.dir());
    local.Start(ranks);
    const std::string ckpt = dir_ + "/ckpt-local-" + std::to_string(ranks);
    const std::string id = local.Submit(JobFile(
        "local" + std::to_string(ranks),
        absl::StrCat("{num_processes: ", ranks, ", threads_per_process: 1}"), steps, ckpt));
    EXPECT_TRUE(local.WaitState(id, v1::SUCCEEDED, 300)) << local.Get(id).DebugString();
    EXPECT_EQ(local.Terminate(), 0);
    return ckpt;
  }

  std::string RunOnSlurm(const std::string& name, int per_node, int steps) {
    const std::string ckpt = dir_ + "/ckpt-" + name;
    const std::string id = slurm_->Submit(JobFile(
        name,
        absl::StrCat("{num_processes: ", 2 * per_node, ", nodes: 2, threads_per_process: 1}"),
        steps, ckpt));
    EXPECT_TRUE(slurm_->WaitState(id, v1::SUCCEEDED, 300)) << slurm_->Get(id).DebugString();
    const v1::Job job = slurm_->Get(id);
    EXPECT_EQ(job.spec().resources().launcher(), "slurm");
    EXPECT_THAT(job.placement(), ::testing::StartsWith("slurm job "));
    // accelctl status says where the attempt ran.
    std::string status;
    EXPECT_EQ(slurm_->Accelctl({"status", id}, &status), 0);
    EXPECT_THAT(status, HasSubstr(absl::StrCat("launcher slurm, 2 nodes x ", per_node,
                                               " ranks, attempt 1 is ", job.placement())));
    return ckpt;
  }

  std::string dir_, cluster_dir_;
  static inline int count_ = 0;
  std::unique_ptr<SlurmCluster> cluster_;
  std::unique_ptr<Daemon> slurm_;
};

TEST_F(SlurmLauncherE2eTest, TwoNodesTrainLikeTheLocalLauncher) {
  constexpr int kSteps = 4;
  const std::string two = RunOnSlurm("slurm2x1", 1, kSteps);
  const std::string four = RunOnSlurm("slurm2x2", 2, kSteps);
  ExpectCheckpointDirIntact(two, kSteps);
  ExpectCheckpointDirIntact(four, kSteps);
  const std::string step = "/step_" + std::to_string(kSteps);
  ExpectSameTrainingState(Reference(2, kSteps) + step, two + step);
  ExpectSameTrainingState(Reference(4, kSteps) + step, four + step);
}

TEST_F(SlurmLauncherE2eTest, AKilledTaskRestartsTheAttemptFromTheLatestCheckpoint) {
  constexpr int kSteps = 40;
  const std::string ckpt = dir_ + "/ckpt-killed";
  const std::string id = slurm_->Submit(
      JobFile("killed", "{num_processes: 2, nodes: 2, threads_per_process: 1}", kSteps, ckpt));
  // Once a checkpoint exists, kill rank 1's worker (it runs in the second node's namespace).
  ASSERT_TRUE(WaitFor([&] { return slurm_->Get(id).last_step() >= 5; }, 300))
      << slurm_->Get(id).DebugString();
  const std::string first_placement = slurm_->Get(id).placement();
  // The job's processes: srun (the batch script exec'd it) and the two workers.
  std::vector<pid_t> workers;
  for (pid_t pid : slurm_->Workers(id)) {
    const std::vector<std::string> argv = ProcStrings(pid, "cmdline");
    if (!argv.empty() && argv[0] == ACCEL_WORKER_BIN) workers.push_back(pid);
  }
  ASSERT_EQ(workers.size(), 2u);
  kill(workers.back(), SIGKILL);
  ASSERT_TRUE(slurm_->WaitState(id, v1::SUCCEEDED, 400)) << slurm_->Get(id).DebugString();
  const v1::Job job = slurm_->Get(id);
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_EQ(job.restarts_used(), 1);
  EXPECT_NE(job.placement(), first_placement);  // a new Slurm job for the new attempt
  std::string status;
  ASSERT_EQ(slurm_->Accelctl({"status", id}, &status), 0);
  EXPECT_THAT(status, HasSubstr("launcher slurm, 2 nodes x 1 ranks, attempt 2 is slurm job"));
  ExpectCheckpointDirIntact(ckpt, kSteps);
  const std::string step = "/step_" + std::to_string(kSteps);
  ExpectSameTrainingState(Reference(2, kSteps) + step, ckpt + step);
}

TEST_F(SlurmLauncherE2eTest, CancelScancelsTheJob) {
  const std::string id = slurm_->Submit(JobFile(
      "cancelled", "{num_processes: 2, nodes: 2, threads_per_process: 1}", 100000,
      dir_ + "/ckpt-cancelled"));
  ASSERT_TRUE(slurm_->WaitState(id, v1::RUNNING, 120)) << slurm_->Get(id).DebugString();
  ASSERT_FALSE(cluster_->Jobs().empty());
  ASSERT_EQ(slurm_->Accelctl({"cancel", id}), 0);
  ASSERT_TRUE(slurm_->WaitState(id, v1::CANCELLED, 60)) << slurm_->Get(id).DebugString();
  EXPECT_TRUE(WaitFor([&] { return cluster_->Jobs().empty(); }, 30));
  EXPECT_TRUE(WaitFor([&] { return slurm_->Workers(id).empty(); }, 30));
}

// With TLS on acceld's port, the workers on the nodes dial it with TLS too, checking acceld's
// certificate against ACCEL_TLS_CA (here the self-signed certificate itself).
class SlurmLauncherTlsE2eTest : public SlurmLauncherE2eTest {
 protected:
  std::vector<std::string> ExtraFlags() override {
    const std::string dir = "/tmp/accel-slurm-tls-" + std::to_string(getpid());
    fs::create_directories(dir);
    cert_ = dir + "/cert.pem";
    const std::string key = dir + "/key.pem";
    const std::string cmd = "/usr/bin/openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
                            "-subj /CN=acceld -addext subjectAltName=IP:" +
                            cluster_->bridge_address() + " -keyout " + key + " -out " + cert_ +
                            " >" + dir + "/openssl.log 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << testing::ReadAll(dir + "/openssl.log");
    return {"--tls-cert", cert_, "--tls-key", key};
  }
  std::string TlsCa() override { return cert_; }
  std::string cert_;
};

TEST_F(SlurmLauncherTlsE2eTest, ClusterWorkersReachAcceldOverTls) {
  const std::string ckpt = RunOnSlurm("tls2x1", 1, 2);
  ExpectCheckpointDirIntact(ckpt, 2);
}

}  // namespace
}  // namespace accel

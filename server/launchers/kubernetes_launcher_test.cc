// KubernetesLauncher against a fake API server in the test (server/launchers/kubernetes_fake_api.h): the
// objects it creates, the pod states it reads, its stops, its API errors and timeouts, TLS.
#include "server/launchers/kubernetes_launcher.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <httplib.h>

#include "absl/strings/escaping.h"
#include "engine/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/launchers/kubernetes_fake_api.h"
#include "server/launchers/kubernetes_test_util.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kJobPath[] = "/apis/batch/v1/namespaces/accel/jobs/accel-job-7-a2";
constexpr char kServicePath[] = "/api/v1/namespaces/accel/services/accel-job-7-a2";
constexpr char kSecretPath[] = "/api/v1/namespaces/accel/secrets/accel-job-7-a2-token";
constexpr char kPods[] = "/api/v1/namespaces/accel/pods/";

class KubernetesLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTestDir();
    std::ofstream(dir_ + "/token") << "api-bearer-token\n";
    options_.api_url = api_.url();
    options_.token_file = dir_ + "/token";
    options_.ca_file = "";
    options_.kube_namespace = "accel";
    options_.image = "registry.example/accel-worker:0.1";
    options_.request_timeout = absl::Milliseconds(500);
    options_.poll_interval = absl::Seconds(2);
    auto l = KubernetesLauncher::Create(options_, &clock_);
    ASSERT_TRUE(l.ok()) << l.status();
    launcher_ = std::move(*l);
  }

  // A pod of the attempt at `index` in `phase`; `exit_code` >= 0 adds a terminated container.
  void PutPod(int index, const std::string& phase, int exit_code = -1,
              const std::string& reason = "Error") {
    const std::string name = "accel-job-7-a2-" + std::to_string(index) + "-x" + std::to_string(index);
    json status = {{"phase", phase}};
    if (exit_code >= 0) {
      json terminated = {{"exitCode", exit_code}, {"reason", reason}};
      json worker = {{"name", "worker"}, {"state", {{"terminated", terminated}}}};
      status["containerStatuses"] = json::array({worker});
    }
    api_.Put(kPods + name,
             {{"metadata",
               {{"name", name},
                {"labels",
                 {{"accel.dev/gang", "accel-job-7-a2"},
                  {"batch.kubernetes.io/job-completion-index", std::to_string(index)}}}}},
              {"status", status}});
  }
  void SetJobCondition(const std::string& type) {
    json job = *api_.Object(kJobPath);
    job["status"] = {{"conditions", {{{"type", type}, {"status", "True"}, {"reason", "R"},
                                      {"message", "M"}}}}};
    api_.Put(kJobPath, job);
  }
  PollResult PollNow() {
    clock_.Advance(absl::ToInt64Microseconds(options_.poll_interval));
    return launcher_->Poll();
  }

  FakeApiServer api_;
  testing::FakeClock clock_{1'000'000};
  std::string dir_;
  KubernetesOptions options_;
  std::unique_ptr<KubernetesLauncher> launcher_;
};

TEST_F(KubernetesLauncherTest, LaunchCreatesSecretServiceJobWithTokenOnlyInSecret) {
  absl::StatusOr<std::string> name = launcher_->Launch(TestGang(2, 2, "cpu"));
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(*name, "kubernetes job accel/accel-job-7-a2");
  EXPECT_THAT(api_.Calls("POST"),
              ::testing::ElementsAre("/api/v1/namespaces/accel/secrets",
                                     "/api/v1/namespaces/accel/services",
                                     "/apis/batch/v1/namespaces/accel/jobs"));
  const std::string token64 = absl::Base64Escape(kTestToken);
  for (const Request& r : api_.Requests()) {
    EXPECT_EQ(r.auth, "Bearer api-bearer-token") << r.path;
    const bool secret = r.method == "POST" && r.path.find("secrets") != std::string::npos;
    EXPECT_EQ(r.body.find(token64) != std::string::npos, secret) << r.path;
    EXPECT_EQ(r.body.find(kTestToken), std::string::npos) << r.path;
  }
  ASSERT_TRUE(api_.Object(kSecretPath).has_value());
  EXPECT_EQ((*api_.Object(kSecretPath))["data"]["token"], token64);
  EXPECT_EQ((*api_.Object(kJobPath))["spec"]["completions"], 2);
  EXPECT_EQ((*api_.Object(kServicePath))["spec"]["clusterIP"], "None");
  EXPECT_EQ(launcher_->live(), 4);
  EXPECT_TRUE(absl::IsFailedPrecondition(launcher_->Launch(TestGang(2, 2, "cpu")).status()));
}

TEST_F(KubernetesLauncherTest, FailedPodEndsItsRanksThenStopDeletesEverything) {
  ASSERT_TRUE(launcher_->Launch(TestGang(2, 2, "cpu")).ok());
  EXPECT_TRUE(launcher_->Pending("job-7", 2));
  PutPod(0, "Running");
  PutPod(1, "Pending");
  EXPECT_TRUE(PollNow().exits.empty());
  EXPECT_TRUE(launcher_->Pending("job-7", 2));  // pod 1 is not running yet

  PutPod(1, "Failed", 1);
  api_.SetLog("accel-job-7-a2-1-x1", "step 3\nboom: bad batch\n");
  PollResult r = PollNow();
  EXPECT_FALSE(launcher_->Pending("job-7", 2));
  ASSERT_EQ(r.exits.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(r.exits[i].job_id, "job-7");
    EXPECT_EQ(r.exits[i].attempt, 2);
    EXPECT_EQ(r.exits[i].rank, 2 + i);  // pod 1 holds ranks 2 and 3
    EXPECT_EQ(r.exits[i].exit_code, 1);
    EXPECT_EQ(r.exits[i].signal, 0);
    EXPECT_THAT(r.exits[i].log_tail, HasSubstr("boom: bad batch"));
    EXPECT_THAT(r.exits[i].log_tail, HasSubstr("accel-job-7-a2-1-x1"));
  }
  EXPECT_EQ(launcher_->live(), 2);
  EXPECT_TRUE(PollNow().exits.empty());  // reported once

  api_.ClearRequests();
  launcher_->Stop("job-7", 2, absl::Seconds(5));
  EXPECT_THAT(api_.Calls("DELETE"), ::testing::UnorderedElementsAre(kJobPath, kServicePath,
                                                                     kSecretPath));
  for (const Request& req : api_.Requests()) {
    EXPECT_EQ(json::parse(req.body)["propagationPolicy"], "Background");
  }
  r = launcher_->Poll();  // at once: no need to wait for the poll interval
  ASSERT_EQ(r.exits.size(), 2u);
  EXPECT_EQ(r.exits[0].rank, 0);
  EXPECT_EQ(r.exits[1].rank, 1);
  EXPECT_EQ(r.exits[0].signal, SIGTERM);
  EXPECT_EQ(launcher_->live(), 0);
  EXPECT_FALSE(api_.Object(kJobPath).has_value());
  EXPECT_FALSE(api_.Object(kSecretPath).has_value());
}

TEST_F(KubernetesLauncherTest, ContainerExitCodesMapToSignals) {
  ASSERT_TRUE(launcher_->Launch(TestGang(3, 1, "cpu")).ok());
  PutPod(0, "Failed", 137);
  PutPod(1, "Failed", 1, "OOMKilled");
  PutPod(2, "Failed");  // evicted: no terminated container
  PollResult r = PollNow();
  ASSERT_EQ(r.exits.size(), 3u);
  EXPECT_EQ(r.exits[0].signal, SIGKILL);
  EXPECT_EQ(r.exits[1].signal, SIGKILL);
  EXPECT_THAT(r.exits[1].log_tail, HasSubstr("OOMKilled"));
  EXPECT_EQ(r.exits[2].signal, 0);
  EXPECT_EQ(r.exits[2].exit_code, -1);
  // Every rank ended: the attempt's objects are cleaned up.
  EXPECT_EQ(launcher_->live(), 0);
  EXPECT_FALSE(api_.Object(kJobPath).has_value());
  EXPECT_FALSE(api_.Object(kServicePath).has_value());
}

TEST_F(KubernetesLauncherTest, MalformedApiObjectsAreIgnoredNotFatal) {
  ASSERT_TRUE(launcher_->Launch(TestGang(2, 1, "cpu")).ok());
  auto pod = [](json labels, json status) {
    return json{{"metadata", {{"name", "p"}, {"labels", labels}}}, {"status", status}};
  };
  const json gang = {{"accel.dev/gang", "accel-job-7-a2"}};
  json weird_index = gang;
  weird_index["batch.kubernetes.io/job-completion-index"] = "seven";
  json index0 = gang;
  index0["batch.kubernetes.io/job-completion-index"] = "0";
  api_.Put(std::string(kPods) + "a", pod(gang, 5));
  api_.Put(std::string(kPods) + "b", pod(weird_index, {{"phase", "Failed"}}));
  api_.Put(std::string(kPods) + "c",
           pod(index0, {{"phase", "Running"}, {"containerStatuses", {{"name", 3}}}}));
  json index1 = gang;
  index1["batch.kubernetes.io/job-completion-index"] = "1";
  api_.Put(std::string(kPods) + "d",
           pod(index1, {{"phase", "Running"}, {"containerStatuses", "oops"}}));
  json job = *api_.Object(kJobPath);
  job["status"] = {{"conditions", "Complete"}};
  api_.Put(kJobPath, job);
  EXPECT_TRUE(PollNow().exits.empty());
  EXPECT_EQ(launcher_->live(), 2);
  EXPECT_FALSE(launcher_->Pending("job-7", 2));  // both pods were read as Running
}

TEST_F(KubernetesLauncherTest, CompleteJobEndsEveryRankWithZeroAndCleansUp) {
  ASSERT_TRUE(launcher_->Launch(TestGang(2, 2, "cpu")).ok());
  PutPod(0, "Succeeded", 0, "Completed");
  PollResult r = PollNow();
  ASSERT_EQ(r.exits.size(), 2u);  // pod 0's ranks
  EXPECT_TRUE(r.exits[0].ok() && r.exits[1].ok());
  SetJobCondition("Complete");
  r = PollNow();
  ASSERT_EQ(r.exits.size(), 2u);
  EXPECT_EQ(r.exits[0].rank, 2);
  EXPECT_TRUE(r.exits[0].ok() && r.exits[1].ok());
  EXPECT_EQ(launcher_->live(), 0);
  EXPECT_FALSE(api_.Object(kJobPath).has_value());
  EXPECT_FALSE(api_.Object(kSecretPath).has_value());
}

TEST_F(KubernetesLauncherTest, PollsOnlyEveryInterval) {
  ASSERT_TRUE(launcher_->Launch(TestGang(1, 1, "cpu")).ok());
  api_.ClearRequests();
  launcher_->Poll();
  launcher_->Poll();
  clock_.Advance(absl::ToInt64Microseconds(options_.poll_interval) - 1);
  launcher_->Poll();
  EXPECT_EQ(api_.Calls("GET").size(), 2u);  // the Job and its pods, once
  clock_.Advance(1);
  launcher_->Poll();
  EXPECT_EQ(api_.Calls("GET").size(), 4u);
}

TEST_F(KubernetesLauncherTest, ApiErrorIsACleanStatusAndUndoesTheLaunch) {
  api_.Fail("POST", "/jobs", 403);
  absl::StatusOr<std::string> r = launcher_->Launch(TestGang(2, 1, "cpu"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("Job accel/accel-job-7-a2"));
  EXPECT_THAT(r.status().message(), HasSubstr("HTTP 403"));
  EXPECT_THAT(r.status().message(), HasSubstr("injected failure"));
  EXPECT_EQ(api_.NumObjects(), 0u);  // the Secret and Service were deleted again
  EXPECT_THAT(api_.Calls("DELETE"), ::testing::Contains(kSecretPath));
  EXPECT_EQ(launcher_->live(), 0);
}

TEST_F(KubernetesLauncherTest, ExistingSecretIsAlreadyExists) {
  api_.Put(kSecretPath, {{"metadata", {{"name", "accel-job-7-a2-token"}}}});
  absl::StatusOr<std::string> r = launcher_->Launch(TestGang(1, 1, "cpu"));
  EXPECT_TRUE(absl::IsAlreadyExists(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("Secret accel/accel-job-7-a2-token"));
}

TEST_F(KubernetesLauncherTest, SlowAndMissingServersAreDeadlineAndUnavailable) {
  api_.Fail("POST", "/secrets", 0, std::chrono::milliseconds(1500));
  absl::StatusOr<std::string> r = launcher_->Launch(TestGang(1, 1, "cpu"));
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("Secret accel/accel-job-7-a2-token"));

  KubernetesOptions o = options_;
  o.api_url = "http://127.0.0.1:1";  // nothing listens there
  auto dead = KubernetesLauncher::Create(o, &clock_);
  ASSERT_TRUE(dead.ok());
  r = (*dead)->Launch(TestGang(1, 1, "cpu"));
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_TRUE(absl::IsInvalidArgument(
      KubernetesLauncher::Create([&] { o.api_url = "ftp://x"; return o; }(), &clock_).status()));
}

TEST_F(KubernetesLauncherTest, StopRetriesAFailedDeleteBeforeReportingRanks) {
  ASSERT_TRUE(launcher_->Launch(TestGang(1, 2, "cpu")).ok());
  api_.Fail("DELETE", "/jobs/", 500);
  launcher_->Stop("job-7", 2, absl::ZeroDuration());
  EXPECT_TRUE(PollNow().exits.empty());
  EXPECT_EQ(launcher_->live(), 2);
  api_.ClearFailures();
  PollResult r = PollNow();
  ASSERT_EQ(r.exits.size(), 2u);
  EXPECT_EQ(r.exits[0].signal, SIGKILL);  // zero grace
  EXPECT_FALSE(api_.Object(kJobPath).has_value());
}

TEST_F(KubernetesLauncherTest, JobDeletedOutsideAcceldEndsTheRanks) {
  ASSERT_TRUE(launcher_->Launch(TestGang(2, 1, "cpu")).ok());
  ASSERT_TRUE(launcher_->Poll().exits.empty());
  ASSERT_TRUE(api_.Object(kJobPath).has_value());
  httplib::Client(api_.url()).Delete(kJobPath);
  PollResult r = PollNow();
  ASSERT_EQ(r.exits.size(), 2u);
  EXPECT_EQ(r.exits[0].exit_code, -1);
  EXPECT_THAT(r.exits[0].log_tail, HasSubstr("deleted outside acceld"));
}

TEST_F(KubernetesLauncherTest, LaunchSweepsJobsAnEarlierAcceldLeft) {
  const std::string old_job = "/apis/batch/v1/namespaces/accel/jobs/accel-job-7-a1";
  api_.Put(old_job, {{"metadata", {{"name", "accel-job-7-a1"}, {"labels", {{"accel.dev/job", "job-7"}}}}}});
  api_.Put("/apis/batch/v1/namespaces/accel/jobs/accel-job-8-a1",
           {{"metadata", {{"name", "accel-job-8-a1"}, {"labels", {{"accel.dev/job", "job-8"}}}}}});
  ASSERT_TRUE(launcher_->Launch(TestGang(1, 1, "cpu")).ok());
  EXPECT_FALSE(api_.Object(old_job).has_value());
  EXPECT_TRUE(api_.Object("/apis/batch/v1/namespaces/accel/jobs/accel-job-8-a1").has_value());
  EXPECT_TRUE(api_.Object(kJobPath).has_value());
}

// A self-signed certificate for 127.0.0.1 in `dir` (cert.pem, key.pem); false without openssl.
bool MakeCertificate(const std::string& dir) {
  if (access("/usr/bin/openssl", X_OK) != 0) return false;
  const std::string cmd =
      "/usr/bin/openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " + dir + "/key.pem -out " + dir +
      "/cert.pem >" + dir + "/openssl.log 2>&1";
  return std::system(cmd.c_str()) == 0;
}

TEST(KubernetesLauncherTls, VerifiesTheApiServerWithTheCaFile) {
  const std::string dir = FreshTestDir();
  std::filesystem::create_directories(dir + "/other");
  if (!MakeCertificate(dir) || !MakeCertificate(dir + "/other")) {
    GTEST_SKIP() << "no /usr/bin/openssl to make a test certificate";
  }
  FakeApiServer api(dir + "/cert.pem", dir + "/key.pem");
  testing::FakeClock clock;
  KubernetesOptions o;
  o.api_url = api.url();
  o.token_file = "";
  o.ca_file = dir + "/cert.pem";
  o.kube_namespace = "accel";
  o.image = "registry.example/accel-worker:0.1";
  o.request_timeout = absl::Seconds(5);
  auto trusted = KubernetesLauncher::Create(o, &clock);
  ASSERT_TRUE(trusted.ok()) << trusted.status();
  absl::StatusOr<std::string> r = (*trusted)->Launch(TestGang(1, 1, "cpu"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(api.Object(kJobPath).has_value());
  EXPECT_EQ(api.Requests().front().auth, "");  // no token file: no Authorization header

  o.ca_file = dir + "/other/cert.pem";  // a CA that did not sign the server's certificate
  auto untrusted = KubernetesLauncher::Create(o, &clock);
  ASSERT_TRUE(untrusted.ok());
  GangLaunch gang = TestGang(1, 1, "cpu");
  gang.attempt = 3;
  r = (*untrusted)->Launch(gang);
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("SSL"));
  EXPECT_FALSE(api.Object("/apis/batch/v1/namespaces/accel/jobs/accel-job-7-a3").has_value());
}

}  // namespace
}  // namespace accel::server

namespace accel::server {
namespace {

// --kube-token-file and --kube-ca-file are read through the credential reader: a FIFO or a
// device fails acceld's start in one line naming the flag (it used to block the launcher or
// grow acceld), a token that is not one header value is refused, and a CA file that holds no
// PEM certificate says so instead of failing later inside the TLS handshake.
TEST(KubernetesLauncherFiles, TokenAndCaFilesAreRegularFilesCheckedAtStart) {
  const std::string dir = FreshTestDir();
  testing::FakeClock clock;
  KubernetesOptions o;
  o.api_url = "http://127.0.0.1:1";
  o.kube_namespace = "accel";
  o.image = "registry.example/accel-worker:0.1";
  const std::string fifo = dir + "/token-fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero")}) {
    o.token_file = path;
    absl::Status s = KubernetesLauncher::Create(o, &clock).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr("--kube-token-file"));
    EXPECT_THAT(s.message(), HasSubstr("not a regular file"));
  }
  std::ofstream(dir + "/two-lines") << "first-part\nsecond-part\n";
  o.token_file = dir + "/two-lines";
  absl::Status s = KubernetesLauncher::Create(o, &clock).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("--kube-token-file " + dir + "/two-lines holds a character that cannot travel in a header"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("second-part")));

  std::ofstream(dir + "/token") << "api-bearer-token\n";
  o.token_file = dir + "/token";
  std::ofstream(dir + "/ca.txt") << "not a certificate\n";
  o.ca_file = dir + "/ca.txt";
  s = KubernetesLauncher::Create(o, &clock).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("--kube-ca-file"));
  EXPECT_THAT(s.message(), HasSubstr("no PEM certificate"));
  o.ca_file = "";
  EXPECT_TRUE(KubernetesLauncher::Create(o, &clock).ok());
}

}  // namespace
}  // namespace accel::server

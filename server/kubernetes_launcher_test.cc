// KubernetesLauncher against a fake API server in the test (httplib::Server on 127.0.0.1): it
// stores what is POSTed, lists and GETs it back (label selectors included), DELETEs it, serves
// pod logs, records every request and answers chosen requests with an error.
#include "server/kubernetes_launcher.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "engine/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/kubernetes_test_util.h"
#include "server/test_util.h"

namespace accel::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct Request {
  std::string method, path, query, body, auth;
};

class FakeApiServer {
 public:
  // HTTPS with `cert` and `key` (PEM files), else plain HTTP.
  explicit FakeApiServer(const std::string& cert = "", const std::string& key = "")
      : tls_(!cert.empty()),
        server_(tls_ ? std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str())
                     : std::make_unique<httplib::Server>()) {
    auto handle = [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); };
    server_->Get(".*", handle);
    server_->Post(".*", handle);
    server_->Delete(".*", handle);
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
    server_->stop();
    thread_.join();
  }
  std::string url() const {
    return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_);
  }

  // Answers requests of `method` whose path contains `path_part` with `code` (0: stop), or
  // sleeps `delay` first.
  void Fail(const std::string& method, const std::string& path_part, int code,
            std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
    std::lock_guard<std::mutex> l(mu_);
    failures_.push_back({method, path_part, code, delay});
  }
  void ClearFailures() {
    std::lock_guard<std::mutex> l(mu_);
    failures_.clear();
  }
  void Put(const std::string& path, json object) {
    std::lock_guard<std::mutex> l(mu_);
    objects_[path] = std::move(object);
  }
  std::optional<json> Object(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = objects_.find(path);
    return it == objects_.end() ? std::nullopt : std::optional<json>(it->second);
  }
  size_t NumObjects() {
    std::lock_guard<std::mutex> l(mu_);
    return objects_.size();
  }
  void SetLog(const std::string& pod, const std::string& text) {
    std::lock_guard<std::mutex> l(mu_);
    logs_[pod] = text;
  }
  std::vector<Request> Requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  std::vector<std::string> Calls(const std::string& method) {
    std::vector<std::string> out;
    for (const Request& r : Requests()) {
      if (r.method == method) out.push_back(r.path);
    }
    return out;
  }
  void ClearRequests() {
    std::lock_guard<std::mutex> l(mu_);
    requests_.clear();
  }

 private:
  struct Failure {
    std::string method, path_part;
    int code;
    std::chrono::milliseconds delay;
  };

  static void Status(httplib::Response& res, int code, const std::string& message) {
    res.status = code;
    res.set_content(json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                         {"message", message}, {"code", code}}.dump(),
                    "application/json");
  }

  void Serve(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock<std::mutex> l(mu_);
    std::string query;
    for (const auto& [k, v] : req.params) query += (query.empty() ? "" : "&") + k + "=" + v;
    requests_.push_back({req.method, req.path, query, req.body,
                         req.get_header_value("Authorization")});
    for (const Failure& f : failures_) {
      if (f.method != req.method || req.path.find(f.path_part) == std::string::npos) continue;
      if (f.delay.count() > 0) {
        l.unlock();
        std::this_thread::sleep_for(f.delay);
        l.lock();
      }
      if (f.code != 0) return Status(res, f.code, "injected failure for " + req.path);
    }
    if (req.method == "POST") {
      json body = json::parse(req.body);
      const std::string path = req.path + "/" + body["metadata"]["name"].get<std::string>();
      if (objects_.count(path) != 0) return Status(res, 409, path + " already exists");
      objects_[path] = body;
      res.status = 201;
      return res.set_content(body.dump(), "application/json");
    }
    if (req.method == "DELETE") {
      if (objects_.erase(req.path) == 0) return Status(res, 404, req.path + " not found");
      return res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
    }
    if (req.path.size() > 4 && req.path.substr(req.path.size() - 4) == "/log") {
      const std::string pod = std::vector<std::string>(absl::StrSplit(req.path, '/')).end()[-2];
      return res.set_content(logs_[pod], "text/plain");
    }
    if (auto it = objects_.find(req.path); it != objects_.end()) {
      return res.set_content(it->second.dump(), "application/json");
    }
    // A collection: the objects below the path that match the label selector.
    json items = json::array();
    const std::string selector = req.get_param_value("labelSelector");
    const std::vector<std::string> kv = absl::StrSplit(selector, '=');
    for (const auto& [path, o] : objects_) {
      if (path.rfind(req.path + "/", 0) != 0) continue;
      const json& labels = o["metadata"]["labels"];
      if (!selector.empty() && (!labels.is_object() || labels.value(kv[0], "") != kv[1])) {
        continue;
      }
      items.push_back(o);
    }
    if (items.empty() && selector.empty()) return Status(res, 404, req.path + " not found");
    res.set_content(json{{"kind", "List"}, {"items", items}}.dump(), "application/json");
  }

  const bool tls_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, json> objects_;
  std::map<std::string, std::string> logs_;
  std::vector<Request> requests_;
  std::vector<Failure> failures_;
};

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

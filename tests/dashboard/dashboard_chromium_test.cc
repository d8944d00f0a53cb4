// The dashboard in a real browser: an in-process acceld trains a tiny GPT-2 with two real
// accel-worker ranks, its HTTP side (--http-listen: the token login, then server/http/dashboard.h's
// routes) serves the record, and headless Chromium loads the pages, runs their scripts and hands back the DOM, in which every chart says
// how many points it drew. Also writes a screenshot of the job's page (docs/images/dashboard.png
// is one of these).
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "accel/v1/coordinator.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "rpc/memory_stats.h"
#include "rpc/memory_stats_test_util.h"
#include "server/acceld.h"
#include "server/services/convert.h"
#include "server/http/dashboard_test_util.h"
#include "tests/e2e/process.h"

namespace accel::server {
namespace {

namespace fs = std::filesystem;
namespace v1 = accel::v1;

constexpr int kSteps = 40;

std::string FreshDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / ("accel_dashboard_" + std::to_string(getpid())) /
                 info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// The first `chromium` on PATH, or "".
std::string FindChromium() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir) / "chromium";
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

// The integer attribute `attr` of the element whose data-chart (or other `key`) is `name`,
// as the DOM dump serialises it; -1 when absent.
int64_t AttrOf(const std::string& dom, const std::string& key, const std::string& name,
               const std::string& attr) {
  const std::regex element("<[a-z]+ [^>]*" + key + "=\"" + name + "\"[^>]*>");
  std::smatch tag;
  if (!std::regex_search(dom, tag, element)) return -1;
  const std::string text = tag.str();
  std::smatch value;
  if (!std::regex_search(text, value, std::regex(attr + "=\"(\\d+)\""))) return -1;
  return std::stoll(value[1]);
}

class DashboardChromiumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) GTEST_SKIP() << "no chromium on PATH (scripts/install-deps.sh installs it)";
    dir_ = FreshDir();
  }

  // Submits the job file through gRPC, as accelctl would; returns the job's id ("" on error).
  static std::string Submit(Acceld& d, const std::string& job_file) {
    auto stub = v1::Coordinator::NewStub(*rpc::MakeChannel(d.address()));
    grpc::ClientContext ctx;
    rpc::Authorize(ctx, d.client_token());
    v1::SubmitJobRequest req;
    req.set_job_file(job_file);
    v1::SubmitJobResponse resp;
    grpc::Status submitted = stub->SubmitJob(&ctx, req, &resp);
    EXPECT_TRUE(submitted.ok()) << submitted.error_message();
    return resp.job().id();
  }

  // Runs chromium with `args` then `url`; returns its stdout (empty on failure, with the reason
  // recorded).
  std::string Chromium(std::vector<std::string> args, const std::string& url,
                       const std::string& name) {
    std::vector<std::string> argv = {chromium_, "--headless", "--no-sandbox", "--disable-gpu",
                                     "--no-first-run", "--disable-dev-shm-usage",
                                     "--user-data-dir=" + dir_ + "/chromium-profile",
                                     "--virtual-time-budget=8000"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(url);
    testing::ChildProcess child = testing::StartProcess(argv, dir_, name);
    const int code = testing::WaitProcess(child, 120);
    EXPECT_EQ(code, 0) << "chromium " << name << ": " << testing::ReadAll(child.stderr_path);
    return code == 0 ? testing::ReadAll(child.stdout_path) : "";
  }

  std::string dir_, chromium_;
};

TEST_F(DashboardChromiumTest, ChartsEveryRecordOfATrainedJob) {
  std::unique_ptr<Acceld> daemon = StartTestAcceld(dir_, ACCEL_WORKER_BIN, /*http=*/true);
  ASSERT_NE(daemon, nullptr);
  Acceld& d = *daemon;
  const std::string job_file = dir_ + "/tiny.yaml";
  std::ofstream(job_file) << "name: dashboard-demo\ndata: {path: " << ACCEL_DATA << "}\n"
                          << "model: {preset: gpt2-tiny}\n"
                          << "train: {steps: " << kSteps
                          << ", micro_batch: 2, seq_len: 32, log_every: 1, lr: 0.003, "
                             "schedule: cosine, warmup: 5, sample_every: 10, "
                             "sample_prompt: \"ab\", sample_max_new_tokens: 8}\n"
                          << "checkpoint: {dir: ckpt, every_n_steps: 10, keep_last: 2}\n"
                          << "eval: {data: {path: " << ACCEL_DATA
                          << "}, every_n_steps: 10, max_batches: 4, at_start: true}\n"
                          << "resources: {num_processes: 2}\nsharding: {strategy: full_shard}\n";
  const std::string id = Submit(d, job_file);
  ASSERT_FALSE(id.empty());

  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(240 * testing::TimeScale());
  absl::StatusOr<JobRecord> job = d.registry().Get(id);
  while (job.ok() && !IsTerminal(job->state) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    job = d.registry().Get(id);
  }
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state, JobState::kSucceeded) << JobStateName(job->state) << ": " << job->error;

  absl::StatusOr<std::vector<Event>> events = d.events().Read(id, 0, 1000000);
  ASSERT_TRUE(events.ok()) << events.status();
  int64_t metrics = 0, memory = 0, checkpoints = 0, evals = 0, samples = 0;
  for (const Event& e : *events) {
    evals += e.kind == EventKind::kEval;
    samples += e.kind == EventKind::kSample;
    metrics += e.kind == EventKind::kMetrics;
    memory += e.kind == EventKind::kMemory;
    checkpoints += e.kind == EventKind::kCheckpoint;
  }
  ASSERT_EQ(metrics, kSteps) << "log_every 1: one metrics event per step";
  ASSERT_GT(memory, 2 * 2) << "memory records of both ranks, after setup and on the way";
  ASSERT_GE(checkpoints, 4) << "every 10 of 40 steps";
  ASSERT_EQ(evals, kSteps / 10 + 1) << "the starting weights and every 10 steps";
  ASSERT_EQ(samples, kSteps / 10) << "train.sample_every 10, from rank 0 only";

  // acceld's own HTTP side, as a user opens it: once with the token in the address (acceld
  // sets the login cookie and redirects to the page, which keeps the fragment), then the page's
  // requests carry the cookie.
  const std::string home = "http://" + d.http_address() + "/?token=" + d.client_token();
  const std::string page = home + "#job/" + id;
  const std::string dom = Chromium({"--dump-dom"}, page, "chromium-job-dom");
  ASSERT_FALSE(dom.empty());
  EXPECT_EQ(AttrOf(dom, "data-chart", "loss", "data-points"), metrics) << dom.substr(0, 4000);
  // Issue 31: the eval loss beside the training loss, one point per evaluation.
  EXPECT_EQ(AttrOf(dom, "data-chart", "eval_loss", "data-points"), evals);
  // train.sample_every: the samples list under the charts, the newest first.
  EXPECT_EQ(AttrOf(dom, "class", "samples", "data-samples"), samples);
  const size_t newest = dom.find("data-step=\"" + std::to_string(kSteps) + "\"");
  const size_t oldest = dom.find("data-step=\"10\"");
  ASSERT_NE(newest, std::string::npos);
  ASSERT_NE(oldest, std::string::npos);
  EXPECT_LT(newest, oldest);
  EXPECT_THAT(dom, ::testing::HasSubstr("Samples (newest 4 of 4)"));
  for (const char* chart : {"lr", "grad_norm", "tokens_per_s"}) {
    EXPECT_EQ(AttrOf(dom, "data-chart", chart, "data-points"), metrics) << chart;
  }
  EXPECT_EQ(AttrOf(dom, "data-chart", "memory", "data-points"), memory);
  EXPECT_EQ(AttrOf(dom, "data-chart", "memory-rank-0", "data-points") +
                AttrOf(dom, "data-chart", "memory-rank-1", "data-points"),
            memory);
  EXPECT_EQ(AttrOf(dom, "data-chart", "checkpoints", "data-points"), checkpoints);
  EXPECT_EQ(AttrOf(dom, "class", "event-log", "data-events"),
            static_cast<int64_t>(events->size()));
  EXPECT_THAT(dom, ::testing::HasSubstr("SUCCEEDED"));

  // The list: one row for the job, linking to its page.
  const std::string list = Chromium({"--dump-dom"}, home, "chromium-list-dom");
  EXPECT_EQ(AttrOf(list, "class", "jobs", "data-rows"), 1) << list.substr(0, 4000);
  EXPECT_THAT(list, ::testing::HasSubstr("href=\"#job/" + id + "\""));
  EXPECT_THAT(list, ::testing::HasSubstr(std::to_string(kSteps) + " / " + std::to_string(kSteps)));

  const fs::path out_dir = ACCEL_TEST_OUTPUT_DIR;
  fs::create_directories(out_dir);
  const fs::path png = out_dir / "dashboard.png";
  fs::remove(png);
  Chromium({"--screenshot=" + png.string(), "--window-size=1400,1000", "--hide-scrollbars"}, page,
           "chromium-screenshot");
  ASSERT_TRUE(fs::exists(png)) << png;
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  EXPECT_GT(fs::file_size(png), 20000u) << "a page with charts is more than a blank image";
  // The whole page and the list too, for a person to look at (not checked).
  Chromium({"--screenshot=" + (out_dir / "dashboard-full.png").string(), "--window-size=1400,2600",
            "--hide-scrollbars"}, page, "chromium-screenshot-full");
  Chromium({"--screenshot=" + (out_dir / "dashboard-list.png").string(), "--window-size=1400,600",
            "--hide-scrollbars"}, home, "chromium-screenshot-list");
}

// Records as stored before issue 29, the ledger as JSON with the compute pool called "device"
// (rank 0), and typed as workers send them now (rank 1): one series per pool and category,
// "compute" for both; a non-finite loss is left out of the chart.
TEST_F(DashboardChromiumTest, ReadsBothPoolNamesAndSkipsNonFiniteLosses) {
  std::unique_ptr<Acceld> daemon = StartTestAcceld(dir_, WriteIdleWorker(dir_));
  ASSERT_NE(daemon, nullptr);
  Acceld& d = *daemon;
  const std::string job_file = dir_ + "/idle.yaml";
  std::ofstream(job_file) << "name: recorded\ndata: {path: " << ACCEL_DATA << "}\n"
                          << "model: {preset: gpt2-tiny}\nresources: {num_processes: 2}\n";
  const std::string id = Submit(d, job_file);
  ASSERT_FALSE(id.empty());
  std::vector<Event> events;
  auto add = [&](int rank, EventKind kind, const google::protobuf::Message& body) {
    events.push_back(Event{.job_id = id, .attempt = 1, .rank = rank, .kind = kind,
                           .body_json = MessageToJson(body)});
  };
  for (int step = 0; step < 6; ++step) {
    v1::MetricsEvent m;
    m.set_step(step);
    m.set_total_steps(6);
    m.set_loss(step == 3 ? std::nanf("") : 4.0f - 0.1f * step);
    add(0, EventKind::kMetrics, m);
  }
  MemoryLedger ledger;
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 4096);
  ledger.Charge(MemoryPool::kHost, MemoryCategory::kGrads, 1024);
  v1::MemoryEvent typed;
  rpc::LedgerToProto(ledger, &typed);
  for (int i = 0; i < 3; ++i) {
    events.push_back(Event{.job_id = id, .attempt = 1, .rank = 0, .kind = EventKind::kMemory,
                           .body_json = rpc::testing::StoredBeforeIssue29(
                               {}, R"({"device":{"params":{"current":4096,"peak":4096}},)"
                                   R"("host":{"grads":{"current":1024,"peak":1024}}})")});
    add(1, EventKind::kMemory, typed);
  }
  ASSERT_TRUE(d.events().Append(events).ok());

  DashboardTestServer http(DepsOf(d));
  const std::string dom = Chromium({"--dump-dom"}, http.url() + "/#job/" + id, "chromium-dom");
  ASSERT_FALSE(dom.empty());
  EXPECT_EQ(AttrOf(dom, "data-chart", "loss", "data-points"), 5) << dom.substr(0, 4000);
  EXPECT_EQ(AttrOf(dom, "data-chart", "memory", "data-points"), 6);
  EXPECT_EQ(AttrOf(dom, "data-chart", "memory-rank-0", "data-points"), 3);
  EXPECT_EQ(AttrOf(dom, "data-chart", "memory-rank-1", "data-points"), 3);
  EXPECT_THAT(dom, ::testing::HasSubstr("compute/params"));
  EXPECT_THAT(dom, ::testing::HasSubstr("host/grads"));
  EXPECT_THAT(dom, ::testing::Not(::testing::HasSubstr("device/params")));
}

}  // namespace
}  // namespace accel::server

// The dashboard's JSON API and static files over HTTP, against an in-process acceld whose job
// never runs (its "worker" only sleeps): the events are appended here, as workers would send.
#include <chrono>
#include <fstream>
#include <thread>

#include "accel/v1/coordinator.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "rpc/channel.h"
#include "job/job_file.h"
#include "rpc/memory_stats.h"
#include "rpc/memory_stats_test_util.h"
#include "server/acceld.h"
#include "server/services/convert.h"
#include "server/http/dashboard_test_util.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace v1 = accel::v1;

class DashboardApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = FreshTestDir();
    std::ofstream(dir + "/data.txt") << "hello world\n";
    daemon_ = StartTestAcceld(dir, WriteIdleWorker(dir));
    ASSERT_NE(daemon_, nullptr);

    v1::JobSpec spec = job::DefaultJobSpec();
    spec.set_name("dash");
    spec.mutable_data()->set_path(dir + "/data.txt");
    spec.mutable_resources()->set_num_processes(2);
    auto stub = v1::Coordinator::NewStub(*rpc::MakeChannel(daemon_->address()));
    grpc::ClientContext ctx;
    rpc::Authorize(ctx, daemon_->client_token());
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    v1::SubmitJobResponse resp;
    grpc::Status s = stub->SubmitJob(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    job_id_ = resp.job().id();
    // The control loop starts the job (a STARTING state event) on its own thread; the tests
    // count events, so they begin once it has. The idle workers never register, so nothing
    // else comes after it.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    absl::StatusOr<JobRecord> job = daemon_->registry().Get(job_id_);
    while (job.ok() && job->state == JobState::kQueued &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      job = daemon_->registry().Get(job_id_);
    }
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_EQ(job->state, JobState::kStarting);

    server_ = std::make_unique<DashboardTestServer>(DepsOf(*daemon_));
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
    daemon_.reset();
  }

  void Append(EventKind kind, int rank, const google::protobuf::Message& body) {
    AppendBody(kind, rank, MessageToJson(body));
  }
  void AppendBody(EventKind kind, int rank, std::string body_json) {
    Event e;
    e.job_id = job_id_;
    e.attempt = 1;
    e.rank = rank;
    e.kind = kind;
    e.body_json = std::move(body_json);
    ASSERT_TRUE(daemon_->events().Append(e).ok());
  }
  // Three metrics steps, a memory record per rank, one checkpoint.
  void AppendTraining() {
    for (int step = 0; step < 3; ++step) {
      v1::MetricsEvent m;
      m.set_step(step);
      m.set_total_steps(3);
      m.set_loss(5.0f - step);
      m.set_lr(0.001f);
      m.set_tokens_per_s(1000 + step);
      Append(EventKind::kMetrics, 0, m);
    }
    // Rank 0 sends its ledger typed; rank 1's record is as stored before issue 29 (the ledger
    // as JSON, the compute pool called "device"). Both hold 100 bytes of compute params.
    MemoryLedger ledger;
    ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 100);
    v1::MemoryEvent mem;
    mem.set_step(2);
    rpc::LedgerToProto(ledger, &mem);
    Append(EventKind::kMemory, 0, mem);
    AppendBody(EventKind::kMemory, 1, rpc::testing::StoredBeforeIssue29(mem,
        R"({"device":{"params":{"current":100,"peak":100},"total":{"current":100,"peak":100}}})"));
    v1::CheckpointEvent c;
    c.set_step(3);
    c.set_bytes(4096);
    c.set_seconds(0.25);
    c.set_path("/ckpt/step-3");
    Append(EventKind::kCheckpoint, 0, c);
    ASSERT_TRUE(daemon_->store()
                    .AddCheckpoint({job_id_, 1, 3, "/ckpt/step-3", "sharded", 4096, 0.25, 77})
                    .ok());
  }

  // GET `path`: the status, and the body parsed as JSON (null when it is not JSON).
  std::pair<int, json> Get(const std::string& path) {
    httplib::Result res = client_->Get(path.c_str());
    if (!res) {
      ADD_FAILURE() << "GET " << path << ": " << httplib::to_string(res.error());
      return {0, json()};
    }
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json") << path;
    return {res->status, json::parse(res->body, nullptr, /*allow_exceptions=*/false)};
  }

  std::unique_ptr<Acceld> daemon_;
  std::string job_id_;
  std::unique_ptr<DashboardTestServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(DashboardApiTest, ListsJobsWithTheirNewestMetrics) {
  auto [status, before] = Get("/api/v1/jobs");
  ASSERT_EQ(status, 200) << before;
  ASSERT_EQ(before["jobs"].size(), 1u);
  EXPECT_EQ(before["jobs"][0]["id"], job_id_);
  EXPECT_EQ(before["jobs"][0]["spec"]["name"], "dash");
  EXPECT_TRUE(before["metrics"].empty()) << "no metrics before the first step";

  AppendTraining();
  auto [status2, after] = Get("/api/v1/jobs");
  ASSERT_EQ(status2, 200);
  const json& job = after["jobs"][0];
  // proto3 JSON: int64 as a string; the last of the 7 events appended (the state events of
  // submit and start come first).
  absl::StatusOr<int64_t> last = daemon_->events().LastSeq(job_id_);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(job["last_seq"], std::to_string(*last));
  EXPECT_EQ(after["metrics"][job_id_]["step"], "2");
  EXPECT_EQ(after["metrics"][job_id_]["loss"], 3.0);
  EXPECT_EQ(after["metrics"][job_id_]["tokens_per_s"], 1002.0);
}

TEST_F(DashboardApiTest, GetsOneJobAndRefusesUnknownOrBadIds) {
  auto [status, job] = Get("/api/v1/jobs/" + job_id_);
  ASSERT_EQ(status, 200) << job;
  EXPECT_EQ(job["id"], job_id_);
  EXPECT_EQ(job["plan"]["world_size"], 2);

  auto [missing_status, missing] = Get("/api/v1/jobs/job-999");
  EXPECT_EQ(missing_status, 404);
  EXPECT_EQ(missing["error"]["code"], "NOT_FOUND");
  EXPECT_THAT(missing["error"]["message"].get<std::string>(), HasSubstr("job-999"));

  const std::string too_long(job::kMaxJobIdBytes + 1, 'x');
  for (const std::string& route : {"/api/v1/jobs/" + too_long, "/api/v1/jobs/" + too_long + "/events",
                                   "/api/v1/jobs/" + too_long + "/checkpoints"}) {
    auto [bad_status, bad] = Get(route);
    EXPECT_EQ(bad_status, 400) << route;
    EXPECT_EQ(bad["error"]["code"], "INVALID_ARGUMENT") << route;
  }
  EXPECT_EQ(Get("/api/v1/jobs/job-999/events").first, 404);
  EXPECT_EQ(Get("/api/v1/jobs/job-999/checkpoints").first, 404);
  auto [no_route_status, no_route] = Get("/api/v1/nothing");
  EXPECT_EQ(no_route_status, 404);
  EXPECT_EQ(no_route["error"]["code"], "NOT_FOUND");
}

TEST_F(DashboardApiTest, ABadlyEncodedIdIs400AndOtherMethodsAre405) {
  // A byte 0xff in the id: the client's error (it was a 500 when the JSON error could not
  // carry it), refused by the server's parser before the routes, in text/plain.
  for (const char* path : {"/api/v1/jobs/job-%ff", "/api/v1/jobs/job-%ff/events"}) {
    httplib::Result res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path;
    EXPECT_THAT(res->body, HasSubstr("does not decode to UTF-8")) << path;
  }
  for (const char* method : {"POST", "PUT", "DELETE"}) {
    for (const std::string& path : {std::string("/api/v1/jobs"), "/api/v1/jobs/" + job_id_,
                                     std::string("/api/v1/cluster")}) {
      httplib::Request req;
      req.method = method;
      req.path = path;
      httplib::Result res = client_->send(req);
      ASSERT_TRUE(res) << method << " " << path;
      EXPECT_EQ(res->status, 405) << method << " " << path;
      EXPECT_EQ(res->get_header_value("Allow"), "GET, HEAD") << method << " " << path;
    }
  }
}

TEST_F(DashboardApiTest, PagesThroughEventsAfterASequenceNumber) {
  AppendTraining();
  absl::StatusOr<int64_t> last = daemon_->events().LastSeq(job_id_);
  ASSERT_TRUE(last.ok());
  auto [status, all] = Get("/api/v1/jobs/" + job_id_ + "/events");
  ASSERT_EQ(status, 200) << all;
  ASSERT_EQ(all["events"].size(), static_cast<size_t>(*last));
  EXPECT_EQ(all["last_seq"], *last);
  int metrics = 0, memory = 0, checkpoints = 0;
  for (size_t i = 0; i < all["events"].size(); ++i) {
    const json& e = all["events"][i];
    EXPECT_EQ(e["seq"], std::to_string(i + 1));
    EXPECT_EQ(e["job_id"], job_id_);
    metrics += e.contains("metrics");
    memory += e.contains("memory");
    checkpoints += e.contains("checkpoint");
  }
  EXPECT_EQ(metrics, 3);
  EXPECT_EQ(memory, 2);
  // The API's memory records carry typed pools (the page reads these fields), the old stored
  // one too; none carries the ledger as a JSON string.
  for (const json& e : all["events"]) {
    if (!e.contains("memory")) continue;
    const json& compute = e["memory"]["pools"][0];
    EXPECT_EQ(compute["pool"], "MEMORY_POOL_COMPUTE") << e.dump();
    EXPECT_EQ(compute["categories"][0]["category"], "MEMORY_CATEGORY_PARAMS") << e.dump();
    EXPECT_EQ(compute["categories"][0]["current"], "100") << e.dump();
    EXPECT_EQ(compute["total_peak"], "100") << e.dump();
    EXPECT_FALSE(e["memory"].contains("ledger_json")) << e.dump();
  }
  EXPECT_EQ(checkpoints, 1);
  EXPECT_EQ(all["events"].back()["checkpoint"]["bytes"], "4096");

  auto [page_status, page] =
      Get("/api/v1/jobs/" + job_id_ + "/events?after=" + std::to_string(*last - 3) + "&limit=2");
  ASSERT_EQ(page_status, 200);
  ASSERT_EQ(page["events"].size(), 2u);
  EXPECT_EQ(page["events"][0]["seq"], std::to_string(*last - 2));
  EXPECT_EQ(page["last_seq"], *last);
  auto [end_status, end] = Get("/api/v1/jobs/" + job_id_ + "/events?after=" + std::to_string(*last));
  EXPECT_EQ(end_status, 200);
  EXPECT_TRUE(end["events"].empty());

  for (const char* query : {"?limit=abc", "?limit=0", "?limit=-5", "?after=x"}) {
    auto [bad_status, bad] = Get("/api/v1/jobs/" + job_id_ + "/events" + query);
    EXPECT_EQ(bad_status, 400) << query;
    EXPECT_EQ(bad["error"]["code"], "INVALID_ARGUMENT") << query;
  }
}

TEST_F(DashboardApiTest, CapsAPageOfEventsAtTenThousand) {
  std::vector<Event> batch(10050);
  for (Event& e : batch) {
    e.job_id = job_id_;
    e.kind = EventKind::kLog;
    e.body_json = R"({"stream":"stdout","line":"x"})";
  }
  ASSERT_TRUE(daemon_->events().Append(batch).ok());
  auto [status, page] = Get("/api/v1/jobs/" + job_id_ + "/events?limit=20000");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(page["events"].size(), 10000u);
  auto [default_status, default_page] = Get("/api/v1/jobs/" + job_id_ + "/events");
  EXPECT_EQ(default_page["events"].size(), 1000u);
}

TEST_F(DashboardApiTest, ListsCheckpointsAndTheCluster) {
  AppendTraining();
  auto [status, list] = Get("/api/v1/jobs/" + job_id_ + "/checkpoints");
  ASSERT_EQ(status, 200) << list;
  ASSERT_EQ(list["checkpoints"].size(), 1u);
  EXPECT_EQ(list["checkpoints"][0]["path"], "/ckpt/step-3");
  EXPECT_EQ(list["checkpoints"][0]["bytes"], "4096");
  EXPECT_EQ(list["checkpoints"][0]["seconds"], 0.25);

  auto [cluster_status, cluster] = Get("/api/v1/cluster");
  ASSERT_EQ(cluster_status, 200) << cluster;
  EXPECT_EQ(cluster["version"], "accel dashboard test");
  EXPECT_EQ(cluster["total_slots"], 2);
  EXPECT_EQ(cluster["pools"][0]["device"], "cpu");
}

TEST_F(DashboardApiTest, ServesThePageItsScriptAndStyleSheet) {
  struct Expected {
    const char* path;
    const char* content_type;
    const char* snippet;
  };
  for (const Expected& want :
       {Expected{"/", "text/html; charset=utf-8", R"(<script src="/dashboard.js">)"},
        Expected{"/dashboard.js", "text/javascript; charset=utf-8", "function lineChart("},
        Expected{"/dashboard.css", "text/css; charset=utf-8", ".chart-svg"}}) {
    httplib::Result res = client_->Get(want.path);
    ASSERT_TRUE(res) << want.path;
    EXPECT_EQ(res->status, 200) << want.path;
    EXPECT_EQ(res->get_header_value("Content-Type"), want.content_type) << want.path;
    EXPECT_THAT(res->body, HasSubstr(want.snippet)) << want.path;
  }
  // dashboard.js is every file of server/http/web/js, in order: the router comes after the views.
  httplib::Result js = client_->Get("/dashboard.js");
  ASSERT_TRUE(js);
  EXPECT_LT(js->body.find("class JobListView"), js->body.find("class JobPageView"));
}

}  // namespace
}  // namespace accel::server

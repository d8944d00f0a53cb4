// /metrics from acceld's state: jobs by state, per-job and per-rank series of running jobs from
// their events (JobTelemetry), RPC counters; and through a real in-process acceld with
// --http-listen: the token, /healthz, and the RPC interceptor counting a real SubmitJob.
#include "server/http/metrics_page.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "rpc/channel.h"
#include "job/job_file.h"
#include "server/acceld.h"
#include "server/http/metrics_fixture.h"
#include "server/core/test_util.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(JobTelemetryTest, KeepsTheNewestNumbersAndForgetsAJobWhenItEnds) {
  testing::MetricsFixture f;
  ASSERT_TRUE(f.ok()) << f.error();
  const std::string id = f.AddRunning("a", 2, 3);
  ASSERT_TRUE(f.ok()) << f.error();
  bool seen = f.telemetry().Visit(id, [](const JobTelemetrySnapshot& t) {
    EXPECT_TRUE(t.has_metrics);
    EXPECT_EQ(t.step, 2);
    EXPECT_FLOAT_EQ(static_cast<float>(t.loss), 3.98f);
    EXPECT_EQ(t.loss_scale, 65536);
    EXPECT_EQ(t.checkpoints, 1);
    EXPECT_EQ(t.checkpoint_bytes, 1 << 20);
    ASSERT_EQ(t.ranks.size(), 2u);
    // The old "device" key is read as the compute pool.
    EXPECT_EQ(t.ranks.at(1).memory.at("compute").at("params").peak, 400);
    EXPECT_EQ(t.ranks.at(1).memory.at("host").at("optimizer_state").current, 4096);
    EXPECT_EQ(t.ranks.at(1).step_bytes_received, 2001);
  });
  EXPECT_TRUE(seen);
  ASSERT_TRUE(f.registry().Transition(id, JobState::kSucceeded, "").ok());
  EXPECT_FALSE(f.telemetry().Visit(id, [](const JobTelemetrySnapshot&) {}));
}

// The same ledger sent typed (rank 0) and stored before issue 29 as ledger_json (rank 1):
// /metrics reads the same figures from both, every pool, category and total.
TEST(JobTelemetryTest, ATypedRecordAndAnOldLedgerJsonRecordGiveTheSameFigures) {
  MemoryLedger ledger;
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 5 << 20);
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kActivations, 2 << 20);
  ledger.Release(MemoryPool::kDevice, MemoryCategory::kActivations, 2 << 20);
  ledger.Charge(MemoryPool::kHost, MemoryCategory::kOptimizerState, 3 << 10);
  ledger.Charge(MemoryPool::kNvme, MemoryCategory::kOther, 77);
  accel::v1::MemoryEvent typed;
  rpc::LedgerToProto(ledger, &typed);
  std::vector<Event> events(2);
  for (int rank = 0; rank < 2; ++rank) {
    events[rank].job_id = "job-9";
    events[rank].seq = rank + 1;
    events[rank].attempt = 1;
    events[rank].rank = rank;
    events[rank].kind = EventKind::kMemory;
  }
  events[0].body_json = MessageToJson(typed);
  events[1].body_json = rpc::testing::StoredBeforeIssue29({}, ledger.ToJson());
  JobTelemetry telemetry;
  telemetry.Observe(events);
  ASSERT_TRUE(telemetry.Visit("job-9", [](const JobTelemetrySnapshot& t) {
    ASSERT_EQ(t.ranks.size(), 2u);
    const auto& now = t.ranks.at(0).memory;
    const auto& old = t.ranks.at(1).memory;
    ASSERT_EQ(now.size(), 3u);
    for (const auto& [pool, categories] : now) {
      ASSERT_EQ(categories.size(), 7u) << pool;  // six categories and the total
      for (const auto& [category, counts] : categories) {
        const MemoryCounts& before = old.at(pool).at(category);
        EXPECT_EQ(counts.current, before.current) << pool << "/" << category;
        EXPECT_EQ(counts.peak, before.peak) << pool << "/" << category;
      }
    }
    EXPECT_EQ(old.size(), now.size());
    EXPECT_EQ(now.at("compute").at("activations").peak, 2 << 20);
    EXPECT_EQ(now.at("compute").at("total").peak, 7 << 20);
    EXPECT_EQ(now.at("nvme").at("other").current, 77);
  }));
}

// A stored record whose old ledger JSON is damaged is still an event (EventToProto reads it,
// no DataLoss): no pools, its totals kept, and /metrics has no memory samples for the rank.
TEST(JobTelemetryTest, AStoredRecordWithADamagedLedgerJsonReadsAsNoPools) {
  accel::v1::MemoryEvent fields;
  fields.set_device_peak(123);
  Event e;
  e.job_id = "job-9";
  e.seq = 1;
  e.attempt = 1;
  e.rank = 0;
  e.kind = EventKind::kMemory;
  e.body_json = rpc::testing::StoredBeforeIssue29(fields, "{\"compute\":{\"params\":");
  absl::StatusOr<accel::v1::Event> p = EventToProto(e);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->memory().pools_size(), 0);
  EXPECT_EQ(p->memory().device_peak(), 123);
  JobTelemetry telemetry;
  telemetry.Observe({e});
  ASSERT_TRUE(telemetry.Visit("job-9", [](const JobTelemetrySnapshot& t) {
    ASSERT_EQ(t.ranks.size(), 1u);
    EXPECT_TRUE(t.ranks.at(0).memory.empty());
  }));
}

TEST(MetricsPageTest, RendersJobsByStateAndTheSeriesOfRunningJobsAndRanks) {
  testing::MetricsFixture f;
  ASSERT_TRUE(f.ok()) << f.error();
  f.AddQueued("waiting", 4);
  f.AddQueued("waiting too", 1);
  const std::string id = f.AddRunning("train \"big\"", 2, 5);
  ASSERT_TRUE(f.ok()) << f.error();
  RpcMetrics rpc;
  rpc.Record("/accel.v1.Coordinator/SubmitJob", grpc::StatusCode::OK, 0.002);
  rpc.Record("/accel.v1.Coordinator/SubmitJob", grpc::StatusCode::INVALID_ARGUMENT, 0.001);
  MetricsSources sources = f.Sources(8, 2);
  sources.rpc = &rpc;
  const std::string text = RenderMetrics(sources);

  EXPECT_THAT(text, HasSubstr("# TYPE accel_jobs gauge\n"));
  EXPECT_THAT(text, HasSubstr("accel_jobs{state=\"queued\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("accel_jobs{state=\"running\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("accel_jobs{state=\"failed\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("accel_slots{pool=\"cpu\"} 8\n"));
  EXPECT_THAT(text, HasSubstr("accel_slots_in_use{pool=\"cpu\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("accel_job_info{job_id=\"" + id +
                              "\",job_name=\"train \\\"big\\\"\",state=\"running\"} 1\n"));
  const std::string job = "{job_id=\"" + id + "\"}";
  EXPECT_THAT(text, HasSubstr("accel_job_step" + job + " 4\n"));
  EXPECT_THAT(text, HasSubstr("accel_job_loss" + job + " 3.96"));
  EXPECT_THAT(text, HasSubstr("accel_job_tokens_per_second" + job + " 1234.5\n"));
  EXPECT_THAT(text, HasSubstr("accel_job_loss_scale" + job + " 65536\n"));
  EXPECT_THAT(text, HasSubstr("accel_job_exposed_communication_seconds" + job + " 0.05"));
  EXPECT_THAT(text, HasSubstr("# TYPE accel_job_restarts_total counter\n"));
  EXPECT_THAT(text, HasSubstr("accel_job_checkpoint_bytes_total" + job + " 1048576\n"));
  EXPECT_THAT(text, HasSubstr("accel_rank_memory_bytes{job_id=\"" + id +
                              "\",rank=\"1\",pool=\"compute\",category=\"params\"} 200\n"));
  EXPECT_THAT(text, HasSubstr("accel_rank_memory_peak_bytes{job_id=\"" + id +
                              "\",rank=\"0\",pool=\"host\",category=\"optimizer_state\"} 4096\n"));
  EXPECT_THAT(text, HasSubstr("accel_rank_step_sent_bytes{job_id=\"" + id + "\",rank=\"1\"} 1001\n"));
  EXPECT_THAT(text, HasSubstr("accel_rpc_requests_total{service=\"accel.v1.Coordinator\","
                              "method=\"SubmitJob\",code=\"INVALID_ARGUMENT\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("accel_rpc_duration_seconds_count{service=\"accel.v1.Coordinator\","
                              "method=\"SubmitJob\"} 2\n"));
  // Queued jobs have no per-job series; no family is announced twice.
  EXPECT_THAT(text, Not(HasSubstr("job_id=\"job-1\"")));
  std::set<std::string> families;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    EXPECT_TRUE(families.insert(line.substr(7, line.find(' ', 7) - 7)).second) << line;
  }
}

TEST(AcceldHttpTest, ServesMetricsWithTheTokenAndCountsRealRpcs) {
  const std::string dir = FreshTestDir();
  const std::string worker = dir + "/fake-worker.sh";  // never registers: the job stays STARTING
  std::ofstream(worker) << "#!/bin/sh\nexec sleep 30\n";
  chmod(worker.c_str(), 0755);
  std::ofstream(dir + "/data.txt") << "hello world\n";
  AcceldOptions o;
  o.listen = "127.0.0.1:0";
  o.state_dir = dir + "/state";
  o.cpu_slots = 2;
  o.worker_bin = worker;
  o.stop_grace = absl::Milliseconds(500);
  o.http_listen = "127.0.0.1:0";
  o.http_address_file = dir + "/http";
  auto daemon = Acceld::Start(o);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  std::string http_address;
  std::ifstream(dir + "/http") >> http_address;
  EXPECT_EQ(http_address, (*daemon)->http_address());

  auto channel = *rpc::MakeChannel((*daemon)->address());
  auto stub = accel::v1::Coordinator::NewStub(channel);
  grpc::ClientContext ctx;
  rpc::Authorize(ctx, (*daemon)->client_token());
  accel::v1::SubmitJobRequest req;
  *req.mutable_spec() = job::DefaultJobSpec();
  req.mutable_spec()->mutable_data()->set_path(dir + "/data.txt");
  req.mutable_spec()->mutable_resources()->set_num_processes(1);
  accel::v1::SubmitJobResponse resp;
  ASSERT_TRUE(stub->SubmitJob(&ctx, req, &resp).ok());

  const int port = std::stoi(http_address.substr(http_address.rfind(':') + 1));
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(10);
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto denied = http.Get("/metrics");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  // The control loop starts the job within a tick or two; its series come with that.
  const httplib::Headers auth = {{"Authorization", "Bearer " + (*daemon)->client_token()}};
  httplib::Result metrics = http.Get("/metrics", auth);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (metrics && metrics->body.find("accel_jobs{state=\"starting\"} 1\n") == std::string::npos &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    metrics = http.Get("/metrics", auth);
  }
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->get_header_value("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(metrics->body, HasSubstr("accel_rpc_requests_total{service=\"accel.v1.Coordinator\","
                                       "method=\"SubmitJob\",code=\"OK\"} 1\n"));
  EXPECT_THAT(metrics->body, HasSubstr("accel_slots{pool=\"cpu\"} 2\n"));
  EXPECT_THAT(metrics->body, HasSubstr("accel_job_info{job_id=\"" + resp.job().id() + "\""));

  // The same port cannot be taken twice.
  AcceldOptions second = o;
  second.state_dir = dir + "/state2";
  second.listen = "127.0.0.1:0";
  second.http_listen = http_address;
  second.http_address_file.clear();
  auto clash = Acceld::Start(second);
  ASSERT_FALSE(clash.ok());
  EXPECT_THAT(clash.status().message(), HasSubstr("--http-listen"));
}

// Issue 31: an eval record sets accel_job_eval_loss (the newest) and the telemetry's best; a job
// without one exports no eval sample (not a 0 that reads as a perfect model).
TEST(MetricsPageTest, ExportsTheNewestEvalLossOnceAnEvalRecordArrives) {
  testing::MetricsFixture f;
  ASSERT_TRUE(f.ok()) << f.error();
  const std::string id = f.AddRunning("eval", 1, 3);
  ASSERT_TRUE(f.ok()) << f.error();
  const std::string job = "{job_id=\"" + id + "\"}";
  EXPECT_THAT(RenderMetrics(f.Sources(8, 1)), Not(HasSubstr("accel_job_eval_loss" + job)));
  for (const auto& [step, loss] : {std::pair<int64_t, double>{2, 3.5}, {4, 3.75}}) {
    accel::v1::EvalEvent e;
    e.set_step(step);
    e.set_eval_loss(loss);
    e.set_eval_perplexity(std::exp(loss));
    e.set_eval_tokens(640);
    Event stored;
    stored.job_id = id;
    stored.attempt = 1;
    stored.rank = -1;
    stored.kind = EventKind::kEval;
    stored.body_json = MessageToJson(e);
    ASSERT_TRUE(f.events().Append(std::move(stored)).ok());
  }
  const std::string text = RenderMetrics(f.Sources(8, 1));
  EXPECT_THAT(text, HasSubstr("# TYPE accel_job_eval_loss gauge\n"));
  EXPECT_THAT(text, HasSubstr("accel_job_eval_loss" + job + " 3.75\n"));
  EXPECT_THAT(text, HasSubstr("accel_job_eval_step" + job + " 4\n"));
  ASSERT_TRUE(f.telemetry().Visit(id, [](const JobTelemetrySnapshot& t) {
    EXPECT_TRUE(t.has_eval);
    EXPECT_EQ(t.best_eval_loss, 3.5);
  }));
}

}  // namespace
}  // namespace accel::server

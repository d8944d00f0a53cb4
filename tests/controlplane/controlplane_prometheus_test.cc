// acceld's /metrics scraped by a real Prometheus (Debian's `prometheus`): a real acceld with
// --http-listen trains a tiny 2-rank job while Prometheus scrapes it every second with the
// bearer token from the token file; the test reads the job's accel_ series back through
// Prometheus's HTTP API (step, loss, per-rank memory, RPC counters), cancels the job, and sees
// the job counts follow. Skips only when `prometheus` is not installed (scripts/install-deps.sh
// installs it).
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary

constexpr char kPrometheus[] = "/usr/bin/prometheus";

// Prometheus's HTTP API: the instant query's result vector ([] while the series is unknown).
nlohmann::json Query(int port, const std::string& promql) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(5);
  auto res = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!res || res->status != 200) return nlohmann::json::array();
  const nlohmann::json j = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("status", "") != "success") return nlohmann::json::array();
  return j["data"]["result"];
}

// The value of a one-sample result, NaN when there is none.
double Value(const nlohmann::json& result) {
  if (!result.is_array() || result.size() != 1) return std::nan("");
  return std::stod(result[0]["value"][1].get<std::string>());
}

TEST(ControlPlanePrometheus, ScrapesTheJobsSeriesThroughTheBearerToken) {
  if (!fs::exists(kPrometheus)) GTEST_SKIP() << kPrometheus << " is not installed";
  const std::string dir = FreshDir();
  Daemon d(dir);
  d.Start(2, 0, {"--http-listen", "127.0.0.1:0", "--http-address-file", dir + "/http"});
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(dir + "/http"); }, 10));
  std::string http;
  std::ifstream(dir + "/http") >> http;

  // Prometheus, scraping acceld every second with the client token file.
  const int prom_port = testing::FreePort();
  ASSERT_GT(prom_port, 0);
  std::ofstream(dir + "/prometheus.yml")
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
         "scrape_configs:\n"
         "  - job_name: acceld\n"
         "    authorization: {type: Bearer, credentials_file: "
      << dir << "/state/token}\n"
      << "    static_configs: [{targets: ['" << http << "']}]\n";
  testing::ChildProcess prom = testing::StartProcess(
      {kPrometheus, "--config.file=" + dir + "/prometheus.yml",
       "--storage.tsdb.path=" + dir + "/tsdb",
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
      dir, "prometheus");
  std::unique_ptr<void, std::function<void(void*)>> stop_prometheus(
      &prom, [](void* p) { testing::WaitProcess(*static_cast<testing::ChildProcess*>(p), 0); });
  ASSERT_TRUE(WaitFor([&] { return Value(Query(prom_port, "up{job=\"acceld\"}")) == 1; }, 60))
      << testing::ReadAll(prom.stderr_path);

  // A job long enough to be scraped while it runs; cancelled once its series are seen.
  const std::string id = d.Submit(WriteJob(
      dir, "scraped",
      "model: {preset: gpt2-tiny}\n"
      "train: {steps: 100000, micro_batch: 2, seq_len: 32, log_every: 5}\n"
      "resources: {num_processes: 2}\nsharding: {strategy: full_shard}\n"));
  const std::string job = "job_id=\"" + id + "\"";
  ASSERT_TRUE(WaitFor([&] { return Value(Query(prom_port, "accel_job_step{" + job + "}")) > 0; },
                      120))
      << d.Get(id).DebugString();
  EXPECT_GT(Value(Query(prom_port, "accel_job_loss{" + job + "}")), 0);
  EXPECT_GT(Value(Query(prom_port, "accel_job_tokens_per_second{" + job + "}")), 0);
  EXPECT_EQ(Value(Query(prom_port, "accel_job_info{" + job + ",job_name=\"scraped\"}")), 1);
  // Both ranks' parameter memory, in the compute pool.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Query(prom_port, "accel_rank_memory_bytes{" + job +
                                    ",pool=\"compute\",category=\"params\"} > 0").size() == 2;
      },
      60));
  EXPECT_EQ(Value(Query(prom_port, "accel_jobs{state=\"running\"}")), 1);
  EXPECT_GE(Value(Query(prom_port, "accel_rpc_requests_total{method=\"SubmitJob\",code=\"OK\"}")),
            1);
  EXPECT_GE(Value(Query(prom_port, "accel_rpc_duration_seconds_count{method=\"SubmitJob\"}")),
            1);

  std::string out, err;
  ASSERT_EQ(d.Accelctl({"cancel", id}, &out, &err), 0) << err;
  EXPECT_TRUE(WaitFor(
      [&] { return Value(Query(prom_port, "accel_jobs{state=\"cancelled\"}")) == 1; }, 60));
  EXPECT_EQ(d.Terminate(), 0);
}

}  // namespace
}  // namespace accel

// /metrics at scale (issue 17's target: 1000 queued jobs and 100 running ranks render in under
// 50 ms and under 1 MB). Renders acceld's page from a daemon's worth of in-memory state
// (server/http/metrics_fixture.h) and reports the time per render, the page's bytes, and both as a
// fraction of the target. An empty daemon, and ten times the ranks, bracket it.
//   build/bench/accel_bench_metrics [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/http/metrics_fixture.h"

namespace {

using accel::server::RenderMetrics;
using accel::server::testing::MetricsFixture;

// state.range(0): queued jobs; range(1): running jobs of 10 ranks each.
void BM_RenderMetrics(benchmark::State& state) {
  MetricsFixture f;
  for (int64_t i = 0; i < state.range(0); ++i) f.AddQueued(absl::StrCat("queued-", i), 2);
  for (int64_t i = 0; i < state.range(1); ++i) f.AddRunning(absl::StrCat("running-", i), 10, 20);
  if (!f.ok()) {
    state.SkipWithError(f.error().c_str());
    return;
  }
  const accel::server::MetricsSources sources = f.Sources(128, static_cast<int>(state.range(1)) * 10);
  size_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    std::string page = RenderMetrics(sources);
    bytes = page.size();
    benchmark::DoNotOptimize(page);
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  state.counters["page_bytes"] = static_cast<double>(bytes);
  state.counters["ranks"] = static_cast<double>(state.range(1) * 10);
  state.counters["bytes_of_1MB_target"] = static_cast<double>(bytes) / (1 << 20);
  // Wall seconds per render over the 50 ms target.
  state.counters["time_of_50ms_target"] =
      took.count() / static_cast<double>(state.iterations()) / 0.050;
}
BENCHMARK(BM_RenderMetrics)
    ->Args({0, 0})       // an idle daemon: the baseline
    ->Args({1000, 10})   // the target: 1000 queued jobs, 100 running ranks
    ->Args({1000, 100})  // ten times the ranks
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// accelctl watch's text output: the block redrawn in place on a terminal, plain lines for logs,
// every event with --verbose, and the memory summary (each pool's peak over the ranks, from the
// typed pools, which acceld fills from old records' ledger JSON too, or the proto fields).
#include "client/watch_view.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/event_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/memory_stats.h"

namespace accel::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// What a terminal shows after `raw`: plain characters, "\n", and the two escapes WatchView uses
// (cursor up one line, erase the line). Fails the test on any other escape.
std::vector<std::string> Screen(const std::string& raw) {
  std::vector<std::string> rows(1);
  size_t row = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw.compare(i, 4, "\x1b[1A") == 0) {
      EXPECT_GT(row, 0u) << "cursor up past the top";
      if (row > 0) --row;
      i += 3;
    } else if (raw.compare(i, 4, "\x1b[2K") == 0) {
      rows[row].clear();
      i += 3;
    } else if (raw[i] == '\x1b') {
      ADD_FAILURE() << "unexpected escape at " << i;
    } else if (raw[i] == '\n') {
      if (++row == rows.size()) rows.emplace_back();
    } else {
      rows[row] += raw[i];
    }
  }
  if (rows.back().empty()) rows.pop_back();  // the cursor's line after the last "\n"
  return rows;
}

v1::Event Metrics(int64_t seq, int64_t step, int64_t total, float loss) {
  v1::Event e;
  e.set_seq(seq);
  e.set_rank(-1);
  v1::MetricsEvent* m = e.mutable_metrics();
  m->set_step(step);
  m->set_total_steps(total);
  m->set_loss(loss);
  m->set_tokens_per_s(25000);
  m->set_step_seconds(0.5);
  return e;
}

v1::Event Memory(int64_t seq, int rank, int64_t step, int64_t compute_peak, int64_t host_peak) {
  v1::Event e;
  e.set_seq(seq);
  e.set_rank(rank);
  v1::MemoryEvent* m = e.mutable_memory();
  m->set_step(step);
  m->set_device_peak(compute_peak);
  m->set_host_peak(host_peak);
  return e;
}

v1::Event State(int64_t seq, v1::JobState s, const std::string& message) {
  v1::Event e;
  e.set_seq(seq);
  e.set_rank(-1);
  e.mutable_state()->set_state(s);
  e.mutable_state()->set_message(message);
  return e;
}

v1::Event Checkpoint(int64_t seq, int64_t step) {
  v1::Event e;
  e.set_seq(seq);
  e.mutable_checkpoint()->set_step(step);
  e.mutable_checkpoint()->set_path("/ck/step_" + std::to_string(step));
  e.mutable_checkpoint()->set_kind("sharded");
  return e;
}

const absl::Time t0 = absl::FromUnixSeconds(1000);

TEST(WatchViewTest, ProgressLineHasBarLossThroughputAndEta) {
  v1::MetricsEvent m = Metrics(1, 149, 200, 2.26094f).metrics();
  EXPECT_EQ(BlockProgressLine(m),
            "step 150/200 [###############.....]  75% | loss 2.2609 | 25000 tok/s | ETA 0:25");
  m.set_eta_seconds(3723);  // the worker's own estimate wins
  EXPECT_THAT(BlockProgressLine(m), HasSubstr("ETA 1:02:03"));
  EXPECT_EQ(EtaSeconds(Metrics(1, 199, 200, 1).metrics()), 0);  // the last step
}

TEST(WatchViewTest, FitWidthCutsByColumnsNotBytes) {
  EXPECT_EQ(FitWidth("abcdef", 4), "abc");
  EXPECT_EQ(FitWidth("a · b · c", 6), "a · b");  // "·" is two bytes, one column
  EXPECT_EQ(FitWidth("short", 80), "short");
}

TEST(WatchViewTest, BlockIsRedrawnInPlaceWithPermanentLinesAboveIt) {
  std::ostringstream out;
  WatchView view(out, {.mode = WatchMode::kBlock, .width = 200});
  view.OnEvent(State(1, v1::RUNNING, "attempt 1"), t0);
  view.OnEvent(Memory(2, 0, -1, 2 << 20, 1 << 20), t0 + absl::Seconds(1));
  view.OnEvent(Memory(3, 1, -1, 3 << 20, 0), t0 + absl::Seconds(2));
  view.OnEvent(Metrics(4, 9, 20, 3.5f), t0 + absl::Seconds(3));
  view.OnEvent(Checkpoint(5, 10), t0 + absl::Seconds(4));
  view.OnEvent(Metrics(6, 19, 20, 2.5f), t0 + absl::Seconds(5));
  view.OnEvent(State(7, v1::SUCCEEDED, "all 2 ranks finished"), t0 + absl::Seconds(6));
  view.Finish();
  EXPECT_THAT(Screen(out.str()),
              ElementsAre("#1 RUNNING: attempt 1",
                          "#5 checkpoint step 10: /ck/step_10 (sharded, 0 B, 0.00 s)",
                          "#7 SUCCEEDED: all 2 ranks finished",
                          StartsWith("step 20/20 [####################] 100% | loss 2.5000"),
                          "memory peak: compute 3.0 MiB · host 1.0 MiB (2 ranks)"));
  // Every metrics record redrew the block (seconds apart): the raw output held both steps.
  EXPECT_THAT(out.str(), HasSubstr("step 10/20"));
}

v1::Event Log(int64_t seq, int rank, const std::string& line) {
  v1::Event e;
  e.set_seq(seq);
  e.set_rank(rank);
  e.mutable_log()->set_line(line);
  return e;
}

TEST(WatchViewTest, BlockShowsRankZerosLogLinesAndTheOtherRanksTroubles) {
  EXPECT_TRUE(LogLineOfInterest(Log(1, 0, "[info] registered")));
  EXPECT_TRUE(LogLineOfInterest(Log(1, -1, "acceld is stopping")));
  EXPECT_FALSE(LogLineOfInterest(Log(1, 1, "[info] registered")));
  EXPECT_TRUE(LogLineOfInterest(Log(1, 3, "[ERROR] gloo: connection reset")));
  EXPECT_TRUE(LogLineOfInterest(Log(1, 3, "[warning] slow step")));
  std::ostringstream block;
  WatchView view(block, {.mode = WatchMode::kBlock});
  view.OnEvent(Log(1, 1, "[info] registered"), t0);
  view.OnEvent(Log(2, 0, "[info] registered"), t0 + absl::Seconds(1));
  view.Finish();
  EXPECT_THAT(Screen(block.str()),
              ElementsAre("#2 [rank 0] [info] registered", "waiting for the first step"));
  std::ostringstream plain;  // CI logs keep every line
  WatchView lines(plain, {.mode = WatchMode::kPlain});
  lines.OnEvent(Log(1, 1, "[info] registered"), t0);
  EXPECT_EQ(plain.str(), "#1 [rank 1] [info] registered\n");
}

TEST(WatchViewTest, RedrawsAreThrottledAndTickDrawsWhatWasHeldBack) {
  std::ostringstream out;
  WatchView view(out, {.mode = WatchMode::kBlock, .min_redraw = absl::Milliseconds(250)});
  view.OnEvent(Metrics(1, 0, 100, 5.0f), t0);
  view.OnEvent(Metrics(2, 1, 100, 4.0f), t0 + absl::Milliseconds(10));
  view.OnEvent(Metrics(3, 2, 100, 3.0f), t0 + absl::Milliseconds(20));
  EXPECT_THAT(out.str(), HasSubstr("step 1/100"));
  EXPECT_THAT(out.str(), Not(HasSubstr("step 3/100")));  // held back: too soon
  view.Tick(t0 + absl::Milliseconds(100));
  EXPECT_THAT(out.str(), Not(HasSubstr("step 3/100")));
  view.Tick(t0 + absl::Milliseconds(300));
  EXPECT_THAT(Screen(out.str()), ElementsAre(StartsWith("step 3/100 ")));
  EXPECT_THAT(out.str(), Not(HasSubstr("step 2/100")));  // never drawn: superseded
}

TEST(WatchViewTest, BlockLinesAreCutToTheTerminalWidth) {
  std::ostringstream out;
  WatchView view(out, {.mode = WatchMode::kBlock, .width = 30});
  view.OnEvent(Metrics(1, 0, 100, 5.0f), t0);
  view.Finish();
  const std::vector<std::string> screen = Screen(out.str());
  ASSERT_EQ(screen.size(), 1u);
  EXPECT_EQ(screen[0].size(), 29u);
}

TEST(WatchViewTest, BlockBeforeTheFirstStepSaysWhatTheJobIsDoing) {
  std::ostringstream out;
  WatchView view(out, {.mode = WatchMode::kBlock});
  view.OnEvent(State(1, v1::QUEUED, ""), t0);
  EXPECT_THAT(view.BlockLines(), ElementsAre("waiting for the first step (QUEUED)"));
  view.Note("accelctl: lost acceld (gone); reconnecting from event 1", t0 + absl::Seconds(1));
  view.Finish();
  EXPECT_THAT(Screen(out.str()),
              ElementsAre("#1 QUEUED", "accelctl: lost acceld (gone); reconnecting from event 1",
                          "waiting for the first step (QUEUED)"));
}

TEST(WatchViewTest, PlainOutputSummarisesEachMemoryStepInOneLine) {
  std::ostringstream out;
  WatchView view(out, {.mode = WatchMode::kPlain, .world_size = 2});
  view.OnEvent(Memory(1, 0, -1, 2 << 20, 0), t0);
  view.OnEvent(Memory(2, 1, -1, 3 << 20, 0), t0);
  view.OnEvent(Metrics(3, 9, 20, 3.5f), t0);
  view.OnEvent(Memory(4, 1, 9, 5 << 20, 1 << 10), t0);
  view.OnEvent(Memory(5, 0, 9, 4 << 20, 2 << 10), t0);
  view.OnEvent(Checkpoint(6, 10), t0);
  view.Finish();
  const std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  EXPECT_THAT(lines,
              ElementsAre("#2 memory peak after setup: compute 3.0 MiB (2 ranks)",
                          StartsWith("#3 step 10/20 [##########..........]  50% | loss "
                                     "3.5000 | lr "),
                          "#5 memory peak at step 10: compute 5.0 MiB · host 2.0 KiB (2 ranks)",
                          StartsWith("#6 checkpoint step 10")));
  EXPECT_THAT(out.str(), Not(HasSubstr("\x1b")));
}

TEST(WatchViewTest, PlainOutputWithoutTheWorldSizeFlushesAtTheNextStepOrState) {
  std::ostringstream out;
  WatchView view(out, {.mode = WatchMode::kPlain});
  view.OnEvent(Memory(1, 0, -1, 1 << 20, 0), t0);
  view.OnEvent(Memory(2, 1, -1, 1 << 20, 0), t0);
  EXPECT_EQ(out.str(), "");  // more ranks may come
  view.OnEvent(Memory(3, 0, 0, 2 << 20, 0), t0);
  EXPECT_EQ(out.str(), "#2 memory peak after setup: compute 1.0 MiB (2 ranks)\n");
  view.OnEvent(State(4, v1::FAILED, "rank 1 exited 1"), t0);
  EXPECT_THAT(out.str(), HasSubstr("#3 memory peak at step 1: compute 2.0 MiB (1 rank)\n"
                                   "#4 FAILED: rank 1 exited 1\n"));
}

TEST(WatchViewTest, VerbosePrintsEveryEventAsToday) {
  std::ostringstream out;
  WatchView view(out, {.mode = WatchMode::kVerbose, .world_size = 2});
  view.OnEvent(Memory(1, 0, 9, 2 << 20, 0), t0);
  view.OnEvent(Memory(2, 1, 9, 3 << 20, 0), t0);
  view.OnEvent(Metrics(3, 9, 20, 3.5f), t0);
  view.Finish();
  const std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  EXPECT_THAT(lines,
              ElementsAre(StartsWith("#1 memory rank 0 at step 10: compute 0 B (peak 2.0 MiB)"),
                          StartsWith("#2 memory rank 1 at step 10: compute 0 B (peak 3.0 MiB)"),
                          StartsWith("#3 step 10/20")));
}

TEST(WatchViewTest, LiveWatchDrawsTheFinalBlockOnFinish) {
  std::ostringstream out;
  {
    LiveWatch live(out, {.mode = WatchMode::kBlock, .min_redraw = absl::Hours(1)});
    live.OnEvent(Metrics(1, 0, 10, 5.0f));
    live.OnEvent(Metrics(2, 9, 10, 2.0f));  // held back for an hour, but Finish draws it
    live.Finish();
  }
  EXPECT_THAT(Screen(out.str()), ElementsAre(StartsWith("step 10/10 ")));
}

constexpr int kCompute = static_cast<int>(MemoryPool::kDevice);
constexpr int kHost = static_cast<int>(MemoryPool::kHost);
constexpr int kNvme = static_cast<int>(MemoryPool::kNvme);

v1::MemoryEvent FromLedger(const MemoryLedger& ledger) {
  v1::MemoryEvent m;
  rpc::LedgerToProto(ledger, &m);  // as the worker sends it
  return m;
}

TEST(MemorySummaryTest, PoolPeaksReadTheTypedLedgerWithEveryPool) {
  MemoryLedger ledger;
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 5 << 20);
  ledger.Release(MemoryPool::kDevice, MemoryCategory::kParams, 4 << 20);
  ledger.Charge(MemoryPool::kHost, MemoryCategory::kOther, 3 << 10);
  ledger.Charge(MemoryPool::kNvme, MemoryCategory::kOptimizerState, int64_t{7} << 30);
  const auto peaks = PoolPeaks(FromLedger(ledger));
  EXPECT_EQ(peaks[kCompute], 5 << 20);  // the peak, not what is held now
  EXPECT_EQ(peaks[kHost], 3 << 10);
  EXPECT_EQ(peaks[kNvme], int64_t{7} << 30);
}

// A record stored before issue 29 with the ledger as JSON, as acceld reads it into the typed
// pools (rpc::MemoryPoolsFromLedgerJson, called by server/services/convert.cc for stored bodies).
TEST(MemorySummaryTest, PoolPeaksReadTheOldDeviceKeyAsCompute) {
  v1::MemoryEvent m;
  ASSERT_TRUE(rpc::MemoryPoolsFromLedgerJson(
                  R"({"device":{"params":{"current":1,"peak":1},"total":{"current":10,"peak":40}},)"
                  R"("host":{"total":{"current":0,"peak":8}},"nvme":{"total":{"current":0,"peak":0}}})",
                  &m)
                  .ok());
  m.set_device_peak(1);  // the ledger's pools win over the proto fields
  const auto peaks = PoolPeaks(m);
  EXPECT_EQ(peaks[kCompute], 40);
  EXPECT_EQ(peaks[kHost], 8);
  EXPECT_EQ(peaks[kNvme], 0);
}

TEST(MemorySummaryTest, PoolPeaksFallBackToTheProtoFields) {
  v1::MemoryEvent m;
  m.set_device_peak(100);
  m.set_host_peak(20);
  EXPECT_EQ(PoolPeaks(m)[kCompute], 100);
  // A damaged stored ledger adds no pools: the record's own fields still show.
  EXPECT_FALSE(rpc::MemoryPoolsFromLedgerJson("{not json", &m).ok());
  EXPECT_EQ(PoolPeaks(m)[kCompute], 100);
  EXPECT_EQ(PoolPeaks(m)[kHost], 20);
}

// The same ledger sent typed and read from a record stored with the old ledger JSON: the
// summary line watch prints is the same.
TEST(MemorySummaryTest, ATypedRecordAndAnOldLedgerJsonRecordGiveTheSameLine) {
  MemoryLedger ledger;
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 22 << 20);
  ledger.Charge(MemoryPool::kHost, MemoryCategory::kOptimizerState, 3 << 20);
  ledger.Charge(MemoryPool::kNvme, MemoryCategory::kOptimizerState, 5 << 20);
  ledger.Release(MemoryPool::kNvme, MemoryCategory::kOptimizerState, 5 << 20);
  v1::MemoryEvent old;
  ASSERT_TRUE(rpc::MemoryPoolsFromLedgerJson(ledger.ToJson(), &old).ok());
  MemorySummary typed_summary, old_summary;
  typed_summary.Add(0, FromLedger(ledger));
  old_summary.Add(0, old);
  EXPECT_EQ(PoolPeaks(FromLedger(ledger)), PoolPeaks(old));
  EXPECT_EQ(typed_summary.Text(), "compute 22.0 MiB · host 3.0 MiB · nvme 5.0 MiB (1 rank)");
  EXPECT_EQ(old_summary.Text(), typed_summary.Text());
}

// `accelctl watch --output json` prints each event's proto JSON: a memory record's figures are
// typed fields (pool, category, current, peak; int64 as strings), no nested JSON string.
TEST(MemorySummaryTest, JsonOutputCarriesTheTypedPools) {
  MemoryLedger ledger;
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 4096);
  v1::Event e;
  *e.mutable_memory() = FromLedger(ledger);
  const std::string json = Json(e);
  EXPECT_THAT(json, HasSubstr(R"("pools":[{"pool":"MEMORY_POOL_COMPUTE","categories":[)"
                              R"({"category":"MEMORY_CATEGORY_PARAMS","current":"4096","peak":"4096"})"));
  EXPECT_THAT(json, HasSubstr(R"("total_current":"4096","total_peak":"4096"})"));
  EXPECT_THAT(json, Not(HasSubstr("ledger_json")));
}

TEST(MemorySummaryTest, TextIsThePeakOfEachPoolOverTheRanks) {
  MemorySummary s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.Text(), "");
  v1::MemoryEvent a;
  a.set_device_peak(int64_t{22} << 20);
  a.set_host_peak(1 << 20);
  v1::MemoryEvent b;
  b.set_device_peak(int64_t{10} << 20);
  b.set_host_peak(3 << 20);
  s.Add(0, a);
  s.Add(1, b);
  s.Add(1, b);  // a rank's second record is not a second rank
  EXPECT_EQ(s.Text(), "compute 22.0 MiB · host 3.0 MiB (2 ranks)");
}

TEST(MemorySummaryTest, TextShowsNvmeOnlyWhenUsedAndTheGpuWhenReported) {
  MemoryLedger ledger;
  ledger.Charge(MemoryPool::kNvme, MemoryCategory::kOptimizerState, 2 << 20);
  v1::MemoryEvent m = FromLedger(ledger);
  MemorySummary s;
  s.Add(0, m);
  EXPECT_EQ(s.Text(), "compute 0 B · nvme 2.0 MiB (1 rank)");
  m.set_device_driver_used(int64_t{10} << 30);
  m.set_device_driver_total(int64_t{140} << 30);
  s.Add(1, m);
  EXPECT_EQ(s.Text(), "compute 0 B · nvme 2.0 MiB · GPU in use 10.00 GiB of 140.00 GiB (2 ranks)");
}

}  // namespace
}  // namespace accel::client

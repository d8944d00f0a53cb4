// What `accelctl watch` and `accelctl submit --wait` print for a job's events (text output):
//
//   block (stdout is a terminal): one block at the bottom, redrawn in place with ANSI escapes
//     (cursor up, erase line; written to Unfiltered(out), past the terminal filter of
//     terminal_text.h, which neutralises every other escape) at most every `min_redraw`:
//       step 150/200 [###############.....]  75% | loss 2.2609 | 25119 tok/s | ETA 0:02
//       memory peak: compute 1.9 MiB · host 96.0 KiB (2 ranks)
//     State changes, checkpoints, acceld's notices and the workers' log lines of interest
//     (LogLineOfInterest) are printed as permanent lines above it (EventLine). Metrics and memory
//     records only update the block.
//   plain (not a terminal: CI logs, pipes): a line per metrics record, state change, checkpoint
//     and log line (EventLine), and one line per recorded step for the memory records of all
//     ranks ("#44 memory peak at step 110: compute 22.1 MiB · host 3.0 MiB (2 ranks)") instead
//     of one per rank.
//   verbose (--verbose): every event as its EventLine, memory records one per rank.
// --output json never comes here (one JSON object per event).
//
// WatchView is single-threaded and takes the time from its caller (tests pass a fake clock);
// LiveWatch wraps it for accelctl, with a thread that draws a throttled update within
// `min_redraw` even when no further event comes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "accel/v1/coordinator.grpc.pb.h"
#include "engine/base/memory_ledger.h"

namespace accel::client {

// MemorySummary: the memory records of a job's ranks folded into one line, the peak of each
// pool over the ranks that reported: "compute 22.1 MiB · host 3.0 MiB (2 ranks)". Pools are read
// from the record's typed pools (compute, host, nvme; acceld reads records stored with the old
// ledger JSON into them). A record without pools (from an acceld before issue 29, or one whose
// stored ledger was damaged) falls back to its device_peak / host_peak fields. host and
// nvme are left out while their peak is 0 (nvme: no NVMe offload). On a cuda rank the compute
// pool is the GPU's memory; the driver's view of the GPU (used of total, the largest over the
// ranks) is added as "GPU in use ...".
//
// Each pool's peak bytes in one memory record, indexed by MemoryPool.
std::array<int64_t, kNumMemoryPools> PoolPeaks(const accel::v1::MemoryEvent& m);

class MemorySummary {
 public:
  // Folds in one rank's record (rank < 0: a job-wide record, counted as no rank).
  void Add(int rank, const accel::v1::MemoryEvent& m);
  bool empty() const { return records_ == 0; }
  int ranks() const { return static_cast<int>(ranks_.size()); }
  // "compute 22.1 MiB · host 3.0 MiB (2 ranks)"; "" when empty.
  std::string Text() const;

 private:
  std::array<int64_t, kNumMemoryPools> peak_{};
  std::set<int> ranks_;
  int records_ = 0;
  int64_t driver_used_ = 0;
  int64_t driver_total_ = 0;
};

enum class WatchMode { kBlock, kPlain, kVerbose };

struct WatchOptions {
  WatchMode mode = WatchMode::kPlain;
  int width = 100;  // block: the terminal's columns; longer block lines are cut to fit
  absl::Duration min_redraw = absl::Milliseconds(250);  // block: at most 4 redraws a second
  // plain: the job's ranks, so a memory step's line is printed as soon as every rank reported
  // (0: unknown; then when the next step's records start, a state change comes, or the end).
  int world_size = 0;
};

// The seconds left: the worker's estimate, else (remaining steps) x (seconds per step).
double EtaSeconds(const accel::v1::MetricsEvent& m);
// "step 150/200 [###############.....]  75% | loss 2.2609 | 25119 tok/s | ETA 0:02"
std::string BlockProgressLine(const accel::v1::MetricsEvent& m);
// Block mode prints a worker's log line when it is rank 0's, acceld's (rank -1), or says something
// went wrong (error, warning, fatal, abort, exception, traceback, killed; any case): the other
// ranks mostly repeat rank 0 ("registered", "done"). `accelctl logs ID` has every line.
bool LogLineOfInterest(const accel::v1::Event& e);
// `line` cut to fewer than `width` terminal columns (UTF-8 aware), so it never wraps.
std::string FitWidth(std::string_view line, int width);

class WatchView {
 public:
  WatchView(std::ostream& out, WatchOptions options);
  void OnEvent(const accel::v1::Event& e, absl::Time now);
  // A line of accelctl's own (e.g. "lost acceld; reconnecting"), above the block in block mode.
  void Note(const std::string& line, absl::Time now);
  // Block: draws a pending update once `min_redraw` has passed since the last draw.
  void Tick(absl::Time now);
  // The stream ended: block draws its last state (it stays on screen); plain prints the memory
  // step it held back.
  void Finish();
  void set_world_size(int n) { o_.world_size = n; }
  // The block as it would be drawn now (without escapes); tests read it.
  std::vector<std::string> BlockLines() const;

 private:
  void Permanent(const std::string& line, absl::Time now);
  void Erase();
  void Draw(absl::Time now);
  void PlainMemory(const accel::v1::Event& e);
  void FlushMemoryStep();

  std::ostream& out_;
  WatchOptions o_;
  // Block state.
  std::optional<accel::v1::MetricsEvent> metrics_;
  MemorySummary memory_;
  std::string state_ = "waiting for the first step";
  int drawn_lines_ = 0;
  bool pending_ = false;
  absl::Time last_draw_ = absl::InfinitePast();
  // Plain: the memory records of one step, printed as one line.
  std::optional<int64_t> memory_step_;
  MemorySummary step_memory_;
  int64_t memory_seq_ = 0;
};

// WatchView for accelctl: thread-safe, and in block mode a thread that calls Tick every 100 ms
// until Finish (or destruction).
class LiveWatch {
 public:
  LiveWatch(std::ostream& out, WatchOptions options);
  ~LiveWatch();
  LiveWatch(const LiveWatch&) = delete;
  LiveWatch& operator=(const LiveWatch&) = delete;
  void OnEvent(const accel::v1::Event& e);
  void Note(const std::string& line);
  void set_world_size(int n);
  void Finish();

 private:
  void TickUntilDone();

  absl::Mutex mu_;
  WatchView view_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread ticker_;
};

// Whether `out` is a terminal accelctl may draw on, and its width: std::cout (or a
// TerminalSafeStream over it, terminal_text.h) on a TTY (not TERM=dumb); ACCEL_FORCE_TTY=1 / 0 overrides (tests, captures). Width: the terminal's, else
// $COLUMNS, else 100.
bool IsTerminal(std::ostream& out, int* width);

}  // namespace accel::client

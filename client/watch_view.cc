#include "client/watch_view.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/event_format.h"
#include "client/terminal_text.h"
#include "rpc/memory_stats.h"

namespace accel::client {

namespace v1 = accel::v1;

namespace {

constexpr std::string_view kCursorUpAndErase = "\x1b[1A\x1b[2K";

}  // namespace

std::array<int64_t, kNumMemoryPools> PoolPeaks(const v1::MemoryEvent& m) {
  return rpc::PoolTotalPeaks(m);
}

void MemorySummary::Add(int rank, const v1::MemoryEvent& m) {
  const std::array<int64_t, kNumMemoryPools> peaks = PoolPeaks(m);
  for (int p = 0; p < kNumMemoryPools; ++p) peak_[p] = std::max(peak_[p], peaks[p]);
  if (rank >= 0) ranks_.insert(rank);
  ++records_;
  if (m.device_driver_total() > 0) {
    driver_used_ = std::max(driver_used_, m.device_driver_used());
    driver_total_ = std::max(driver_total_, m.device_driver_total());
  }
}

std::string MemorySummary::Text() const {
  if (empty()) return "";
  std::string out;
  for (int p = 0; p < kNumMemoryPools; ++p) {
    // compute is always shown (0 is news too); host and nvme once something used them.
    if (peak_[p] == 0 && static_cast<MemoryPool>(p) != MemoryPool::kDevice) continue;
    const std::string pool(MemoryPoolName(static_cast<MemoryPool>(p)));
    absl::StrAppend(&out, out.empty() ? "" : " · ", pool, " ", Bytes(peak_[p]));
  }
  if (driver_total_ > 0) {
    absl::StrAppend(&out, " · GPU in use ", Bytes(driver_used_), " of ", Bytes(driver_total_));
  }
  if (!ranks_.empty()) {
    absl::StrAppend(&out, " (", ranks(), ranks() == 1 ? " rank)" : " ranks)");
  }
  return out;
}

double EtaSeconds(const v1::MetricsEvent& m) {
  if (m.eta_seconds() > 0) return m.eta_seconds();
  const int64_t left = m.total_steps() - (m.step() + 1);
  return left > 0 ? static_cast<double>(left) * m.step_seconds() : 0;
}

std::string BlockProgressLine(const v1::MetricsEvent& m) {
  const int64_t done = m.step() + 1;
  return absl::StrFormat("step %d/%d %s %3d%% | loss %.4f | %.0f tok/s | ETA %s%s", done,
                         m.total_steps(), ProgressBar(done, m.total_steps()),
                         m.total_steps() > 0 ? 100 * done / m.total_steps() : 0, m.loss(),
                         m.tokens_per_s(), Duration(EtaSeconds(m)),
                         m.skipped() ? " (skipped: non-finite)" : "");
}

bool LogLineOfInterest(const v1::Event& e) {
  if (e.rank() <= 0) return true;
  const std::string line = absl::AsciiStrToLower(e.log().line());
  for (const char* word : {"error", "warn", "fatal", "abort", "exception", "traceback", "killed"}) {
    if (absl::StrContains(line, word)) return true;
  }
  return false;
}

std::string FitWidth(std::string_view line, int width) {
  // Stop one column short of the edge: some terminals wrap a line that fills it exactly.
  const int columns = std::max(width - 1, 1);
  int used = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const bool starts_a_character = (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
    if (starts_a_character && ++used > columns) return std::string(line.substr(0, i));
  }
  return std::string(line);
}

WatchView::WatchView(std::ostream& out, WatchOptions options) : out_(out), o_(options) {}

std::vector<std::string> WatchView::BlockLines() const {
  std::vector<std::string> lines;
  lines.push_back(metrics_ ? BlockProgressLine(*metrics_) : state_);
  if (!memory_.empty()) lines.push_back(absl::StrCat("memory peak: ", memory_.Text()));
  return lines;
}

void WatchView::Erase() {
  // accelctl's own escapes: past the filter that neutralises every other (terminal_text.h).
  for (; drawn_lines_ > 0; --drawn_lines_) Unfiltered(out_) << kCursorUpAndErase;
}

void WatchView::Draw(absl::Time now) {
  Erase();
  for (const std::string& line : BlockLines()) {
    out_ << FitWidth(line, o_.width) << "\n";
    ++drawn_lines_;
  }
  out_.flush();
  pending_ = false;
  last_draw_ = now;
}

void WatchView::Tick(absl::Time now) {
  if (o_.mode == WatchMode::kBlock && pending_ && now - last_draw_ >= o_.min_redraw) Draw(now);
}

void WatchView::Permanent(const std::string& line, absl::Time now) {
  if (o_.mode != WatchMode::kBlock) {
    out_ << line << "\n";
    out_.flush();
    return;
  }
  // The line takes the block's place; the block is drawn again below it.
  Erase();
  out_ << line << "\n";
  pending_ = true;
  Tick(now);
  out_.flush();
}

void WatchView::Note(const std::string& line, absl::Time now) {
  if (o_.mode == WatchMode::kPlain) FlushMemoryStep();
  Permanent(line, now);
}

void WatchView::OnEvent(const v1::Event& e, absl::Time now) {
  if (o_.mode == WatchMode::kVerbose) {
    Permanent(EventLine(e), now);
    return;
  }
  if (o_.mode == WatchMode::kPlain) {
    if (e.has_memory()) {
      PlainMemory(e);
      return;
    }
    if (e.has_state()) FlushMemoryStep();  // an attempt ended or began: its records are all in
    Permanent(EventLine(e), now);
    return;
  }
  switch (e.body_case()) {
    case v1::Event::kMetrics:
      metrics_ = e.metrics();
      pending_ = true;
      Tick(now);
      return;
    case v1::Event::kMemory:
      memory_.Add(e.rank(), e.memory());
      pending_ = true;
      Tick(now);
      return;
    case v1::Event::kState:
      if (!metrics_) {
        state_ = absl::StrCat("waiting for the first step (", StateName(e.state().state()), ")");
      }
      Permanent(EventLine(e), now);
      return;
    case v1::Event::kLog:
      if (LogLineOfInterest(e)) Permanent(EventLine(e), now);
      return;
    default:
      Permanent(EventLine(e), now);
      return;
  }
}

void WatchView::PlainMemory(const v1::Event& e) {
  if (memory_step_ && *memory_step_ != e.memory().step()) FlushMemoryStep();
  memory_step_ = e.memory().step();
  memory_seq_ = e.seq();
  step_memory_.Add(e.rank(), e.memory());
  if (o_.world_size > 0 && step_memory_.ranks() >= o_.world_size) FlushMemoryStep();
}

void WatchView::FlushMemoryStep() {
  if (!memory_step_) return;
  out_ << "#" << memory_seq_ << " memory peak "
       << (*memory_step_ < 0 ? "after setup" : absl::StrCat("at step ", *memory_step_ + 1)) << ": "
       << step_memory_.Text() << "\n";
  out_.flush();
  memory_step_.reset();
  step_memory_ = MemorySummary();
}

void WatchView::Finish() {
  if (o_.mode == WatchMode::kPlain) FlushMemoryStep();
  if (o_.mode == WatchMode::kBlock) Draw(last_draw_);
}

LiveWatch::LiveWatch(std::ostream& out, WatchOptions options) : view_(out, options) {
  if (options.mode == WatchMode::kBlock) ticker_ = std::thread([this] { TickUntilDone(); });
}

LiveWatch::~LiveWatch() { Finish(); }

void LiveWatch::TickUntilDone() {
  absl::MutexLock lock(&mu_);
  while (!done_) {
    // Wakes at least every 100 ms (a bounded wait), or at once when Finish sets done_.
    mu_.AwaitWithTimeout(absl::Condition(&done_), absl::Milliseconds(100));
    if (!done_) view_.Tick(absl::Now());
  }
}

void LiveWatch::OnEvent(const v1::Event& e) {
  absl::MutexLock lock(&mu_);
  view_.OnEvent(e, absl::Now());
}

void LiveWatch::Note(const std::string& line) {
  absl::MutexLock lock(&mu_);
  view_.Note(line, absl::Now());
}

void LiveWatch::set_world_size(int n) {
  absl::MutexLock lock(&mu_);
  view_.set_world_size(n);
}

void LiveWatch::Finish() {
  {
    absl::MutexLock lock(&mu_);
    if (done_) return;
    done_ = true;
    view_.Finish();
  }
  if (ticker_.joinable()) ticker_.join();
}

bool IsTerminal(std::ostream& out, int* width) {
  *width = 100;
  int columns = 0;
  const char* env_columns = std::getenv("COLUMNS");
  if (env_columns != nullptr && absl::SimpleAtoi(env_columns, &columns) && columns > 0) {
    *width = columns;
  }
  const bool real = &Unfiltered(out) == &std::cout && isatty(STDOUT_FILENO) == 1;
  winsize size{};
  if (real && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    *width = size.ws_col;
  }
  const char* force = std::getenv("ACCEL_FORCE_TTY");
  if (force != nullptr && *force != '\0') return std::string_view(force) != "0";
  const char* term = std::getenv("TERM");
  return real && !(term != nullptr && std::string_view(term) == "dumb");
}

}  // namespace accel::client

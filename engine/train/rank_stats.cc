#include "engine/train/rank_stats.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/base/process_memory.h"
#include "engine/base/status_macros.h"

namespace accel::train {
namespace {

constexpr int kCells = kNumMemoryPools * kNumMemoryCategories;
// The wire form: memory (current, peak) per cell, bytes sent, received, wait in nanoseconds,
// peak RSS, cgroup usage and limit, bytes sent across nodes.
constexpr int kWords = 2 * kCells + 7;

}  // namespace

RankStats RankStats::FromLedger(int rank, const MemoryLedger& ledger) {
  RankStats s;
  s.rank = rank;
  for (int p = 0; p < kNumMemoryPools; ++p) {
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      s.memory[p * kNumMemoryCategories + c] =
          ledger.Get(static_cast<MemoryPool>(p), static_cast<MemoryCategory>(c));
    }
  }
  const ProcessMemory process = ReadProcessMemory();
  s.peak_rss = process.peak_rss;
  s.cgroup_usage = process.cgroup.usage;
  s.cgroup_limit = process.cgroup.limit;
  return s;
}

std::string RankStats::ToJson() const {
  std::string out = absl::StrCat("{\"rank\":", rank, ",\"memory\":{");
  bool first_pool = true;
  for (int p = 0; p < kNumMemoryPools; ++p) {
    int64_t pool_peak = 0, pool_current = 0;
    std::string cells;
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      const MemoryCounts& m = memory[p * kNumMemoryCategories + c];
      pool_current += m.current;
      pool_peak += m.peak;
      absl::StrAppend(&cells, c ? "," : "", "\"",
                      std::string(MemoryCategoryName(static_cast<MemoryCategory>(c))),
                      "\":{\"current\":", m.current, ",\"peak\":", m.peak, "}");
    }
    if (pool_peak == 0 && pool_current == 0) continue;
    absl::StrAppend(&out, first_pool ? "" : ",", "\"",
                    std::string(MemoryPoolName(static_cast<MemoryPool>(p))), "\":{", cells,
                    ",\"current\":", pool_current, "}");
    first_pool = false;
  }
  absl::StrAppend(&out, "},\"process\":{\"peak_rss\":", peak_rss);
  if (cgroup_limit >= 0) {
    absl::StrAppend(&out, ",\"cgroup_usage\":", cgroup_usage, ",\"cgroup_limit\":", cgroup_limit);
  }
  absl::StrAppend(&out, "},\"bytes_sent\":", bytes_sent,
                  ",\"bytes_sent_within_node\":", bytes_sent - bytes_sent_cross_node,
                  ",\"bytes_sent_cross_node\":", bytes_sent_cross_node,
                  ",\"bytes_received\":", bytes_received,
                  ",\"comm_wait_seconds\":", comm_wait_seconds, "}");
  return out;
}

absl::StatusOr<std::vector<RankStats>> GatherRankStats(comm::Communicator* world,
                                                       const RankStats& mine,
                                                       absl::Duration timeout) {
  std::array<int64_t, kWords> words{};
  for (int i = 0; i < kCells; ++i) {
    words[2 * i] = mine.memory[i].current;
    words[2 * i + 1] = mine.memory[i].peak;
  }
  words[2 * kCells] = mine.bytes_sent;
  words[2 * kCells + 1] = mine.bytes_received;
  words[2 * kCells + 2] = static_cast<int64_t>(mine.comm_wait_seconds * 1e9);
  words[2 * kCells + 3] = mine.peak_rss;
  words[2 * kCells + 4] = mine.cgroup_usage;
  words[2 * kCells + 5] = mine.cgroup_limit;
  words[2 * kCells + 6] = mine.bytes_sent_cross_node;
  const int n = world->size();
  std::vector<int64_t> all(static_cast<size_t>(n) * kWords);
  // int64 words travel through an f32 all-gather as bit copies (two floats each).
  ACCEL_RETURN_IF_ERROR(world->AllGather(words.data(), all.data(),
                                         kWords * sizeof(int64_t) / sizeof(float), DType::kF32)
                            ->Wait(timeout));
  std::vector<RankStats> out(n);
  for (int r = 0; r < n; ++r) {
    const int64_t* w = all.data() + static_cast<size_t>(r) * kWords;
    out[r].rank = r;
    for (int i = 0; i < kCells; ++i) out[r].memory[i] = {w[2 * i], w[2 * i + 1]};
    out[r].bytes_sent = w[2 * kCells];
    out[r].bytes_received = w[2 * kCells + 1];
    out[r].comm_wait_seconds = static_cast<double>(w[2 * kCells + 2]) * 1e-9;
    out[r].peak_rss = w[2 * kCells + 3];
    out[r].cgroup_usage = w[2 * kCells + 4];
    out[r].cgroup_limit = w[2 * kCells + 5];
    out[r].bytes_sent_cross_node = w[2 * kCells + 6];
  }
  return out;
}

}  // namespace accel::train

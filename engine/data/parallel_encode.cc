#include "engine/data/parallel_encode.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace accel::data {
namespace {

constexpr size_t kRecordsPerChunk = 64;

struct Chunk {
  size_t file, begin, end;
  int64_t bytes;
};

}  // namespace

std::vector<std::vector<absl::StatusOr<EncodedDocument>>> EncodeRecords(
    const RecordEncoder& encoder, const std::vector<SourceFile>& files, int threads,
    const ProgressFn& progress) {
  std::vector<std::vector<absl::StatusOr<EncodedDocument>>> results(files.size());
  std::vector<Chunk> chunks;
  int64_t bytes_total = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const auto& records = files[f].records;
    results[f].resize(records.size(), absl::UnknownError("not encoded"));
    for (size_t b = 0; b < records.size(); b += kRecordsPerChunk) {
      Chunk c{f, b, std::min(records.size(), b + kRecordsPerChunk), 0};
      for (size_t r = c.begin; r < c.end; ++r) c.bytes += static_cast<int64_t>(records[r].text.size());
      bytes_total += c.bytes;
      chunks.push_back(c);
    }
  }

  std::atomic<size_t> next{0};
  absl::Mutex mu;
  int64_t bytes_done = 0;
  int64_t documents = 0;
  int running = 0;
  auto work = [&] {
    for (size_t i = next++; i < chunks.size(); i = next++) {
      const Chunk& c = chunks[i];
      for (size_t r = c.begin; r < c.end; ++r) {
        results[c.file][r] = encoder.Encode(files[c.file].records[r].text);
      }
      absl::MutexLock lock(&mu);
      bytes_done += c.bytes;
      documents += static_cast<int64_t>(c.end - c.begin);
    }
    absl::MutexLock lock(&mu);
    --running;
  };
  const int n = std::max(1, threads);
  {
    absl::MutexLock lock(&mu);
    running = n;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) pool.emplace_back(work);
  // Workers always finish (each chunk is finite work); the timeout only paces the reports,
  // which run outside the lock so a slow callback never holds the workers up.
  auto all_done = [&] { return running == 0; };
  for (bool done = false; !done;) {
    PrepareProgress now;
    {
      absl::MutexLock lock(&mu);
      done = mu.AwaitWithTimeout(absl::Condition(&all_done), absl::Milliseconds(100));
      now = {bytes_done, bytes_total, documents};
    }
    if (progress) progress(now);
  }
  for (auto& t : pool) t.join();
  return results;
}

}  // namespace accel::data

// The per-rank file of a sharded checkpoint (rank_<R>.bin): a checksummed header naming the
// flat ranges the file holds, the raw f32 data of each range (params, exp_avg, exp_avg_sq), a
// table of CRC-32C checksums, one per block of the data, and a footer. Exact byte layout:
// docs/checkpoint_format.md.
//
// A reader opens a file by reading only its header, block table and footer (a few KB for a
// 1.5 GB file); data is read on demand, a whole block at a time, each block verified before any
// of its bytes are handed out. So a rank that needs 1/4 of a file reads about 1/4 of it.
//
// Errors: DataLoss naming the file and the byte offset for a bad magic or version, a checksum
// mismatch, an inconsistent header or a size that disagrees with the header (a truncated or
// extended file); NotFound for a missing file; InvalidArgument for a caller's bad request.
// RankFileReader's methods are safe to call concurrently (one cached block behind a mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/base/env.h"
#include "engine/checkpoint/sharded_checkpoint.h"

namespace accel::checkpoint {

inline constexpr char kRankFileMagic[8] = {'A', 'C', 'C', 'E', 'L', 'R', 'N', 'K'};
inline constexpr char kRankFileEndMagic[8] = {'A', 'C', 'C', 'E', 'L', 'E', 'N', 'D'};
inline constexpr uint32_t kRankFileVersion = 1;
// Fixed file offsets of header fields, for error messages and tests.
inline constexpr uint64_t kRankFileVersionOffset = 8;
inline constexpr uint64_t kRankFileStepOffset = 16;
inline constexpr uint64_t kRankFileRankOffset = 24;
inline constexpr uint64_t kRankFileFooterBytes = 16;

// The three arrays stored for every range, in file order.
enum class Section : int { kParams = 0, kExpAvg = 1, kExpAvgSq = 2 };
inline constexpr int kNumSections = 3;

// One range as the header records it: flat elements [flat_begin, flat_end) and the absolute
// file offset of each section's first byte.
struct RankFileRange {
  int64_t flat_begin = 0, flat_end = 0;
  uint64_t section_offset[kNumSections] = {0, 0, 0};
  int64_t numel() const { return flat_end - flat_begin; }
};

// Writes the file at `path` (truncating it), then fsyncs and closes it. Does not sync the
// directory. InvalidArgument for a negative step or rank, a bad block size, a range with
// begin > end or a missing pointer, or ranges that overlap.
[[nodiscard]] absl::Status WriteRankFileAt(Env* env, const std::string& path, int64_t step,
                                           int rank, const std::vector<SaveRange>& ranges,
                                           const RankFileOptions& options);

class RankFileReader {
 public:
  // Reads and verifies the header (magic, version, checksum, consistency), the file's size,
  // the block table and the footer. No data is read.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<RankFileReader>> Open(
      Env* env, const std::string& path);

  const std::string& path() const { return file_->Path(); }
  int64_t step() const { return step_; }
  int rank() const { return rank_; }
  uint32_t block_bytes() const { return block_bytes_; }
  uint64_t file_size() const { return file_->Size(); }
  uint64_t data_begin() const { return data_begin_; }
  uint64_t data_bytes() const { return data_bytes_; }
  size_t num_blocks() const { return block_crcs_.size(); }
  // CRC-32C of the header bytes (checksum included) followed by the block table: one value that
  // covers the whole file, since every data block is covered by its table entry.
  uint32_t file_crc() const { return file_crc_; }
  const std::vector<RankFileRange>& ranges() const { return ranges_; }

  // DataLoss naming the file and field offset when the header's step or rank differs.
  [[nodiscard]] absl::Status ExpectIdentity(int64_t step, int rank) const;

  // Copies flat elements [flat_begin, flat_end) of `section` of ranges()[range_index] into dst,
  // reading and verifying every block those bytes touch. The last partly used block is kept,
  // so reading a section piece by piece in order reads each block once. InvalidArgument if the
  // elements lie outside that range.
  [[nodiscard]] absl::Status Read(size_t range_index, Section section, int64_t flat_begin,
                                  int64_t flat_end, float* dst) const;

  // Reads every data block and checks its checksum: DataLoss at the first bad one.
  [[nodiscard]] absl::Status VerifyAll() const;

 private:
  explicit RankFileReader(std::unique_ptr<RandomAccessFile> file) : file_(std::move(file)) {}
  [[nodiscard]] absl::Status ParseHeader(const std::string& bytes);
  [[nodiscard]] absl::Status ReadTableAndFooter(uint32_t header_crc);
  // Copies data bytes [begin, end) (relative to data_begin) into dst, verifying whole blocks.
  [[nodiscard]] absl::Status ReadData(uint64_t begin, uint64_t end, char* dst) const;
  [[nodiscard]] absl::Status CheckBlock(size_t block, const char* bytes, uint64_t n) const;

  std::unique_ptr<RandomAccessFile> file_;
  int64_t step_ = 0;
  int rank_ = 0;
  uint32_t block_bytes_ = 0;
  uint64_t data_begin_ = 0, data_bytes_ = 0;
  uint32_t file_crc_ = 0;
  std::vector<RankFileRange> ranges_;
  std::vector<uint32_t> block_crcs_;

  mutable absl::Mutex cache_mu_;
  mutable int64_t cached_block_ ABSL_GUARDED_BY(cache_mu_) = -1;
  mutable std::vector<char> cache_ ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace accel::checkpoint

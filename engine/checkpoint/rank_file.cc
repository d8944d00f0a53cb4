#include "engine/checkpoint/rank_file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/crc32c.h"

namespace accel::checkpoint {
namespace {

static_assert(std::endian::native == std::endian::little,
              "rank files hold raw little-endian floats copied to and from host arrays");

// Header body: fixed fields, then one record per range (see docs/checkpoint_format.md).
constexpr uint64_t kPreambleBytes = 16;     // magic, version, header length
constexpr uint64_t kFixedHeaderBytes = 40;  // step .. data_bytes
constexpr uint64_t kRangeRecordBytes = 40;  // begin, end, three section offsets
constexpr uint64_t kNumRangesOffset = 28;
constexpr uint64_t kBlockBytesOffset = 32;
constexpr uint64_t kReservedOffset = 36;
constexpr uint64_t kDataBeginOffset = 40;
constexpr uint64_t kDataBytesOffset = 48;
constexpr uint64_t kRangesOffset = 56;
constexpr uint32_t kMinBlockBytes = 64;
// Bytes handed to one WritableFile::Append.
constexpr uint64_t kAppendChunk = uint64_t{8} << 20;

template <typename T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out->append(b, sizeof(T));
}

template <typename T>
T Get(const std::string& bytes, uint64_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

// Running CRC-32C of each fixed-size block of a byte stream fed in arbitrary pieces.
class BlockChecksums {
 public:
  explicit BlockChecksums(uint32_t block_bytes) : block_bytes_(block_bytes) {}
  void Add(const char* p, uint64_t n) {
    while (n > 0) {
      const uint64_t take = std::min<uint64_t>(n, block_bytes_ - fill_);
      crc_ = crc32c::Extend(crc_, p, take);
      fill_ += take;
      p += take;
      n -= take;
      if (fill_ == block_bytes_) Flush();
    }
  }
  std::vector<uint32_t> Finish() {
    if (fill_ > 0) Flush();
    return std::move(crcs_);
  }

 private:
  void Flush() {
    crcs_.push_back(crc_);
    crc_ = 0;
    fill_ = 0;
  }
  uint32_t block_bytes_;
  uint64_t fill_ = 0;
  uint32_t crc_ = 0;
  std::vector<uint32_t> crcs_;
};

absl::Status ValidateRanges(const std::string& path, const std::vector<SaveRange>& ranges) {
  std::vector<std::pair<int64_t, int64_t>> sorted;
  for (const SaveRange& r : ranges) {
    if (r.flat_begin < 0 || r.flat_end < r.flat_begin) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": invalid range [", r.flat_begin, ", ", r.flat_end, ")"));
    }
    if (r.flat_end > r.flat_begin &&
        (r.params == nullptr || r.exp_avg == nullptr || r.exp_avg_sq == nullptr)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": range [", r.flat_begin, ", ",
                                                     r.flat_end, ") is missing a data pointer"));
    }
    if (r.flat_begin < r.flat_end) sorted.emplace_back(r.flat_begin, r.flat_end);
  }
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].first < sorted[i - 1].second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ranges [", sorted[i - 1].first, ", ", sorted[i - 1].second,
                       ") and [", sorted[i].first, ", ", sorted[i].second, ") overlap"));
    }
  }
  return absl::OkStatus();
}

absl::Status AppendTracked(WritableFile* file, BlockChecksums* sums, const char* p, uint64_t n) {
  while (n > 0) {
    const uint64_t take = std::min(n, kAppendChunk);
    sums->Add(p, take);
    ACCEL_RETURN_IF_ERROR(file->Append(std::string_view(p, take)));
    p += take;
    n -= take;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteRankFileAt(Env* env, const std::string& path, int64_t step, int rank,
                             const std::vector<SaveRange>& ranges, const RankFileOptions& options) {
  if (step < 0 || rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": step ", step, " and rank ", rank, " must be >= 0"));
  }
  if (options.block_bytes < kMinBlockBytes || options.block_bytes % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": block size ", options.block_bytes,
                                                   " must be >= 64 and a multiple of 4"));
  }
  ACCEL_RETURN_IF_ERROR(ValidateRanges(path, ranges));

  const uint64_t header_len = kFixedHeaderBytes + kRangeRecordBytes * ranges.size();
  const uint64_t data_begin = kPreambleBytes + header_len + 4;
  std::string header(kRankFileMagic, sizeof(kRankFileMagic));
  Put<uint32_t>(&header, kRankFileVersion);
  Put<uint32_t>(&header, static_cast<uint32_t>(header_len));
  Put<int64_t>(&header, step);
  Put<int32_t>(&header, rank);
  Put<uint32_t>(&header, static_cast<uint32_t>(ranges.size()));
  Put<uint32_t>(&header, options.block_bytes);
  Put<uint32_t>(&header, 0);  // reserved (kReservedOffset)
  Put<uint64_t>(&header, data_begin);
  uint64_t data_bytes = 0;
  for (const SaveRange& r : ranges)
    data_bytes += 12 * static_cast<uint64_t>(r.flat_end - r.flat_begin);
  Put<uint64_t>(&header, data_bytes);
  uint64_t cursor = data_begin;
  for (const SaveRange& r : ranges) {
    const uint64_t section = 4 * static_cast<uint64_t>(r.flat_end - r.flat_begin);
    Put<int64_t>(&header, r.flat_begin);
    Put<int64_t>(&header, r.flat_end);
    for (int s = 0; s < kNumSections; ++s) Put<uint64_t>(&header, cursor + s * section);
    cursor += kNumSections * section;
  }
  Put<uint32_t>(&header, crc32c::Value(header));

  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(path));
  ACCEL_RETURN_IF_ERROR(file->Append(header));
  BlockChecksums sums(options.block_bytes);
  for (const SaveRange& r : ranges) {
    const uint64_t section = 4 * static_cast<uint64_t>(r.flat_end - r.flat_begin);
    if (section == 0) continue;
    for (const float* p : {r.params, r.exp_avg, r.exp_avg_sq}) {
      ACCEL_RETURN_IF_ERROR(
          AppendTracked(file.get(), &sums, reinterpret_cast<const char*>(p), section));
    }
  }
  const std::vector<uint32_t> crcs = sums.Finish();
  std::string tail;
  for (uint32_t c : crcs) Put<uint32_t>(&tail, c);
  const uint32_t file_crc = crc32c::Extend(crc32c::Value(header), tail.data(), tail.size());
  Put<uint32_t>(&tail, file_crc);
  Put<uint32_t>(&tail, static_cast<uint32_t>(crcs.size()));
  tail.append(kRankFileEndMagic, sizeof(kRankFileEndMagic));
  ACCEL_RETURN_IF_ERROR(file->Append(tail));
  ACCEL_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

// ---------------------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<RankFileReader>> RankFileReader::Open(Env* env,
                                                                     const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  const uint64_t size = file->Size();
  auto loss = [&](auto&&... parts) {
    return absl::DataLossError(absl::StrCat(path, ": ", parts...));
  };
  if (size < kPreambleBytes) {
    return loss("truncated at offset ", size, ": a rank file starts with a ", kPreambleBytes,
                "-byte preamble");
  }
  std::string preamble(kPreambleBytes, '\0');
  ACCEL_RETURN_IF_ERROR(file->Read(0, kPreambleBytes, preamble.data()));
  if (std::memcmp(preamble.data(), kRankFileMagic, sizeof(kRankFileMagic)) != 0) {
    return loss("bad magic at offset 0 (not an accel rank file)");
  }
  const uint32_t version = Get<uint32_t>(preamble, kRankFileVersionOffset);
  if (version != kRankFileVersion) {
    return loss("format version ", version, " at offset ", kRankFileVersionOffset,
                "; this build reads version ", kRankFileVersion);
  }
  const uint64_t header_len = Get<uint32_t>(preamble, 12);
  // A million ranges is far beyond any layout; the bound keeps a corrupt length from
  // allocating gigabytes before the checksum can reject it.
  if (header_len < kFixedHeaderBytes || (header_len - kFixedHeaderBytes) % kRangeRecordBytes != 0 ||
      header_len > kFixedHeaderBytes + kRangeRecordBytes * (uint64_t{1} << 20)) {
    return loss("invalid header length ", header_len, " at offset 12");
  }
  const uint64_t header_end = kPreambleBytes + header_len + 4;
  if (header_end > size) {
    return loss("truncated at offset ", size, ": the header runs to offset ", header_end);
  }
  std::string header(header_end, '\0');
  ACCEL_RETURN_IF_ERROR(file->Read(0, header_end, header.data()));
  const uint32_t header_crc = crc32c::Value(header.data(), header_end - 4);
  if (header_crc != Get<uint32_t>(header, header_end - 4)) {
    return loss("header checksum mismatch (header bytes [0, ", header_end - 4,
                "), checksum at offset ", header_end - 4, ")");
  }
  std::unique_ptr<RankFileReader> reader(new RankFileReader(std::move(file)));
  ACCEL_RETURN_IF_ERROR(reader->ParseHeader(header));
  ACCEL_RETURN_IF_ERROR(reader->ReadTableAndFooter(crc32c::Value(header)));
  return reader;
}

absl::Status RankFileReader::ParseHeader(const std::string& h) {
  auto loss = [&](auto&&... parts) {
    return absl::DataLossError(absl::StrCat(path(), ": ", parts...));
  };
  step_ = Get<int64_t>(h, kRankFileStepOffset);
  rank_ = Get<int32_t>(h, kRankFileRankOffset);
  const uint64_t num_ranges = Get<uint32_t>(h, kNumRangesOffset);
  block_bytes_ = Get<uint32_t>(h, kBlockBytesOffset);
  data_begin_ = Get<uint64_t>(h, kDataBeginOffset);
  data_bytes_ = Get<uint64_t>(h, kDataBytesOffset);
  if (step_ < 0) return loss("negative step ", step_, " at offset ", kRankFileStepOffset);
  if (rank_ < 0) return loss("negative rank ", rank_, " at offset ", kRankFileRankOffset);
  if (kRangesOffset + num_ranges * kRangeRecordBytes + 4 != h.size()) {
    return loss(num_ranges, " ranges at offset ", kNumRangesOffset,
                " disagree with the header length at offset 12");
  }
  // Zero in version 1: a reader that ignored it would misread a file that gave it a meaning.
  if (const uint32_t reserved = Get<uint32_t>(h, kReservedOffset); reserved != 0) {
    return loss("reserved field ", reserved, " at offset ", kReservedOffset, " is not 0");
  }
  if (block_bytes_ < kMinBlockBytes || block_bytes_ % 4 != 0) {
    return loss("invalid block size ", block_bytes_, " at offset ", kBlockBytesOffset);
  }
  if (data_begin_ != h.size()) {
    return loss("data offset ", data_begin_, " at offset ", kDataBeginOffset,
                " does not follow the header (", h.size(), ")");
  }
  uint64_t cursor = data_begin_;
  for (uint64_t i = 0; i < num_ranges; ++i) {
    const uint64_t at = kRangesOffset + i * kRangeRecordBytes;
    RankFileRange r;
    r.flat_begin = Get<int64_t>(h, at);
    r.flat_end = Get<int64_t>(h, at + 8);
    if (r.flat_begin < 0 || r.flat_end < r.flat_begin || r.numel() > (int64_t{1} << 50)) {
      return loss("invalid range [", r.flat_begin, ", ", r.flat_end, ") at offset ", at);
    }
    const uint64_t section = 4 * static_cast<uint64_t>(r.numel());
    for (int s = 0; s < kNumSections; ++s) {
      r.section_offset[s] = Get<uint64_t>(h, at + 16 + 8 * s);
      if (r.section_offset[s] != cursor + s * section) {
        return loss("section offset ", r.section_offset[s], " at offset ", at + 16 + 8 * s,
                    ", expected ", cursor + s * section);
      }
    }
    cursor += kNumSections * section;
    ranges_.push_back(r);
  }
  if (cursor - data_begin_ != data_bytes_) {
    return loss("data size ", data_bytes_, " at offset ", kDataBytesOffset,
                " disagrees with the ranges (", cursor - data_begin_, " bytes)");
  }
  return absl::OkStatus();
}

absl::Status RankFileReader::ReadTableAndFooter(uint32_t header_crc) {
  const uint64_t num_blocks = (data_bytes_ + block_bytes_ - 1) / block_bytes_;
  const uint64_t table_begin = data_begin_ + data_bytes_;
  const uint64_t expected = table_begin + 4 * num_blocks + kRankFileFooterBytes;
  const uint64_t size = file_->Size();
  if (size < expected) {
    return absl::DataLossError(absl::StrCat(path(), ": truncated at offset ", size,
                                            ": the header describes a file of ", expected,
                                            " bytes"));
  }
  if (size > expected) {
    return absl::DataLossError(absl::StrCat(path(), ": ", size - expected,
                                            " unexpected bytes after offset ", expected,
                                            " (the end the header describes)"));
  }
  std::string tail(4 * num_blocks + kRankFileFooterBytes, '\0');
  ACCEL_RETURN_IF_ERROR(file_->Read(table_begin, tail.size(), tail.data()));
  const uint64_t footer = 4 * num_blocks;
  if (std::memcmp(tail.data() + footer + 8, kRankFileEndMagic, sizeof(kRankFileEndMagic)) != 0) {
    return absl::DataLossError(
        absl::StrCat(path(), ": bad end magic at offset ", table_begin + footer + 8));
  }
  if (Get<uint32_t>(tail, footer + 4) != num_blocks) {
    return absl::DataLossError(absl::StrCat(path(), ": block count ",
                                            Get<uint32_t>(tail, footer + 4), " at offset ",
                                            table_begin + footer + 4, ", expected ", num_blocks));
  }
  file_crc_ = Get<uint32_t>(tail, footer);
  if (crc32c::Extend(header_crc, tail.data(), footer) != file_crc_) {
    return absl::DataLossError(absl::StrCat(path(), ": block table checksum mismatch (table at ",
                                            "offset ", table_begin, ", checksum at offset ",
                                            table_begin + footer, ")"));
  }
  block_crcs_.resize(num_blocks);
  for (uint64_t k = 0; k < num_blocks; ++k) block_crcs_[k] = Get<uint32_t>(tail, 4 * k);
  return absl::OkStatus();
}

absl::Status RankFileReader::ExpectIdentity(int64_t step, int rank) const {
  if (step_ != step) {
    return absl::DataLossError(absl::StrCat(path(), ": step ", step_, " at offset ",
                                            kRankFileStepOffset, ", expected step ", step));
  }
  if (rank_ != rank) {
    return absl::DataLossError(absl::StrCat(path(), ": rank ", rank_, " at offset ",
                                            kRankFileRankOffset, ", expected rank ", rank));
  }
  return absl::OkStatus();
}

absl::Status RankFileReader::CheckBlock(size_t block, const char* bytes, uint64_t n) const {
  if (crc32c::Value(bytes, n) != block_crcs_[block]) {
    const uint64_t begin = data_begin_ + block * uint64_t{block_bytes_};
    return absl::DataLossError(absl::StrCat(path(), ": checksum mismatch in data block ", block,
                                            " at offset ", begin, " (bytes [", begin, ", ",
                                            begin + n, "))"));
  }
  return absl::OkStatus();
}

absl::Status RankFileReader::ReadData(uint64_t begin, uint64_t end, char* dst) const {
  if (begin >= end) return absl::OkStatus();
  const uint64_t b = block_bytes_;
  for (uint64_t k = begin / b; k <= (end - 1) / b; ++k) {
    const uint64_t block_begin = k * b;
    const uint64_t block_end = std::min(block_begin + b, data_bytes_);
    const uint64_t n = block_end - block_begin;
    if (begin <= block_begin && block_end <= end) {
      // Whole block wanted: read it straight into place and verify it there.
      char* into = dst + (block_begin - begin);
      ACCEL_RETURN_IF_ERROR(file_->Read(data_begin_ + block_begin, n, into));
      ACCEL_RETURN_IF_ERROR(CheckBlock(k, into, n));
      continue;
    }
    // Part of a block: its other part is likely the next request (the rest of a tensor, or the
    // next tensor), so keep it.
    absl::MutexLock lock(&cache_mu_);
    if (cached_block_ != static_cast<int64_t>(k)) {
      cached_block_ = -1;
      cache_.resize(n);  // n < b only for the last block (small files stay small)
      ACCEL_RETURN_IF_ERROR(file_->Read(data_begin_ + block_begin, n, cache_.data()));
      ACCEL_RETURN_IF_ERROR(CheckBlock(k, cache_.data(), n));
      cached_block_ = static_cast<int64_t>(k);
    }
    const uint64_t lo = std::max(begin, block_begin), hi = std::min(end, block_end);
    std::memcpy(dst + (lo - begin), cache_.data() + (lo - block_begin), hi - lo);
  }
  return absl::OkStatus();
}

absl::Status RankFileReader::Read(size_t range_index, Section section, int64_t flat_begin,
                                  int64_t flat_end, float* dst) const {
  if (range_index >= ranges_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path(), ": no range ", range_index, " (", ranges_.size(), " ranges)"));
  }
  const RankFileRange& r = ranges_[range_index];
  if (flat_begin < r.flat_begin || flat_end > r.flat_end || flat_begin > flat_end) {
    return absl::InvalidArgumentError(absl::StrCat(path(), ": elements [", flat_begin, ", ",
                                                   flat_end, ") are not inside range [",
                                                   r.flat_begin, ", ", r.flat_end, ")"));
  }
  const uint64_t first = r.section_offset[static_cast<int>(section)] - data_begin_ +
                         4 * static_cast<uint64_t>(flat_begin - r.flat_begin);
  return ReadData(first, first + 4 * static_cast<uint64_t>(flat_end - flat_begin),
                  reinterpret_cast<char*>(dst));
}

absl::Status RankFileReader::VerifyAll() const {
  std::vector<char> scratch(std::min<uint64_t>(block_bytes_, data_bytes_));
  for (size_t k = 0; k < block_crcs_.size(); ++k) {
    const uint64_t begin = k * uint64_t{block_bytes_};
    const uint64_t n = std::min<uint64_t>(block_bytes_, data_bytes_ - begin);
    ACCEL_RETURN_IF_ERROR(file_->Read(data_begin_ + begin, n, scratch.data()));
    ACCEL_RETURN_IF_ERROR(CheckBlock(k, scratch.data(), n));
  }
  return absl::OkStatus();
}

}  // namespace accel::checkpoint

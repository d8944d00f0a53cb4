// Fuzz target: the per-rank file of a sharded checkpoint (RankFileReader).
// Rank files are checksummed (header CRC, block table CRC, one CRC per data block), so most
// mutations stop at a checksum. The first input byte selects repairs the harness makes before
// opening: bit 0 recomputes the header checksum, bit 1 the data-block checksums and the table
// checksum (from the footer's block count), so the checks behind them are fuzzed too.
// Properties: an error is DataLoss naming the file; an opened file's ranges and sections lie
// inside its data block and the file has exactly the size the header describes; reads of every
// section succeed or fail with DataLoss; and a file whose data verifies, written again by
// WriteRankFileAt from what was read, is the same bytes (the format is canonical).
#include <cstring>
#include <string>
#include <vector>

#include "engine/checkpoint/crc32c.h"
#include "engine/checkpoint/rank_file.h"
#include "engine/testing/mem_env.h"
#include "fuzz/fuzz_check.h"

namespace accel::fuzz {
namespace {

using checkpoint::RankFileReader;
using checkpoint::RankFileRange;
using checkpoint::Section;
namespace crc32c = checkpoint::crc32c;

constexpr char kPath[] = "/ckpt/step_1/rank_0.bin";
constexpr char kOut[] = "/out.bin";

uint32_t Load32(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint64_t Load64(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}
void Store32(std::string* b, size_t at, uint32_t v) { std::memcpy(b->data() + at, &v, 4); }

// Layout (docs/checkpoint_format.md): preamble [magic 8][version 4][header_len 4], header
// fields, header CRC; data blocks; block CRC table; footer [file crc 4][block count 4][magic 8].
void Repair(std::string* b, uint8_t how) {
  if (b->size() < 16) return;
  const uint64_t header_end = 16 + uint64_t{Load32(*b, 12)} + 4;
  if (header_end < 64 || header_end > b->size()) return;
  if (how & 1) Store32(b, header_end - 4, crc32c::Value(b->data(), header_end - 4));
  if (!(how & 2) || b->size() < header_end + 16) return;
  const uint64_t blocks = Load32(*b, b->size() - 12);
  const uint64_t block_bytes = Load32(*b, 32);
  const uint64_t data_begin = Load64(*b, 40);
  if (block_bytes == 0 || data_begin != header_end) return;
  if (4 * blocks + 16 > b->size() - header_end) return;
  const uint64_t table = b->size() - 16 - 4 * blocks;
  const uint64_t data_bytes = table - data_begin;
  if ((data_bytes + block_bytes - 1) / block_bytes != blocks) return;
  for (uint64_t k = 0; k < blocks; ++k) {
    const uint64_t begin = data_begin + k * block_bytes;
    const uint64_t n = std::min(block_bytes, table - begin);
    Store32(b, table + 4 * k, crc32c::Value(b->data() + begin, n));
  }
  const uint32_t header_crc = crc32c::Value(b->data(), header_end);
  Store32(b, b->size() - 16, crc32c::Extend(header_crc, b->data() + table, 4 * blocks));
}

void CheckLayout(const RankFileReader& r, uint64_t size) {
  FUZZ_CHECK(r.data_begin() <= size && r.data_bytes() <= size - r.data_begin(),
             "data block outside the file");
  const uint64_t blocks = (r.data_bytes() + r.block_bytes() - 1) / r.block_bytes();
  FUZZ_CHECK(r.num_blocks() == blocks, "block count");
  FUZZ_CHECK(r.data_begin() + r.data_bytes() + 4 * blocks + checkpoint::kRankFileFooterBytes ==
                 size,
             "file size differs from what the header describes");
  const uint64_t data_end = r.data_begin() + r.data_bytes();
  for (const RankFileRange& range : r.ranges()) {
    FUZZ_CHECK(range.flat_begin >= 0 && range.flat_end >= range.flat_begin, "bad range");
    const uint64_t section = 4 * static_cast<uint64_t>(range.numel());
    FUZZ_CHECK(range.numel() <= static_cast<int64_t>(r.data_bytes() / 12),
               "a range larger than the data block");
    for (int s = 0; s < checkpoint::kNumSections; ++s) {
      FUZZ_CHECK(range.section_offset[s] >= r.data_begin() &&
                     range.section_offset[s] + section <= data_end,
                 "a section outside the data block");
    }
  }
}

}  // namespace
}  // namespace accel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  if (size == 0) return 0;
  std::string bytes(AsText(data + 1, size - 1));
  Repair(&bytes, data[0]);
  accel::testing::MemEnv env;
  PutFile(&env, kPath, bytes);
  auto reader = RankFileReader::Open(&env, kPath);
  if (!reader.ok()) {
    CheckError(reader.status(), {absl::StatusCode::kDataLoss}, kPath);
    return 0;
  }
  const RankFileReader& r = **reader;
  CheckLayout(r, bytes.size());
  FUZZ_CHECK(r.ExpectIdentity(r.step(), r.rank()).ok(), "ExpectIdentity of its own identity");
  absl::Status verify = r.VerifyAll();
  if (!verify.ok()) CheckError(verify, {absl::StatusCode::kDataLoss}, kPath);
  // Every section of every range, read in two pieces (the second reuses the cached block).
  std::vector<std::vector<float>> sections;
  bool all_read = true;
  for (size_t i = 0; i < r.ranges().size(); ++i) {
    const RankFileRange& range = r.ranges()[i];
    for (int s = 0; s < accel::checkpoint::kNumSections; ++s) {
      std::vector<float> out(static_cast<size_t>(range.numel()));
      const int64_t mid = range.flat_begin + range.numel() / 2;
      absl::Status a = r.Read(i, static_cast<Section>(s), range.flat_begin, mid, out.data());
      absl::Status b = a.ok() ? r.Read(i, static_cast<Section>(s), mid, range.flat_end,
                                       out.data() + (mid - range.flat_begin))
                              : a;
      if (!b.ok()) {
        CheckError(b, {absl::StatusCode::kDataLoss}, kPath);
        all_read = false;
      }
      sections.push_back(std::move(out));
    }
  }
  FUZZ_CHECK(!verify.ok() || all_read, "VerifyAll passed but a section read failed");
  if (!verify.ok()) return 0;
  // Write the same content again: the bytes must be identical.
  std::vector<accel::checkpoint::SaveRange> save;
  for (size_t i = 0; i < r.ranges().size(); ++i) {
    save.push_back({r.ranges()[i].flat_begin, r.ranges()[i].flat_end, sections[3 * i].data(),
                    sections[3 * i + 1].data(), sections[3 * i + 2].data()});
  }
  accel::checkpoint::RankFileOptions options;
  options.block_bytes = r.block_bytes();
  absl::Status w = accel::checkpoint::WriteRankFileAt(&env, kOut, r.step(), r.rank(), save, options);
  FUZZ_CHECK(w.ok(), "writing back what the reader accepted: " + w.ToString());
  auto written = accel::ReadFileToString(&env, kOut);
  FUZZ_CHECK(written.ok(), "reading back");
  FUZZ_CHECK(*written == bytes, "an accepted rank file is not what the writer writes for it");
  return 0;
}

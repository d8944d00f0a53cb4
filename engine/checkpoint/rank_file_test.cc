#include "engine/checkpoint/rank_file.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/checkpoint/checkpoint_test_util.h"
#include "engine/checkpoint/crc32c.h"
#include "engine/testing/mem_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::checkpoint {
namespace {

using ::accel::checkpoint::testing::OverwriteFile;
using ::accel::checkpoint::testing::SaveRangesOf;
using ::accel::checkpoint::testing::State;
using ::testing::HasSubstr;

constexpr char kPath[] = "/ckpt/rank_1.bin";

class RankFileTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override { ASSERT_TRUE(env_.CreateDirs("/ckpt").ok()); }
  // Ranges out of order, one empty, with a partial last block for most block sizes.
  void Write(uint32_t block_bytes) {
    ASSERT_TRUE(WriteRankFileAt(&env_, kPath, 7, 1, SaveRangesOf(state_, ranges_),
                                {.block_bytes = block_bytes})
                    .ok());
  }
  std::string Contents() { return *ReadFileToString(&env_, kPath); }

  accel::testing::MemEnv env_;
  State state_{300, 5};
  std::vector<std::pair<int64_t, int64_t>> ranges_ = {{200, 261}, {10, 10}, {0, 97}};
};

TEST_P(RankFileTest, RoundTripsEveryRangeAndSection) {
  Write(GetParam());
  auto reader = RankFileReader::Open(&env_, kPath);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->step(), 7);
  EXPECT_EQ((*reader)->rank(), 1);
  EXPECT_EQ((*reader)->block_bytes(), GetParam());
  ASSERT_EQ((*reader)->ranges().size(), 3u);
  EXPECT_EQ((*reader)->data_bytes(), 12u * (61 + 97));
  EXPECT_EQ((*reader)->file_size(), env_.GetFileSize(kPath).value());
  EXPECT_TRUE((*reader)->VerifyAll().ok());
  const std::vector<float>* sections[] = {&state_.params, &state_.exp_avg, &state_.exp_avg_sq};
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const auto [b, e] = ranges_[i];
    EXPECT_EQ((*reader)->ranges()[i].flat_begin, b);
    EXPECT_EQ((*reader)->ranges()[i].flat_end, e);
    for (int s = 0; s < kNumSections; ++s) {
      // Every sub-range [lo, hi) touching any block boundary pattern.
      for (int64_t lo = b; lo <= e; lo += 7) {
        for (int64_t hi = lo; hi <= e; hi += 11) {
          std::vector<float> got(hi - lo, -1.f);
          ASSERT_TRUE((*reader)->Read(i, static_cast<Section>(s), lo, hi, got.data()).ok());
          ASSERT_TRUE(std::equal(got.begin(), got.end(), sections[s]->begin() + lo))
              << "range " << i << " section " << s << " [" << lo << ", " << hi << ")";
        }
      }
    }
  }
}

TEST_P(RankFileTest, EveryBitFlipIsDataLoss) {
  Write(GetParam());
  const std::string clean = Contents();
  for (size_t at = 0; at < clean.size(); ++at) {
    std::string bad = clean;
    bad[at] ^= static_cast<char>(1 << (at % 8));
    ASSERT_TRUE(OverwriteFile(&env_, kPath, bad).ok());
    absl::Status s;
    auto reader = RankFileReader::Open(&env_, kPath);
    s = reader.ok() ? (*reader)->VerifyAll() : reader.status();
    ASSERT_EQ(s.code(), absl::StatusCode::kDataLoss) << "flip at byte " << at << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(kPath));
    EXPECT_THAT(s.message(), HasSubstr("offset"));
  }
}

TEST_P(RankFileTest, EveryTruncationAndExtensionIsDataLoss) {
  Write(GetParam());
  const std::string clean = Contents();
  for (size_t len = 0; len < clean.size(); len += (len < 200 ? 1 : 37)) {
    ASSERT_TRUE(OverwriteFile(&env_, kPath, clean.substr(0, len)).ok());
    auto reader = RankFileReader::Open(&env_, kPath);
    ASSERT_EQ(reader.status().code(), absl::StatusCode::kDataLoss) << "length " << len;
    EXPECT_THAT(reader.status().message(), HasSubstr("offset"));
  }
  ASSERT_TRUE(OverwriteFile(&env_, kPath, clean + "x").ok());
  auto reader = RankFileReader::Open(&env_, kPath);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(reader.status().message(), HasSubstr("unexpected bytes after offset"));
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, RankFileTest, ::testing::Values(64u, 100u, 1024u, 1u << 20));

TEST(RankFileErrorsTest, BadMagicVersionAndIdentityNameTheOffset) {
  accel::testing::MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/ckpt").ok());
  State state(64, 1);
  ASSERT_TRUE(WriteRankFileAt(&env, kPath, 3, 2, SaveRangesOf(state, {{0, 64}}), {}).ok());
  const std::string clean = *ReadFileToString(&env, kPath);

  std::string bad = clean;
  bad[0] = 'X';
  ASSERT_TRUE(OverwriteFile(&env, kPath, bad).ok());
  EXPECT_THAT(RankFileReader::Open(&env, kPath).status().message(),
              HasSubstr("bad magic at offset 0"));

  bad = clean;
  bad[kRankFileVersionOffset] = 9;
  ASSERT_TRUE(OverwriteFile(&env, kPath, bad).ok());
  auto s = RankFileReader::Open(&env, kPath).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("format version 9 at offset 8"));

  ASSERT_TRUE(OverwriteFile(&env, kPath, clean).ok());
  auto reader = RankFileReader::Open(&env, kPath);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->ExpectIdentity(3, 2).ok());
  s = (*reader)->ExpectIdentity(4, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("step 3 at offset 16, expected step 4"));
  s = (*reader)->ExpectIdentity(3, 0);
  EXPECT_THAT(s.message(), HasSubstr("rank 2 at offset 24, expected rank 0"));
}

// `clean` with the u32 at `offset` set to `value` and the header checksum recomputed, as a
// writer with that bug would produce it (the fuzzer's repairs do the same).
std::string WithHeaderField(std::string clean, size_t offset, uint32_t value) {
  std::memcpy(clean.data() + offset, &value, 4);
  uint32_t header_len;
  std::memcpy(&header_len, clean.data() + 12, 4);
  const size_t crc_at = 16 + header_len;
  const uint32_t crc = crc32c::Value(clean.data(), crc_at);
  std::memcpy(clean.data() + crc_at, &crc, 4);
  return clean;
}

// Found by fuzz/rank_file_fuzz.cc: a non-zero reserved field was accepted.
TEST(RankFileErrorsTest, AReservedFieldThatIsNotZeroIsDataLoss) {
  accel::testing::MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/ckpt").ok());
  State state(64, 1);
  ASSERT_TRUE(WriteRankFileAt(&env, kPath, 3, 2, SaveRangesOf(state, {{0, 64}}), {}).ok());
  const std::string clean = *ReadFileToString(&env, kPath);
  ASSERT_TRUE(OverwriteFile(&env, kPath, WithHeaderField(clean, 36, 0x2400)).ok());
  auto s = RankFileReader::Open(&env, kPath).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("reserved field 9216 at offset 36 is not 0"));
}

TEST(RankFileErrorsTest, EmptyFileAndBadRequests) {
  accel::testing::MemEnv env;
  ASSERT_TRUE(env.CreateDirs("/ckpt").ok());
  ASSERT_TRUE(WriteRankFileAt(&env, kPath, 0, 0, {}, {}).ok());
  auto reader = RankFileReader::Open(&env, kPath);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->num_blocks(), 0u);
  EXPECT_TRUE((*reader)->VerifyAll().ok());
  float x;
  EXPECT_EQ((*reader)->Read(0, Section::kParams, 0, 1, &x).code(),
            absl::StatusCode::kInvalidArgument);

  State state(10, 1);
  EXPECT_EQ(WriteRankFileAt(&env, kPath, 0, 0, SaveRangesOf(state, {{0, 6}, {5, 10}}), {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteRankFileAt(&env, kPath, -1, 0, {}, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteRankFileAt(&env, kPath, 0, 0, {}, {.block_bytes = 30}).code(),
            absl::StatusCode::kInvalidArgument);
  SaveRange no_data{0, 4, state.params.data(), nullptr, state.exp_avg_sq.data()};
  EXPECT_EQ(WriteRankFileAt(&env, kPath, 0, 0, {no_data}, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RankFileReader::Open(&env, "/nope.bin").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace accel::checkpoint

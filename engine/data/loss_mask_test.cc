// The loss mask beside a token shard: TokenSource::Open loads X.mask for X.bin, and refuses a
// malformed one with DataLoss naming the mask file and the offset.
#include "engine/data/loss_mask.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/data/token_source.h"
#include "engine/testing/token_shard.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::data {
namespace {

using ::testing::HasSubstr;

class LossMaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = JoinPath(::testing::TempDir(),
                    absl::StrCat("loss_mask_test_", ::getpid(), "_", info->name()));
    ASSERT_TRUE(env_->CreateDirs(dir_).ok());
    bin_ = JoinPath(dir_, "train.bin");
    mask_ = JoinPath(dir_, "train.mask");
    ASSERT_TRUE(
        WriteFileAtomic(env_, bin_, accel::testing::TokenShardBytes({5, 6, 7, 8, 9})).ok());
  }
  void TearDown() override { env_->DeleteRecursively(dir_).IgnoreError(); }

  void WriteMask(const std::string& bytes) {
    ASSERT_TRUE(WriteFileAtomic(env_, mask_, bytes).ok());
  }
  absl::Status OpenStatus() { return TokenSource::Open(env_, bin_).status(); }

  Env* env_ = Env::Default();
  std::string dir_, bin_, mask_;
};

TEST_F(LossMaskTest, PathBesideTheShard) {
  EXPECT_EQ(LossMaskPath("/d/train.bin"), "/d/train.mask");
  EXPECT_EQ(LossMaskPath("/d/corpus.txt"), "/d/corpus.txt.mask");
}

TEST_F(LossMaskTest, OpenLoadsTheMaskBesideTheShard) {
  auto plain = TokenSource::Open(env_, bin_);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE((*plain)->has_mask());

  const std::vector<uint8_t> mask = {0, 0, 1, 1, 0};
  WriteMask(LossMaskBytes(mask));
  auto src = TokenSource::Open(env_, bin_);
  ASSERT_TRUE(src.ok()) << src.status();
  ASSERT_TRUE((*src)->has_mask());
  EXPECT_EQ(std::vector<uint8_t>((*src)->mask().begin(), (*src)->mask().end()), mask);
  EXPECT_EQ((*src)->size(), 5);
}

TEST_F(LossMaskTest, BadMagicNamesFileAndOffset) {
  std::string bytes = LossMaskBytes({1, 1, 1, 1, 1});
  bytes[0] = 1;
  WriteMask(bytes);
  const absl::Status s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("loss mask ", mask_, ": bad magic")));
  EXPECT_THAT(s.message(), HasSubstr("at offset 0, expected 20261203"));
}

TEST_F(LossMaskTest, BadVersionNamesOffset) {
  std::string bytes = LossMaskBytes({1, 1, 1, 1, 1});
  bytes[4] = 2;
  WriteMask(bytes);
  EXPECT_EQ(OpenStatus().message(),
            absl::StrCat("loss mask ", mask_, ": unsupported version 2 at offset 4, expected 1"));
}

TEST_F(LossMaskTest, CountOrSizeMismatchWithTheShard) {
  WriteMask(LossMaskBytes({1, 1, 1, 1}));  // the shard has 5 tokens
  absl::Status s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), absl::StrCat("loss mask ", mask_,
                                      ": count 4 at offset 8 differs from the token file's 5 "
                                      "tokens"));
  WriteMask(LossMaskBytes({1, 1, 1, 1, 1}).substr(0, 1024 + 3));  // truncated
  EXPECT_THAT(OpenStatus().message(), HasSubstr("truncated: 1027 bytes, expected 1029"));
  WriteMask(LossMaskBytes({1, 1, 1, 1, 1}) + "x");
  EXPECT_THAT(OpenStatus().message(), HasSubstr("trailing bytes: 1030 bytes, expected 1029"));
  WriteMask("short");
  EXPECT_THAT(OpenStatus().message(), HasSubstr("shorter than the 1024-byte header"));
}

TEST_F(LossMaskTest, ByteOtherThanZeroOrOneNamesOffset) {
  WriteMask(LossMaskBytes({1, 0, 1, 2, 1}));
  const absl::Status s = OpenStatus();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(),
            absl::StrCat("loss mask ", mask_, ": byte 2 at offset 1027 is neither 0 nor 1"));
}

TEST_F(LossMaskTest, SetLossMaskChecksSizeAndValues) {
  auto src = TokenSource::FromTokens(std::vector<uint16_t>{1, 2, 3}, TokenSourceKind::kTokenShard,
                                     "mem");
  EXPECT_EQ(src->SetLossMask({1, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(src->SetLossMask({1, 3, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(src->has_mask());
  EXPECT_TRUE(src->SetLossMask({0, 1, 0}).ok());
  EXPECT_TRUE(src->has_mask());
}

}  // namespace
}  // namespace accel::data

#include "engine/data/token_source.h"

#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/data/loss_mask.h"
#include "engine/testing/token_shard.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::data {
namespace {

using ::testing::HasSubstr;

class TokenSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = JoinPath(::testing::TempDir(),
                    absl::StrCat("token_source_test_", ::getpid(), "_", info->name()));
    ASSERT_TRUE(env_->CreateDirs(dir_).ok());
  }
  void TearDown() override { env_->DeleteRecursively(dir_).IgnoreError(); }

  std::string WriteBytes(std::string_view name, const std::string& bytes) {
    std::string path = JoinPath(dir_, name);
    EXPECT_TRUE(WriteFileAtomic(env_, path, bytes).ok());
    return path;
  }

  // An llm.c shard of the magic's width; `version` and `count` default to the magic's version
  // and the number of tokens written.
  std::string WriteShard(std::string_view name, const std::vector<uint32_t>& tokens,
                         int32_t magic = kTokenShardMagic,
                         std::optional<int32_t> version = std::nullopt,
                         std::optional<int32_t> count = std::nullopt) {
    return WriteBytes(name, accel::testing::TokenShardBytes(tokens, magic, version, count));
  }

  Env* env_ = Env::Default();
  std::string dir_;
};

TEST_F(TokenSourceTest, ShardRoundTrip) {
  const std::vector<uint32_t> tokens = {0, 5, 50256, 7, 65535, 3};
  const std::string path = WriteShard("a.bin", tokens);
  for (bool via_open : {false, true}) {
    auto src = via_open ? TokenSource::Open(env_, path) : TokenSource::OpenTokenShard(env_, path);
    ASSERT_TRUE(src.ok()) << src.status();
    EXPECT_EQ((*src)->kind(), TokenSourceKind::kTokenShard);
    EXPECT_EQ((*src)->path(), path);
    ASSERT_EQ((*src)->size(), 6);
    for (int i = 0; i < 6; ++i) EXPECT_EQ((*src)->token(i), tokens[i]) << i;
    EXPECT_EQ((*src)->max_token(), 65535);
    EXPECT_EQ((*src)->vocab_hint(), 65536);
    // GPT-2 shards stay at 2 bytes a token.
    EXPECT_EQ((*src)->token_bytes(), 2);
    EXPECT_EQ((*src)->storage_bytes(), 12);
    EXPECT_EQ((*src)->tokens16().size(), 6u);
    EXPECT_TRUE((*src)->tokens32().empty());
  }
}

// Shards and masks are mapped, not loaded, under the POSIX Env: the same tokens as an
// in-memory read, and the mapping outlives the file's name (a cache entry pruned while a job
// reads it keeps its pages).
TEST_F(TokenSourceTest, ShardsAndMasksAreStreamedFromAMapping) {
  std::vector<uint32_t> tokens(70000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>((i * 7919) % 65536);
  std::vector<uint8_t> mask(tokens.size());
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = (i % 3 == 0) ? 0 : 1;
  for (int32_t magic : {kTokenShardMagic, kTokenShard32Magic}) {
    const std::string path = WriteShard(absl::StrCat("s", magic, ".bin"), tokens, magic);
    WriteBytes(absl::StrCat("s", magic, ".mask"), LossMaskBytes(mask));
    auto src = TokenSource::Open(env_, path);
    ASSERT_TRUE(src.ok()) << src.status();
    EXPECT_TRUE((*src)->streamed());
    ASSERT_TRUE(env_->DeleteFile(path).ok());
    ASSERT_TRUE(env_->DeleteFile(LossMaskPath(path)).ok());
    ASSERT_EQ((*src)->size(), static_cast<int64_t>(tokens.size()));
    ASSERT_TRUE((*src)->has_mask());
    for (size_t i = 0; i < tokens.size(); ++i) {
      ASSERT_EQ((*src)->token(static_cast<int64_t>(i)), static_cast<int32_t>(tokens[i])) << i;
      ASSERT_EQ((*src)->mask()[i], mask[i]) << i;
    }
    EXPECT_EQ((*src)->max_token(), 65535);
  }
  // A file read as text bytes is widened into memory, not streamed.
  auto text = TokenSource::Open(env_, WriteBytes("t.txt", "hello"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_FALSE((*text)->streamed());
}

TEST_F(TokenSourceTest, Shard32RoundTrip) {
  // Llama 3 ids (vocabulary 128,256) and the largest id an int32 holds.
  const std::vector<uint32_t> tokens = {0, 128255, 65536, 7, 2147483647u, 3};
  const std::string path = WriteShard("l.bin", tokens, kTokenShard32Magic);
  auto bytes = ReadFileToString(env_, path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), 1024u + 4 * 6);
  for (bool via_open : {false, true}) {
    auto src = via_open ? TokenSource::Open(env_, path) : TokenSource::OpenTokenShard(env_, path);
    ASSERT_TRUE(src.ok()) << src.status();
    EXPECT_EQ((*src)->kind(), TokenSourceKind::kTokenShard);
    ASSERT_EQ((*src)->size(), 6);
    for (int i = 0; i < 6; ++i) EXPECT_EQ((*src)->token(i), static_cast<int64_t>(tokens[i])) << i;
    EXPECT_EQ((*src)->max_token(), 2147483647);
    EXPECT_EQ((*src)->vocab_hint(), int64_t{2147483648});
    EXPECT_EQ((*src)->token_bytes(), 4);
    EXPECT_EQ((*src)->storage_bytes(), 24);
    EXPECT_EQ((*src)->tokens32().size(), 6u);
    EXPECT_TRUE((*src)->tokens16().empty());
  }
  // Small ids in the wide form read back as themselves.
  auto small = TokenSource::Open(env_, WriteShard("s.bin", {1, 2, 3}, kTokenShard32Magic));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ((*small)->max_token(), 3);
  EXPECT_EQ((*small)->token(1), 2);
}

TEST_F(TokenSourceTest, Shard32IdAboveInt32MaxNamesFileAndOffset) {
  const std::string path = WriteShard("big.bin", {1, 2, 2147483648u, 4}, kTokenShard32Magic);
  auto src = TokenSource::Open(env_, path);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(
      src.status().message(),
      absl::StrCat("file ", path,
                   ": token id 2147483648 at offset 1032 is above 2147483647 (ids are int32)"));
}

TEST_F(TokenSourceTest, Shard32VersionBelongsToItsMagic) {
  // Each magic has its own version: 7 under the GPT-2 magic and 1 under the Llama 3 one are
  // refused, as llm.c's readers refuse them.
  auto src = TokenSource::Open(env_, WriteShard("a.bin", {1, 2}, kTokenShard32Magic, 1));
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(src.status().message(),
              HasSubstr("version 1 at offset 4, expected 7 for magic 20240801"));
  src = TokenSource::Open(env_, WriteShard("b.bin", {1, 2}, kTokenShardMagic, 7));
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(src.status().message(),
              HasSubstr("version 7 at offset 4, expected 1 for magic 20240520"));
}

TEST_F(TokenSourceTest, Shard32TruncatedOrOversized) {
  // Header says 10 four-byte tokens; 8 are present.
  std::string path =
      WriteShard("t.bin", std::vector<uint32_t>(8, 1), kTokenShard32Magic, std::nullopt, 10);
  auto src = TokenSource::OpenTokenShard(env_, path);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(src.status().message(),
            absl::StrCat("file ", path,
                         ": truncated: 1056 bytes, expected 1064 (1024-byte header + 4 * 10 "
                         "tokens, the count at offset 8)"));

  path = WriteShard("o.bin", std::vector<uint32_t>(12, 1), kTokenShard32Magic, std::nullopt, 10);
  src = TokenSource::OpenTokenShard(env_, path);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(src.status().message(), HasSubstr("trailing bytes: 1072 bytes, expected 1064"));

  // A GPT-2-width body under the Llama 3 header: the size gives it away.
  std::string narrow = accel::testing::TokenShardBytes(std::vector<uint32_t>(10, 1));
  const int32_t wide_magic = kTokenShard32Magic, wide_version = kTokenShard32Version;
  std::memcpy(narrow.data(), &wide_magic, 4);
  std::memcpy(narrow.data() + 4, &wide_version, 4);
  path = WriteBytes("n.bin", narrow);
  src = TokenSource::Open(env_, path);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(src.status().message(), HasSubstr("truncated: 1044 bytes, expected 1064"));
}

TEST_F(TokenSourceTest, BadMagic) {
  const std::string path = WriteShard("m.bin", {1, 2}, /*magic=*/123);
  auto src = TokenSource::OpenTokenShard(env_, path);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(src.status().message(),
            absl::StrCat("file ", path,
                         ": bad magic 123 at offset 0, expected 20240520 or 20240801 "
                         "(llm.c token shard)"));
}

TEST_F(TokenSourceTest, BadVersion) {
  const std::string path = WriteShard("v.bin", {1, 2}, kTokenShardMagic, /*version=*/2);
  auto src = TokenSource::Open(env_, path);  // Open sees the magic, so errors are the shard's
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(src.status().message(), HasSubstr(path));
  EXPECT_THAT(src.status().message(),
              HasSubstr("version 2 at offset 4, expected 1 for magic 20240520"));
}

TEST_F(TokenSourceTest, NonPositiveCount) {
  for (int32_t count : {0, -3}) {
    const std::string path = WriteShard("c.bin", {}, kTokenShardMagic, 1, count);
    auto src = TokenSource::OpenTokenShard(env_, path);
    EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(src.status().message(),
                HasSubstr(absl::StrCat("token count ", count, " at offset 8 must be positive")));
  }
}

TEST_F(TokenSourceTest, TruncatedOrOversizedShard) {
  // Header says 10 tokens; 8 are present.
  std::string path = WriteShard("t.bin", std::vector<uint32_t>(8, 1), kTokenShardMagic, 1, 10);
  auto src = TokenSource::OpenTokenShard(env_, path);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(src.status().message(), HasSubstr(path));
  EXPECT_THAT(src.status().message(), HasSubstr("truncated: 1040 bytes, expected 1044"));

  path = WriteShard("o.bin", std::vector<uint32_t>(12, 1), kTokenShardMagic, 1, 10);
  src = TokenSource::OpenTokenShard(env_, path);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(src.status().message(), HasSubstr("1048 bytes, expected 1044"));

  // Shorter than the header itself.
  path = WriteBytes("h.bin", std::string(100, '\0'));
  src = TokenSource::OpenTokenShard(env_, path);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(src.status().message(), HasSubstr("100 bytes, shorter than the 1024-byte header"));
}

TEST_F(TokenSourceTest, TextBytes) {
  const std::string path = WriteBytes("t.txt", "hi\xff\n");
  for (bool via_open : {false, true}) {
    auto src = via_open ? TokenSource::Open(env_, path) : TokenSource::OpenTextBytes(env_, path);
    ASSERT_TRUE(src.ok()) << src.status();
    EXPECT_EQ((*src)->kind(), TokenSourceKind::kTextBytes);
    ASSERT_EQ((*src)->size(), 4);
    EXPECT_EQ((*src)->token(0), 'h');
    EXPECT_EQ((*src)->token(1), 'i');
    EXPECT_EQ((*src)->token(2), 255);  // bytes are unsigned tokens
    EXPECT_EQ((*src)->token(3), '\n');
    EXPECT_EQ((*src)->max_token(), 255);
    EXPECT_EQ((*src)->vocab_hint(), 256);
    EXPECT_EQ((*src)->token_bytes(), 2);
    EXPECT_EQ((*src)->storage_bytes(), 8);
  }
  // Three bytes cannot hold the shard magic: read as text.
  auto tiny = TokenSource::Open(env_, WriteBytes("tiny", "abc"));
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ((*tiny)->vocab_hint(), 256);
}

TEST_F(TokenSourceTest, EmptyAndMissingFiles) {
  const std::string path = WriteBytes("empty.txt", "");
  auto src = TokenSource::Open(env_, path);
  EXPECT_EQ(src.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(src.status().message(), HasSubstr(path));
  EXPECT_EQ(TokenSource::Open(env_, JoinPath(dir_, "absent")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(TokenSourceKjvTest, BundledCorpusOpensAsText) {
  // Not __FILE__: ccache's CCACHE_BASEDIR makes it relative to the build directory.
  const std::string path = JoinPath(ACCEL_SOURCE_DIR, "data/kjv.txt");
  auto src = TokenSource::Open(Env::Default(), path);
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ((*src)->kind(), TokenSourceKind::kTextBytes);
  EXPECT_EQ((*src)->vocab_hint(), 256);
  auto bytes = ReadFileToString(Env::Default(), path);
  ASSERT_TRUE(bytes.ok());
  ASSERT_EQ((*src)->size(), static_cast<int64_t>(bytes->size()));
  EXPECT_GT((*src)->size(), 1'000'000);  // spans several 1 MB read chunks
  int64_t mismatches = 0;
  for (size_t i = 0; i < bytes->size(); ++i) {
    mismatches += (*src)->token(i) != static_cast<unsigned char>((*bytes)[i]);
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace accel::data

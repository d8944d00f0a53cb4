#include "engine/data/batch_loader.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::data {
namespace {

using ::testing::HasSubstr;

// Token i has value i, so a batch's first input names the position it was read from.
std::shared_ptr<const TokenSource> Iota(int64_t n) {
  std::vector<uint16_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), uint16_t{0});
  return TokenSource::FromTokens(std::move(t), TokenSourceKind::kTokenShard, "iota.bin");
}

BatchLoaderOptions Opts(int64_t B, int64_t T, int rank, int world,
                        std::optional<uint64_t> seed = std::nullopt) {
  return BatchLoaderOptions{B, T, rank, world, seed};
}

std::unique_ptr<BatchLoader> MustCreate(std::shared_ptr<const TokenSource> src,
                                        BatchLoaderOptions o) {
  auto loader = BatchLoader::Create(std::move(src), o);
  EXPECT_TRUE(loader.ok()) << loader.status();
  return loader.ok() ? std::move(*loader) : nullptr;
}

TEST(BatchLoaderTest, RejectsBadOptions) {
  auto src = Iota(100);
  auto code = [&](BatchLoaderOptions o) { return BatchLoader::Create(src, o).status().code(); };
  EXPECT_EQ(code(Opts(0, 4, 0, 1)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Opts(2, 0, 0, 1)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Opts(2, 4, 2, 2)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Opts(2, 4, -1, 2)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Opts(2, 4, 0, 0)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Opts(int64_t{1} << 40, int64_t{1} << 40, 0, 1)),
            absl::StatusCode::kInvalidArgument);
}

TEST(BatchLoaderTest, NeedsOneWindowPerRankPlusOneToken) {
  // B*T*world = 2*3*4 = 24: 25 tokens suffice, 24 do not.
  EXPECT_TRUE(BatchLoader::Create(Iota(25), Opts(2, 3, 3, 4)).ok());
  auto too_few = BatchLoader::Create(Iota(24), Opts(2, 3, 3, 4));
  EXPECT_EQ(too_few.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_few.status().message(), HasSubstr("iota.bin has 24 tokens"));
  EXPECT_THAT(too_few.status().message(), HasSubstr("B*T*world + 1 = 25"));
}

TEST(BatchLoaderTest, SequentialWindowsWrapAround) {
  // B=2, T=3, world=2: windows of 12 tokens; (50 - 1) / 12 = 4 windows per epoch.
  auto loader = MustCreate(Iota(50), Opts(2, 3, 1, 2));
  ASSERT_NE(loader, nullptr);
  EXPECT_EQ(loader->windows_per_epoch(), 4);
  // Rank 1 reads (w*2 + 1) * 6.
  EXPECT_EQ(loader->token_offset(0), 6);
  EXPECT_EQ(loader->token_offset(1), 18);
  EXPECT_EQ(loader->token_offset(3), 42);  // last window: targets end at token 48 < 50
  EXPECT_EQ(loader->token_offset(4), 6);   // wrap: a new epoch
  EXPECT_EQ(loader->epoch(3), 0);
  EXPECT_EQ(loader->epoch(4), 1);
  EXPECT_EQ(loader->epoch(9), 2);

  std::vector<int32_t> in(6), tgt(6);
  loader->Fill(3, in.data(), tgt.data());
  EXPECT_THAT(in, ::testing::ElementsAre(42, 43, 44, 45, 46, 47));
  EXPECT_THAT(tgt, ::testing::ElementsAre(43, 44, 45, 46, 47, 48));  // shifted by one

  auto rank0 = MustCreate(Iota(50), Opts(2, 3, 0, 2));
  EXPECT_EQ(rank0->token_offset(2), 24);
  EXPECT_EQ(rank0->token_offset(6), 24);
}

TEST(BatchLoaderTest, FillsFromThirtyTwoBitTokens) {
  // A Llama 3 source: ids past uint16, up to INT32_MAX, reach the batch unchanged.
  std::vector<uint32_t> t(50);
  for (size_t i = 0; i < t.size(); ++i) t[i] = 128000 + static_cast<uint32_t>(i);
  t[47] = 2147483647u;
  std::shared_ptr<const TokenSource> src =
      TokenSource::FromTokens(std::move(t), TokenSourceKind::kTokenShard, "llama3.bin");
  auto loader = MustCreate(src, Opts(2, 3, 1, 2));
  ASSERT_NE(loader, nullptr);
  std::vector<int32_t> in(6), tgt(6);
  loader->Fill(3, in.data(), tgt.data());
  EXPECT_THAT(in, ::testing::ElementsAre(128042, 128043, 128044, 128045, 128046, 2147483647));
  EXPECT_THAT(tgt, ::testing::ElementsAre(128043, 128044, 128045, 128046, 2147483647, 128048));
}

TEST(BatchLoaderTest, NextAdvancesAndSetPositionResumes) {
  auto loader = MustCreate(Iota(100), Opts(1, 4, 0, 1));  // 24 windows
  std::vector<int32_t> in(4), tgt(4), in2(4), tgt2(4);
  for (int k = 0; k < 30; ++k) {
    ASSERT_EQ(loader->position(), k);
    loader->Next(in.data(), tgt.data());
    loader->Fill(k, in2.data(), tgt2.data());
    EXPECT_EQ(in, in2);
    EXPECT_EQ(tgt, tgt2);
    EXPECT_EQ(in[0], (k % 24) * 4);
  }
  loader->set_position(5);
  loader->Next(in.data(), tgt.data());
  EXPECT_EQ(in[0], 20);
  EXPECT_EQ(loader->position(), 6);
}

// Within each step, the token ranges read by different ranks are disjoint.
void ExpectRanksDisjoint(int64_t size, int64_t B, int64_t T, int world,
                         std::optional<uint64_t> seed) {
  std::vector<std::unique_ptr<BatchLoader>> loaders;
  for (int r = 0; r < world; ++r) {
    loaders.push_back(MustCreate(Iota(size), Opts(B, T, r, world, seed)));
  }
  const int64_t bt = B * T;
  for (int64_t k = 0; k < 3 * loaders[0]->windows_per_epoch(); ++k) {
    std::vector<int64_t> starts;
    for (const auto& l : loaders) starts.push_back(l->token_offset(k));
    std::sort(starts.begin(), starts.end());
    for (int r = 1; r < world; ++r) {
      EXPECT_GE(starts[r] - starts[r - 1], bt) << "step " << k;
    }
    EXPECT_LE(starts.back() + bt, size - 1);  // the last target is in range
  }
}

TEST(BatchLoaderTest, RanksNeverOverlapWithinAStep) {
  ExpectRanksDisjoint(1000, 2, 5, 3, std::nullopt);
  ExpectRanksDisjoint(1000, 2, 5, 3, 1234);
  ExpectRanksDisjoint(777, 3, 7, 4, 9);
}

TEST(BatchLoaderTest, ShuffleIsAPermutationPerEpochAndDeterministic) {
  auto a = MustCreate(Iota(2001), Opts(2, 5, 0, 2, 42));  // 100 windows
  auto b = MustCreate(Iota(2001), Opts(2, 5, 0, 2, 42));
  ASSERT_EQ(a->windows_per_epoch(), 100);
  const int64_t w = a->windows_per_epoch();
  std::vector<std::vector<int64_t>> epochs(3);
  for (int64_t k = 0; k < 3 * w; ++k) {
    EXPECT_EQ(a->window(k), b->window(k));
    epochs[k / w].push_back(a->window(k));
  }
  for (auto& e : epochs) {
    std::vector<int64_t> sorted = e;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(w);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted, all);  // every window exactly once
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  std::vector<int64_t> identity(w);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(epochs[0], identity);

  // Going back to an earlier epoch (a resume) gives the same order again.
  for (int64_t k = 0; k < w; ++k) EXPECT_EQ(a->window(k), epochs[0][k]);

  auto other_seed = MustCreate(Iota(2001), Opts(2, 5, 0, 2, 43));
  std::vector<int64_t> e0;
  for (int64_t k = 0; k < w; ++k) e0.push_back(other_seed->window(k));
  EXPECT_NE(e0, epochs[0]);
  // Seed and epoch are mixed: seed s's second epoch is not seed s+1's first.
  EXPECT_NE(e0, epochs[1]);

  // Shuffled batches still hold consecutive tokens with shifted targets.
  std::vector<int32_t> in(10), tgt(10);
  a->Fill(7, in.data(), tgt.data());
  EXPECT_EQ(in[0], a->token_offset(7));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(in[i], in[0] + i);
    EXPECT_EQ(tgt[i], in[0] + i + 1);
  }
}

TEST(BatchLoaderTest, PermutationIsPinned) {
  // mt19937_64's output is fixed by the standard and UniformBelow is ours, so this order must
  // never change: checkpoints resume by replaying it.
  EXPECT_THAT(EpochPermutation(1, 0, 10), ::testing::ElementsAre(6, 5, 1, 8, 0, 7, 4, 9, 2, 3));
  EXPECT_THAT(EpochPermutation(5, 0, 1), ::testing::ElementsAre(0));
  EXPECT_TRUE(EpochPermutation(5, 0, 0).empty());
}

TEST(BatchLoaderTest, UniformBelowStaysInRange) {
  std::mt19937_64 gen(3);
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 3000; ++i) {
    uint64_t x = UniformBelow(gen, 3);
    ASSERT_LT(x, 3u);
    ++counts[x];
  }
  for (int c : counts) EXPECT_GT(c, 850);  // roughly uniform
  EXPECT_EQ(UniformBelow(gen, 1), 0u);
  const uint64_t big = (uint64_t{1} << 63) + 12345;  // rejection region close to half the range
  for (int i = 0; i < 100; ++i) EXPECT_LT(UniformBelow(gen, big), big);
}

// With a loss mask, a target whose token has mask 0 is -100 (kIgnoreIndex); inputs and the other
// targets are the tokens, at both token widths and on every rank.
TEST(BatchLoaderTest, MaskedTargetsAreIgnoreIndex) {
  for (bool wide : {false, true}) {
    const int64_t n = 41;
    std::vector<uint8_t> mask(n);
    for (int64_t i = 0; i < n; ++i) mask[i] = i % 3 != 0;  // tokens 0, 3, 6, ... masked
    std::unique_ptr<TokenSource> src;
    if (wide) {
      std::vector<uint32_t> t(n);
      std::iota(t.begin(), t.end(), 70000u);
      src = TokenSource::FromTokens(std::move(t), TokenSourceKind::kTokenShard, "w.bin");
    } else {
      std::vector<uint16_t> t(n);
      std::iota(t.begin(), t.end(), uint16_t{0});
      src = TokenSource::FromTokens(std::move(t), TokenSourceKind::kTokenShard, "n.bin");
    }
    ASSERT_TRUE(src->SetLossMask(mask).ok());
    std::shared_ptr<const TokenSource> shared = std::move(src);
    const int32_t base = wide ? 70000 : 0;
    for (int rank : {0, 1}) {
      auto loader = MustCreate(shared, Opts(2, 5, rank, 2));
      for (int64_t k : {0, 1, 2}) {
        std::vector<int32_t> in(10), tg(10);
        loader->Fill(k, in.data(), tg.data());
        const int64_t first = loader->token_offset(k);
        for (int64_t i = 0; i < 10; ++i) {
          EXPECT_EQ(in[i], base + first + i);
          const int64_t t = first + i + 1;
          EXPECT_EQ(tg[i], t % 3 != 0 ? base + t : -100) << "wide=" << wide << " k=" << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace accel::data

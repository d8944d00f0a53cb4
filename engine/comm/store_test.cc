// Behaviour every Store shares, run against InMemoryStore, FileStore and PrefixStore.
#include "engine/comm/store.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "engine/comm/file_store.h"
#include "engine/comm/in_memory_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::comm {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string FreshDir() {
  std::string tmpl = ::testing::TempDir() + "/store_test_XXXXXX";
  char* made = ::mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr);
  return tmpl;
}

struct StoreFactory {
  const char* name;
  // Returns the store to test; `keep` holds whatever it depends on.
  std::function<Store*(std::vector<std::unique_ptr<Store>>& keep)> make;
};

void PrintTo(const StoreFactory& factory, std::ostream* os) { *os << factory.name; }

class StoreTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override { store_ = GetParam().make(keep_); }
  std::vector<std::unique_ptr<Store>> keep_;
  Store* store_ = nullptr;
};

TEST_P(StoreTest, SetThenGetAndOverwrite) {
  ASSERT_TRUE(store_->Set("k", "v1").ok());
  EXPECT_EQ(*store_->Get("k", absl::Seconds(1)), "v1");
  ASSERT_TRUE(store_->Set("k", "second value").ok());
  EXPECT_EQ(*store_->Get("k", absl::Seconds(1)), "second value");
}

TEST_P(StoreTest, ValuesAreBytes) {
  std::string value("a\0b\xff\n", 5);
  std::string big(100000, 'x');
  ASSERT_TRUE(store_->Set("bin", value).ok());
  ASSERT_TRUE(store_->Set("big", big).ok());
  ASSERT_TRUE(store_->Set("empty", "").ok());
  EXPECT_EQ(*store_->Get("bin", absl::Seconds(1)), value);
  EXPECT_EQ(*store_->Get("big", absl::Seconds(1)), big);
  EXPECT_EQ(*store_->Get("empty", absl::Seconds(1)), "");
}

TEST_P(StoreTest, GetWaitsForALaterSet) {
  const absl::Time start = absl::Now();  // before the setter can possibly run
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(80));
    ASSERT_TRUE(store_->Set("late", "here").ok());
  });
  absl::StatusOr<std::string> got = store_->Get("late", absl::Seconds(5));
  setter.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "here");
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(80));
}

TEST_P(StoreTest, GetTimesOutNamingTheKey) {
  absl::Time start = absl::Now();
  absl::StatusOr<std::string> got = store_->Get("never_set", absl::Milliseconds(100));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(got.status().message(), HasSubstr("never_set"));
  absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(95));
  EXPECT_LT(took, absl::Seconds(2));
}

TEST_P(StoreTest, WaitNamesOnlyTheMissingKeys) {
  ASSERT_TRUE(store_->Set("present_key", "1").ok());
  EXPECT_TRUE(store_->Wait({"present_key"}, absl::Milliseconds(10)).ok());
  absl::Status st =
      store_->Wait({"present_key", "missing_one", "missing_two"}, absl::Milliseconds(100));
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(st.message(), HasSubstr("missing_one"));
  EXPECT_THAT(st.message(), HasSubstr("missing_two"));
  EXPECT_THAT(st.message(), Not(HasSubstr("present_key")));
}

TEST_P(StoreTest, WaitReturnsWhenTheLastKeyArrives) {
  std::thread setter([&] {
    ASSERT_TRUE(store_->Set("w1", "a").ok());
    absl::SleepFor(absl::Milliseconds(50));
    ASSERT_TRUE(store_->Set("w2", "b").ok());
  });
  EXPECT_TRUE(store_->Wait({"w1", "w2"}, absl::Seconds(5)).ok());
  setter.join();
}

TEST_P(StoreTest, AddIsAtomicAcrossThreads) {
  constexpr int kThreads = 8;
  constexpr int kAdds = 50;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAdds; ++i) {
        absl::StatusOr<int64_t> v = store_->Add("counter", 1);
        ASSERT_TRUE(v.ok()) << v.status();
        seen[t].push_back(*v);
      }
    });
  }
  for (auto& t : threads) t.join();
  // Every Add returned a distinct value: no two read-modify-writes interleaved.
  std::vector<int64_t> all;
  for (auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kAdds));
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<int64_t>(i + 1));
  EXPECT_EQ(*store_->Get("counter", absl::Seconds(1)), std::to_string(kThreads * kAdds));
}

TEST_P(StoreTest, AddStartsAtZeroTakesNegativesAndRejectsNonCounters) {
  EXPECT_EQ(*store_->Add("c", 5), 5);
  EXPECT_EQ(*store_->Add("c", -7), -2);
  EXPECT_EQ(*store_->Get("c", absl::Seconds(1)), "-2");
  ASSERT_TRUE(store_->Set("text", "hello").ok());
  absl::StatusOr<int64_t> bad = store_->Add("text", 1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("text"));
}

// A probe of issue 16: KvAdd overflowed a signed 64-bit counter (undefined behaviour).
TEST_P(StoreTest, AddThatLeavesTheCounterRangeIsRefusedAndKeepsTheValue) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(*store_->Add("big", max), max);
  absl::StatusOr<int64_t> over = store_->Add("big", 1);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(over.status().message(), HasSubstr("big"));
  EXPECT_EQ(*store_->Get("big", absl::Seconds(1)), std::to_string(max));
  EXPECT_EQ(*store_->Add("big", -1), max - 1);
}

INSTANTIATE_TEST_SUITE_P(
    AllStores, StoreTest,
    ::testing::Values(StoreFactory{"InMemory",
                                   [](std::vector<std::unique_ptr<Store>>& keep) {
                                     keep.push_back(std::make_unique<InMemoryStore>());
                                     return keep.back().get();
                                   }},
                      StoreFactory{"File",
                                   [](std::vector<std::unique_ptr<Store>>& keep) -> Store* {
                                     auto store = FileStore::Open(FreshDir());
                                     EXPECT_TRUE(store.ok()) << store.status();
                                     keep.push_back(*std::move(store));
                                     return keep.back().get();
                                   }},
                      StoreFactory{"Prefix",
                                   [](std::vector<std::unique_ptr<Store>>& keep) {
                                     keep.push_back(std::make_unique<InMemoryStore>());
                                     keep.push_back(PrefixStore("job7", keep.back().get()));
                                     return keep.back().get();
                                   }}),
    [](const ::testing::TestParamInfo<StoreFactory>& info) { return info.param.name; });

TEST(PrefixStoreTest, KeysLandUnderThePrefixAndGroupsDoNotCollide) {
  InMemoryStore base;
  std::unique_ptr<Store> a = PrefixStore("a", &base);
  std::unique_ptr<Store> ab = PrefixStore("ab", &base);
  ASSERT_TRUE(a->Set("bc", "from a").ok());
  ASSERT_TRUE(ab->Set("c", "from ab").ok());
  EXPECT_EQ(*base.Get("a/bc", absl::Seconds(1)), "from a");
  EXPECT_EQ(*base.Get("ab/c", absl::Seconds(1)), "from ab");
  EXPECT_EQ(*a->Get("bc", absl::Seconds(1)), "from a");
  EXPECT_EQ(ab->Get("bc", absl::Milliseconds(20)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(*a->Add("n", 2), 2);
  EXPECT_EQ(*base.Get("a/n", absl::Seconds(1)), "2");
  // Nesting composes.
  std::unique_ptr<Store> nested = PrefixStore("inner", a.get());
  ASSERT_TRUE(nested->Set("k", "v").ok());
  EXPECT_EQ(*base.Get("a/inner/k", absl::Seconds(1)), "v");
}

}  // namespace
}  // namespace accel::comm

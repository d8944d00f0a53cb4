// The ledger as typed MemoryEvent fields (what the worker sends), and records stored before
// issue 29 with the ledger as a JSON string (ledger_json): both give the same figures.
#include "rpc/memory_stats.h"
#include "rpc/memory_stats_test_util.h"

#include <google/protobuf/util/json_util.h>

#include <map>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace accel::rpc {
namespace {

namespace v1 = accel::v1;
using ::testing::HasSubstr;

// pool -> category -> counts, by the ledger's names ("total" included): the shape the old JSON
// readers built, so typed and JSON records compare figure by figure.
using Figures = std::map<std::string, std::map<std::string, std::pair<int64_t, int64_t>>>;

Figures FiguresOf(const v1::MemoryEvent& m) {
  Figures out;
  for (const auto& [pool, categories] : MemoryFigures(m)) {
    for (const auto& [category, counts] : categories) {
      out[pool][category] = {counts.current, counts.peak};
    }
  }
  return out;
}

// What the readers before issue 29 made of a ledger's JSON (server/http/job_telemetry.cc's
// ParseLedgerJson, kept here as the reference the typed fields are held to).
Figures FiguresOfOldJson(const std::string& json) {
  Figures out;
  const nlohmann::json j = nlohmann::json::parse(json);
  for (const auto& [pool, categories] : j.items()) {
    const std::optional<MemoryPool> known = LedgerPoolKey(pool);
    auto& by_category = out[known ? std::string(MemoryPoolName(*known)) : pool];
    for (const auto& [category, counts] : categories.items()) {
      by_category[category] = {counts.value("current", int64_t{0}), counts.value("peak", int64_t{0})};
    }
  }
  return out;
}

void ChargeSome(MemoryLedger& ledger) {
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kParams, 5 << 20);
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kActivations, 3 << 20);
  ledger.Release(MemoryPool::kDevice, MemoryCategory::kActivations, 3 << 20);
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kGrads, 1 << 20);
  ledger.Charge(MemoryPool::kHost, MemoryCategory::kOptimizerState, 7 << 10);
  ledger.Charge(MemoryPool::kHost, MemoryCategory::kOther, 100);
  ledger.Release(MemoryPool::kHost, MemoryCategory::kOther, 40);
  ledger.Charge(MemoryPool::kNvme, MemoryCategory::kOptimizerState, int64_t{9} << 30);
  ledger.Charge(MemoryPool::kDevice, MemoryCategory::kCommunication, 64);
}

TEST(MemoryStatsTest, TheTypedEventHasEveryFigureTheLedgerJsonHad) {
  MemoryLedger ledger;
  ChargeSome(ledger);
  v1::MemoryEvent m;
  LedgerToProto(ledger, &m);
  ASSERT_EQ(m.pools_size(), kNumMemoryPools);
  EXPECT_EQ(m.pools(0).pool(), v1::MEMORY_POOL_COMPUTE);
  EXPECT_EQ(m.pools(0).categories_size(), kNumMemoryCategories);  // zeros included
  // Pool by pool, category by category and the totals: the same numbers as ToJson wrote.
  const Figures typed = FiguresOf(m);
  EXPECT_EQ(typed, FiguresOfOldJson(ledger.ToJson()));
  EXPECT_EQ(typed.at("compute").at("activations"), std::make_pair(int64_t{0}, int64_t{3} << 20));
  EXPECT_EQ(typed.at("compute").at("total").second, int64_t{8} << 20);  // the peak of the sum
  EXPECT_EQ(typed.at("nvme").at("optimizer_state").first, int64_t{9} << 30);
  EXPECT_EQ(m.device_peak(), ledger.PoolTotal(MemoryPool::kDevice).peak);
  EXPECT_EQ(m.host_current(), (7 << 10) + 60);
  const auto peaks = PoolTotalPeaks(m);
  EXPECT_EQ(peaks[static_cast<int>(MemoryPool::kNvme)], int64_t{9} << 30);
}

TEST(MemoryStatsTest, AStoredRecordWithLedgerJsonReadsAsTheTypedOne) {
  MemoryLedger ledger;
  ChargeSome(ledger);
  v1::MemoryEvent typed;
  LedgerToProto(ledger, &typed);
  // A body as acceld stored it before issue 29 (proto JSON, int64 as strings).
  v1::MemoryEvent fields;
  fields.set_device_current(1);
  fields.set_step(4);
  const std::string stored = testing::StoredBeforeIssue29(fields, ledger.ToJson());
  EXPECT_THAT(stored, HasSubstr(R"("ledger_json":"{\"compute\":)"));
  v1::MemoryEvent old;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;  // as server/services/convert.cc reads stored bodies
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(stored, &old, opts).ok());
  EXPECT_EQ(old.pools_size(), 0) << "the reserved field is not read by the proto itself";
  ASSERT_TRUE(MemoryPoolsFromStoredJson(stored, &old).ok());
  EXPECT_EQ(FiguresOf(old), FiguresOf(typed));
  EXPECT_EQ(old.step(), 4);
  EXPECT_EQ(old.device_current(), 1) << "the record's other fields are its own";
}

TEST(MemoryStatsTest, TheOldDevicePoolNameReadsAsComputeAndOnlyItsKeysAreAdded) {
  v1::MemoryEvent m;
  ASSERT_TRUE(MemoryPoolsFromLedgerJson(
                  R"({"device":{"params":{"current":1,"peak":1},"total":{"current":10,"peak":40}},)"
                  R"("host":{"total":{"current":0,"peak":8}},"nvme":{"total":{"current":0,"peak":0}},)"
                  R"("gpu9":{"params":{"current":5,"peak":5}}})",
                  &m)
                  .ok());
  ASSERT_EQ(m.pools_size(), 3);  // "gpu9" is no pool of the ledger
  EXPECT_EQ(m.pools(0).pool(), v1::MEMORY_POOL_COMPUTE);
  ASSERT_EQ(m.pools(0).categories_size(), 1);
  EXPECT_EQ(m.pools(0).categories(0).category(), v1::MEMORY_CATEGORY_PARAMS);
  const auto peaks = PoolTotalPeaks(m);
  EXPECT_EQ(peaks[static_cast<int>(MemoryPool::kDevice)], 40);
  EXPECT_EQ(peaks[static_cast<int>(MemoryPool::kHost)], 8);
  EXPECT_EQ(FiguresOf(m).at("compute"),
            (FiguresOfOldJson(R"({"device":{"params":{"current":1,"peak":1},)"
                              R"("total":{"current":10,"peak":40}}})")
                 .at("compute")));
}

TEST(MemoryStatsTest, ADamagedLedgerIsRefusedWithItsOffsetAndLeavesTheRecordAlone) {
  v1::MemoryEvent m;
  m.set_device_peak(100);
  const absl::Status s =
      MemoryPoolsFromStoredJson(R"({"ledger_json":"{not json","device_peak":"100"})", &m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("ledger_json: not JSON at byte 3 of 9"));
  EXPECT_EQ(m.pools_size(), 0);
  EXPECT_EQ(PoolTotalPeaks(m)[static_cast<int>(MemoryPool::kDevice)], 100);
  EXPECT_EQ(MemoryPoolsFromLedgerJson("[1]", &m).message(),
            "ledger_json: expected an object of pools, got array");
  // A body without the old field is a new record: nothing to do.
  EXPECT_TRUE(MemoryPoolsFromStoredJson(R"({"device_peak":"100"})", &m).ok());
  EXPECT_EQ(m.pools_size(), 0);
}

TEST(MemoryStatsTest, EnumsAndLedgerNamesMapBothWays) {
  for (int p = 0; p < kNumMemoryPools; ++p) {
    EXPECT_EQ(PoolOf(PoolKind(static_cast<MemoryPool>(p))), static_cast<MemoryPool>(p));
  }
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    EXPECT_EQ(CategoryOf(CategoryKind(static_cast<MemoryCategory>(c))),
              static_cast<MemoryCategory>(c));
  }
  EXPECT_EQ(PoolOf(v1::MEMORY_POOL_UNSPECIFIED), std::nullopt);
  EXPECT_EQ(CategoryOf(static_cast<v1::MemoryCategoryKind>(99)), std::nullopt);
  EXPECT_EQ(PoolKind(MemoryPool::kNvme), v1::MEMORY_POOL_NVME);
  EXPECT_EQ(CategoryKind(MemoryCategory::kOther), v1::MEMORY_CATEGORY_OTHER);
}

}  // namespace
}  // namespace accel::rpc

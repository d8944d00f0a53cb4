#include "rpc/memory_stats.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace accel::rpc {

namespace v1 = accel::v1;

// The proto enums number the ledger's pools and categories from 1 (0 is UNSPECIFIED).
v1::MemoryPoolKind PoolKind(MemoryPool pool) {
  return static_cast<v1::MemoryPoolKind>(static_cast<int>(pool) + 1);
}

v1::MemoryCategoryKind CategoryKind(MemoryCategory category) {
  return static_cast<v1::MemoryCategoryKind>(static_cast<int>(category) + 1);
}

std::optional<MemoryPool> PoolOf(v1::MemoryPoolKind kind) {
  const int p = static_cast<int>(kind) - 1;
  if (p < 0 || p >= kNumMemoryPools) return std::nullopt;
  return static_cast<MemoryPool>(p);
}

std::optional<MemoryCategory> CategoryOf(v1::MemoryCategoryKind kind) {
  const int c = static_cast<int>(kind) - 1;
  if (c < 0 || c >= kNumMemoryCategories) return std::nullopt;
  return static_cast<MemoryCategory>(c);
}

void LedgerToProto(const MemoryLedger& ledger, v1::MemoryEvent* m) {
  m->clear_pools();
  for (int p = 0; p < kNumMemoryPools; ++p) {
    const auto pool = static_cast<MemoryPool>(p);
    v1::MemoryPoolStats* out = m->add_pools();
    out->set_pool(PoolKind(pool));
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      const auto category = static_cast<MemoryCategory>(c);
      const MemoryCounts counts = ledger.Get(pool, category);
      v1::MemoryCategoryStats* cat = out->add_categories();
      cat->set_category(CategoryKind(category));
      cat->set_current(counts.current);
      cat->set_peak(counts.peak);
    }
    const MemoryCounts total = ledger.PoolTotal(pool);
    out->set_total_current(total.current);
    out->set_total_peak(total.peak);
  }
  const MemoryCounts compute = ledger.PoolTotal(MemoryPool::kDevice);
  const MemoryCounts host = ledger.PoolTotal(MemoryPool::kHost);
  m->set_device_current(compute.current);
  m->set_device_peak(compute.peak);
  m->set_host_current(host.current);
  m->set_host_peak(host.peak);
}

std::map<std::string, std::map<std::string, MemoryCounts>> MemoryFigures(
    const v1::MemoryEvent& m) {
  std::map<std::string, std::map<std::string, MemoryCounts>> out;
  for (const v1::MemoryPoolStats& pool : m.pools()) {
    const std::optional<MemoryPool> which = PoolOf(pool.pool());
    if (!which) continue;  // a pool of a newer worker
    auto& by_category = out[std::string(MemoryPoolName(*which))];
    for (const v1::MemoryCategoryStats& c : pool.categories()) {
      if (const std::optional<MemoryCategory> category = CategoryOf(c.category())) {
        by_category[std::string(MemoryCategoryName(*category))] = {c.current(), c.peak()};
      }
    }
    by_category["total"] = {pool.total_current(), pool.total_peak()};
  }
  return out;
}

std::array<int64_t, kNumMemoryPools> PoolTotalPeaks(const v1::MemoryEvent& m) {
  std::array<int64_t, kNumMemoryPools> peaks{};
  if (m.pools_size() == 0) {
    peaks[static_cast<int>(MemoryPool::kDevice)] = m.device_peak();
    peaks[static_cast<int>(MemoryPool::kHost)] = m.host_peak();
    return peaks;
  }
  for (const v1::MemoryPoolStats& pool : m.pools()) {
    if (const std::optional<MemoryPool> which = PoolOf(pool.pool())) {
      peaks[static_cast<int>(*which)] = pool.total_peak();
    }
  }
  return peaks;
}

namespace {

// Parses `text` as JSON; InvalidArgument naming `what` and the byte offset when it does not.
absl::Status ParseJson(std::string_view text, std::string_view what, nlohmann::json* out) {
  try {
    *out = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": not JSON at byte ", e.byte, " of ", text.size()));
  }
  return absl::OkStatus();
}

MemoryCounts CountsOf(const nlohmann::json& counts) {
  auto field = [&](const char* key) {
    const auto it = counts.find(key);
    return it != counts.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
  };
  return {field("current"), field("peak")};
}

}  // namespace

absl::Status MemoryPoolsFromLedgerJson(std::string_view ledger_json, v1::MemoryEvent* m) {
  nlohmann::json ledger;
  if (absl::Status s = ParseJson(ledger_json, "ledger_json", &ledger); !s.ok()) return s;
  if (!ledger.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ledger_json: expected an object of pools, got ", ledger.type_name()));
  }
  // Gathered by the ledger's own order first: the JSON's key order is not the ledger's.
  struct Pool {
    bool seen = false;
    std::array<std::optional<MemoryCounts>, kNumMemoryCategories> categories;
    MemoryCounts total;
  };
  std::array<Pool, kNumMemoryPools> pools;
  for (const auto& [key, categories] : ledger.items()) {
    const std::optional<MemoryPool> pool = LedgerPoolKey(key);  // "device" is compute
    if (!pool || !categories.is_object()) continue;
    Pool& into = pools[static_cast<int>(*pool)];
    into.seen = true;
    for (const auto& [name, counts] : categories.items()) {
      if (!counts.is_object()) continue;
      if (name == "total") {
        into.total = CountsOf(counts);
        continue;
      }
      for (int c = 0; c < kNumMemoryCategories; ++c) {
        if (name == MemoryCategoryName(static_cast<MemoryCategory>(c))) {
          into.categories[c] = CountsOf(counts);
        }
      }
    }
  }
  m->clear_pools();
  for (int p = 0; p < kNumMemoryPools; ++p) {
    if (!pools[p].seen) continue;
    v1::MemoryPoolStats* out = m->add_pools();
    out->set_pool(PoolKind(static_cast<MemoryPool>(p)));
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      if (!pools[p].categories[c]) continue;
      v1::MemoryCategoryStats* cat = out->add_categories();
      cat->set_category(CategoryKind(static_cast<MemoryCategory>(c)));
      cat->set_current(pools[p].categories[c]->current);
      cat->set_peak(pools[p].categories[c]->peak);
    }
    out->set_total_current(pools[p].total.current);
    out->set_total_peak(pools[p].total.peak);
  }
  return absl::OkStatus();
}

absl::Status MemoryPoolsFromStoredJson(std::string_view body_json, v1::MemoryEvent* m) {
  // Most bodies are new ones: only a body that names the old field is parsed a second time.
  if (body_json.find("\"ledger_json\"") == std::string_view::npos) return absl::OkStatus();
  nlohmann::json body;
  if (absl::Status s = ParseJson(body_json, "memory event", &body); !s.ok()) return s;
  const auto it = body.find("ledger_json");
  if (!body.is_object() || it == body.end() || !it->is_string()) return absl::OkStatus();
  return MemoryPoolsFromLedgerJson(it->get<std::string>(), m);
}

}  // namespace accel::rpc

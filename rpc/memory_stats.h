// A rank's memory ledger (engine/base/memory_ledger.h) as typed proto fields
// (accel.v1.MemoryEvent.pools: pools x categories, current and peak bytes), and back to the
// ledger's names for the readers: acceld's /metrics and dashboard, accelctl watch.
//
// The worker writes every pool with every category (zeros included) and each pool's total, so
// a reader shows the same figures the ledger holds. Records stored before issue 29 carried the
// ledger as a JSON string (MemoryEvent field 1, `ledger_json`, now reserved);
// MemoryPoolsFromStoredJson reads such a stored body into the same typed fields, so old events
// display as they did. It is the only reader of that JSON left.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "accel/v1/job.pb.h"
#include "engine/base/memory_ledger.h"

namespace accel::rpc {

// The proto's name of a ledger pool / category, and back (nullopt for UNSPECIFIED or a value
// this build does not know).
accel::v1::MemoryPoolKind PoolKind(MemoryPool pool);
accel::v1::MemoryCategoryKind CategoryKind(MemoryCategory category);
std::optional<MemoryPool> PoolOf(accel::v1::MemoryPoolKind kind);
std::optional<MemoryCategory> CategoryOf(accel::v1::MemoryCategoryKind kind);

// Sets m's pools (every pool, every category, totals) and the compute / host totals
// (device_current / device_peak, host_current / host_peak) from `ledger`.
void LedgerToProto(const MemoryLedger& ledger, accel::v1::MemoryEvent* m);

// pool -> category (and "total") -> bytes, by the ledger's names (MemoryPoolName,
// MemoryCategoryName): m's pools as /metrics labels them. Pools or categories this build does
// not know are left out.
std::map<std::string, std::map<std::string, MemoryCounts>> MemoryFigures(
    const accel::v1::MemoryEvent& m);

// Each pool's total peak in `m`, indexed by MemoryPool; pools the record does not carry are 0.
// A record without pools (an acceld from before issue 29) gives its device_peak / host_peak.
std::array<int64_t, kNumMemoryPools> PoolTotalPeaks(const accel::v1::MemoryEvent& m);

// A MemoryEvent body as stored in acceld's event log (proto JSON, server/services/convert.h): when it
// still carries the old `ledger_json` string, that ledger's pools are added to m->pools (the
// compute pool's old name "device" reads as compute; unknown pool or category keys are
// skipped; a pool without "total" keeps total 0). A body without it is left alone and OK. A
// ledger string that does not parse is InvalidArgument naming the offset, and m is unchanged.
absl::Status MemoryPoolsFromStoredJson(std::string_view body_json, accel::v1::MemoryEvent* m);

// The same for the ledger JSON itself (MemoryLedger::ToJson's object).
absl::Status MemoryPoolsFromLedgerJson(std::string_view ledger_json, accel::v1::MemoryEvent* m);

}  // namespace accel::rpc

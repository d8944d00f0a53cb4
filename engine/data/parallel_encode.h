// Encodes the records of many files on a few threads (prepare.h). Work is cut into chunks of
// consecutive records; each result lands at its record's index, so the output does not depend
// on the thread count or the order chunks finish in.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/data/prepare.h"
#include "engine/data/record_encoder.h"
#include "engine/data/records.h"

namespace accel::data {

struct SourceFile {
  std::string path;
  // On the heap, so the views of `records` stay valid when a SourceFile moves (a short string
  // would move its bytes with it).
  std::unique_ptr<const std::string> contents;
  std::vector<Record> records;  // views into *contents
};

// results[f][r] is the encoding of files[f].records[r] (or its error, without a location).
// `progress` runs on the calling thread about every 100 ms and once at the end.
std::vector<std::vector<absl::StatusOr<EncodedDocument>>> EncodeRecords(
    const RecordEncoder& encoder, const std::vector<SourceFile>& files, int threads,
    const ProgressFn& progress);

}  // namespace accel::data

// What submit can know about a dataset without preparing it (issue 30 item 8): each source
// names files, the tokenizer loads and its vocabulary fits the model's, and the first records of
// each file encode. Cheap: it reads the files but encodes only `records_per_file` records each.
// Meant for acceld's and accelctl's submit checks once the data keys reach the job file (the
// job/ settings rows); PrepareDataset checks every record again.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "engine/base/env.h"
#include "engine/data/prepare.h"

namespace accel::data {

// InvalidArgument, one line: "data.tokenizer: its vocabulary (V ids, PATH) does not fit the
// model's vocab_size (M)"; a bad record as "FILE:LINE: reason" (the first one, even with
// skip_invalid when every checked record of a file is bad); NotFound for missing files.
// model_vocab_size <= 0 skips the vocabulary check.
[[nodiscard]] absl::Status CheckDataset(Env* env, const PrepareOptions& options,
                                        int64_t model_vocab_size, int records_per_file = 8);

}  // namespace accel::data

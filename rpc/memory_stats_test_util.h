// Test support: a MemoryEvent body as acceld stored it before issue 29, with the ledger as the
// JSON string `ledger_json` (field 1, now reserved), for the tests that show such stored
// records still read and display as before. Header-only.
#pragma once

#include <google/protobuf/util/json_util.h>

#include <string>
#include <string_view>

#include "accel/v1/job.pb.h"
#include "nlohmann/json.hpp"

namespace accel::rpc::testing {

// m's fields as proto JSON (field names as stored) with `ledger_json` added; m's pools, if
// any, are left out, as an old writer had none.
inline std::string StoredBeforeIssue29(accel::v1::MemoryEvent m, std::string_view ledger_json) {
  m.clear_pools();
  std::string body;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &body, opts);
  nlohmann::json j = nlohmann::json::parse(body);
  j["ledger_json"] = std::string(ledger_json);
  return j.dump();
}

}  // namespace accel::rpc::testing

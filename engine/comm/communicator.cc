#include "engine/comm/communicator.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace accel::comm {

std::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kAllGather:
      return "all_gather";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kAllReduce:
      return "all_reduce";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kBarrier:
      return "barrier";
  }
  return "unknown";
}

int64_t CommStats::total_sent() const {
  int64_t total = 0;
  for (const PerOp& op : ops) total += op.bytes_sent;
  return total;
}

int64_t CommStats::total_received() const {
  int64_t total = 0;
  for (const PerOp& op : ops) total += op.bytes_received;
  return total;
}

int64_t CommStats::total_sent_cross_node() const {
  int64_t total = 0;
  for (const PerOp& op : ops) total += op.bytes_sent_cross_node;
  return total;
}

// Hand-written so accel_comm needs no JSON library; keys are fixed identifiers, nothing to escape.
std::string CommStats::ToJson() const {
  std::string out = "{";
  for (int k = 0; k < kNumOpKinds; ++k) {
    const PerOp& op = ops[k];
    absl::StrAppend(&out, "\"", std::string(OpKindName(static_cast<OpKind>(k))),
                    "\":{\"calls\":", op.calls, ",\"bytes_sent\":", op.bytes_sent,
                    ",\"bytes_received\":", op.bytes_received,
                    ",\"bytes_sent_cross_node\":", op.bytes_sent_cross_node, "},");
  }
  absl::StrAppend(&out, "\"total_sent\":", total_sent(), ",\"total_received\":", total_received(),
                  ",\"total_sent_cross_node\":", total_sent_cross_node(), "}");
  return out;
}

}  // namespace accel::comm

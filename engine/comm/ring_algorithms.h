// The collective algorithms, written against one point-to-point primitive (Exchanger) so they
// are independent of the transport. See docs/comm.md for the algorithms and their traffic.
//
// A buffer of `count` elements is cut into `size` chunks of `chunk` elements each (the last
// chunks may be short or empty when count is not a multiple of size; they behave as if padded).
// Chunk c's elements are summed in the fixed order x[c+1], x[c+2], ..., x[c] (ranks mod size),
// one rounding per hop, so results depend only on (size, count, index) and every rank
// receives bit-identical values.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "engine/tensor/dtype.h"

namespace accel::comm {

class Exchanger {
 public:
  virtual ~Exchanger() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Concurrently sends send_bytes from `send` to rank `to` and receives recv_bytes into `recv`
  // from rank `from`; returns when both are complete. A side with 0 bytes is skipped (the peer
  // skips it too, since both derive the sizes from the same arguments). `step` tells the
  // messages of one operation apart; the two ends of a message pass the same step.
  [[nodiscard]] virtual absl::Status Exchange(int step, const void* send, size_t send_bytes, int to,
                                              void* recv, size_t recv_bytes, int from) = 0;
};

struct ChunkLayout {
  size_t count = 0;  // elements in the whole buffer
  size_t chunk = 0;  // elements per chunk
  size_t Offset(int c) const { return std::min(count, static_cast<size_t>(c) * chunk); }
  size_t Length(int c) const {
    return std::min(count, static_cast<size_t>(c + 1) * chunk) - Offset(c);
  }
};

// chunk = ceil(count / size): AllReduce's padding.
ChunkLayout PaddedLayout(size_t count, int size);

// out (layout.Length(rank)) = sum over ranks of chunk `rank` of `in` (layout.count). out may be
// in + Offset(rank) elements. Uses messages first_step .. first_step + size - 2 and scratch
// (grown to 2 chunks). Traffic: sends every chunk but `rank`, receives every chunk but
// `rank - 1`: (N-1)/N of the buffer each way when the chunks are equal.
[[nodiscard]] absl::Status RingReduceScatter(Exchanger& ex, const void* in, void* out,
                                             const ChunkLayout& layout, DType dtype,
                                             std::vector<char>* scratch, int first_step = 0);

// On entry chunk `rank` of buf holds this rank's part; on return every chunk holds every
// rank's. Uses messages first_step .. first_step + size - 2. Traffic: sends every chunk but
// `rank + 1`, receives every chunk but `rank`.
[[nodiscard]] absl::Status RingAllGather(Exchanger& ex, void* buf, const ChunkLayout& layout,
                                         DType dtype, int first_step = 0);

// Binomial tree rooted at `root`: ceil(log2 size) rounds; each non-root receives `bytes` once.
[[nodiscard]] absl::Status TreeBroadcast(Exchanger& ex, void* buf, size_t bytes, int root);

// Dissemination barrier: ceil(log2 size) rounds of one-byte messages to rank + 2^k.
[[nodiscard]] absl::Status DisseminationBarrier(Exchanger& ex);

}  // namespace accel::comm

#include "engine/comm/ring_algorithms.h"

#include <cstring>

#include "engine/comm/reduce.h"

namespace accel::comm {
namespace {

int Mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

ChunkLayout PaddedLayout(size_t count, int size) {
  ChunkLayout layout;
  layout.count = count;
  layout.chunk = (count + static_cast<size_t>(size) - 1) / static_cast<size_t>(size);
  return layout;
}

// At step s rank r passes its running sum of chunk r-s-1 to r+1 and takes chunk r-s-2 from r-1,
// adding its own contribution. Chunk c therefore starts at rank c+1 and ends, complete, at
// rank c after size-1 steps.
absl::Status RingReduceScatter(Exchanger& ex, const void* in, void* out, const ChunkLayout& layout,
                               DType dtype, std::vector<char>* scratch, int first_step) {
  const int n = ex.size();
  const int r = ex.rank();
  const size_t esize = DTypeSize(dtype);
  const char* src = static_cast<const char*>(in);
  if (n == 1) {
    if (out != in && layout.count > 0) std::memmove(out, in, layout.count * esize);
    return absl::OkStatus();
  }
  const size_t chunk_bytes = layout.chunk * esize;
  if (scratch->size() < 2 * chunk_bytes) scratch->resize(2 * chunk_bytes);
  char* incoming = scratch->data();
  char* outgoing = scratch->data() + chunk_bytes;
  for (int s = 0; s < n - 1; ++s) {
    const int send_c = Mod(r - s - 1, n);
    const int recv_c = Mod(r - s - 2, n);
    // Step 0 sends this rank's own data straight from `in`; later steps the running sum.
    const char* send_ptr = s == 0 ? src + layout.Offset(send_c) * esize : outgoing;
    const size_t recv_len = layout.Length(recv_c);
    absl::Status st = ex.Exchange(first_step + s, send_ptr, layout.Length(send_c) * esize,
                                  Mod(r + 1, n), incoming, recv_len * esize, Mod(r - 1, n));
    if (!st.ok()) return st;
    const char* own = src + layout.Offset(recv_c) * esize;
    // The last step's chunk is recv_c == r: the finished sum goes to `out` (which may be `own`).
    void* dst = s == n - 2 ? out : outgoing;
    SumInto(dtype, incoming, own, dst, recv_len);
  }
  return absl::OkStatus();
}

// At step s rank r forwards chunk r-s (its own at s = 0, then the one it just received) to r+1
// and receives chunk r-s-1 from r-1 directly into place.
absl::Status RingAllGather(Exchanger& ex, void* buf, const ChunkLayout& layout, DType dtype,
                           int first_step) {
  const int n = ex.size();
  const int r = ex.rank();
  const size_t esize = DTypeSize(dtype);
  char* base = static_cast<char*>(buf);
  for (int s = 0; s < n - 1; ++s) {
    const int send_c = Mod(r - s, n);
    const int recv_c = Mod(r - s - 1, n);
    absl::Status st = ex.Exchange(first_step + s, base + layout.Offset(send_c) * esize,
                                  layout.Length(send_c) * esize, Mod(r + 1, n),
                                  base + layout.Offset(recv_c) * esize,
                                  layout.Length(recv_c) * esize, Mod(r - 1, n));
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

// Ranks are renumbered v = r - root. Rank v receives from v - 2^k, where 2^k is v's lowest set
// bit, then sends to v + 2^j for every j < k (largest subtree first).
absl::Status TreeBroadcast(Exchanger& ex, void* buf, size_t bytes, int root) {
  const int n = ex.size();
  const int v = Mod(ex.rank() - root, n);
  if (n == 1 || bytes == 0) return absl::OkStatus();
  int mask = 1;
  while (mask < n) {
    if (v & mask) {
      absl::Status st = ex.Exchange(0, nullptr, 0, -1, buf, bytes, Mod(v - mask + root, n));
      if (!st.ok()) return st;
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (v + mask < n) {
      absl::Status st = ex.Exchange(0, buf, bytes, Mod(v + mask + root, n), nullptr, 0, -1);
      if (!st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

// After round k every rank has heard, directly or through others, from the 2^(k+1) ranks before
// it; once 2^(k+1) >= size, from all of them.
absl::Status DisseminationBarrier(Exchanger& ex) {
  const int n = ex.size();
  const int r = ex.rank();
  char token = 1;
  char incoming = 0;
  int step = 0;
  for (int dist = 1; dist < n; dist <<= 1, ++step) {
    absl::Status st =
        ex.Exchange(step, &token, 1, Mod(r + dist, n), &incoming, 1, Mod(r - dist, n));
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace accel::comm

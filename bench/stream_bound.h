// Measured memory-bandwidth bound of this machine, the yardstick of the memory-bound kernels in
// accel_bench_kernels: the better of a STREAM-style triad a[i] = b[i] + s * c[i] (two streams
// read, one written, as most elementwise kernels are) and its in-place form a[i] += s * b[i]
// (which, like the kernels that update in place, pays no write-allocate read), over
// `footprint_bytes` of arrays together, on `threads` OpenMP threads (the pool the kernels run on).
// Both count 12 bytes an element. A footprint that fits the last-level
// cache measures that cache, a larger one DRAM, so a kernel is compared with a triad over the same
// number of distinct bytes it touches. The best of several passes is returned, as STREAM does:
// the bound is what the memory system can do, not a typical run.
#pragma once

#include <cstdint>

namespace accel::bench {

// GB/s (1e9 bytes, reads + writes, no write-allocate traffic counted) of the better form,
// measured for about `seconds` each.
double MeasureTriadGBps(int64_t footprint_bytes, int threads, double seconds);

// MeasureTriadGBps(footprint_bytes, threads, 0.2), measured once per (footprint, threads) in a
// process and cached.
double TriadBoundGBps(int64_t footprint_bytes, int threads);

}  // namespace accel::bench

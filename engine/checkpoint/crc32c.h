// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum of iSCSI,
// ext4, LevelDB and our checkpoint files. Portable slicing-by-8 (about 1-2 GB/s per core), no
// SSE4.2 intrinsics, so files checksummed on one machine verify on any other.
//
// Values are the standard CRC-32C: Value("123456789") == 0xE3069283. Extend() continues a
// running checksum, so Extend(Value(a), b) == Value(a + b). Thread-safe (the tables are const).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace accel::checkpoint::crc32c {

// The CRC-32C of `init_crc`'s data followed by data[0, n).
uint32_t Extend(uint32_t init_crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

}  // namespace accel::checkpoint::crc32c

#include "engine/checkpoint/crc32c.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace accel::checkpoint::crc32c {
namespace {

// The plain bit-at-a-time definition, to check the sliced tables against.
uint32_t Reference(const std::string& s) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : s) {
    crc ^= c;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82F63B78u : 0u);
  }
  return ~crc;
}

TEST(Crc32cTest, StandardVectors) {
  // The check value of the CRC catalogue and RFC 3720's iSCSI vectors.
  EXPECT_EQ(Value("123456789"), 0xE3069283u);
  EXPECT_EQ(Value(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Value(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(Value(ascending), 0x46DD794Eu);
  EXPECT_EQ(Value(""), 0u);
}

TEST(Crc32cTest, MatchesBitwiseReferenceAtEveryLengthAndAlignment) {
  std::string data;
  uint32_t x = 12345;
  for (int i = 0; i < 300; ++i) {
    x = x * 1103515245u + 12345u;
    data.push_back(static_cast<char>(x >> 24));
  }
  for (size_t begin = 0; begin < 9; ++begin) {
    for (size_t len = 0; begin + len <= data.size(); len += 7) {
      const std::string piece = data.substr(begin, len);
      ASSERT_EQ(Value(piece), Reference(piece)) << "begin " << begin << " len " << len;
    }
  }
}

TEST(Crc32cTest, ExtendEqualsWholeValue) {
  const std::string a = "hello, ", b = "checkpoint world";
  EXPECT_EQ(Extend(Value(a), b.data(), b.size()), Value(a + b));
  EXPECT_EQ(Extend(Value(a), nullptr, 0), Value(a));
}

TEST(Crc32cTest, DetectsSingleBitFlips) {
  std::vector<char> buf(4096, 'x');
  const uint32_t clean = Value(buf.data(), buf.size());
  for (size_t bit = 0; bit < buf.size() * 8; bit += 331) {
    buf[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    EXPECT_NE(Value(buf.data(), buf.size()), clean) << "bit " << bit;
    buf[bit / 8] ^= static_cast<char>(1 << (bit % 8));
  }
}

}  // namespace
}  // namespace accel::checkpoint::crc32c

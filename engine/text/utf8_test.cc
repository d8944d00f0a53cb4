#include "engine/text/utf8.h"

#include <gtest/gtest.h>

namespace accel::text {
namespace {

const std::string kR(kReplacementChar);

TEST(Utf8Test, ValidTextPassesThrough) {
  const std::string text = "a é 日本 😀";
  EXPECT_TRUE(IsValidUtf8(text));
  EXPECT_EQ(ToValidUtf8(text), text);
}

// One U+FFFD per maximal ill-formed subpart, as Rust's from_utf8_lossy and WHATWG decode.
TEST(Utf8Test, MaximalSubpartsBecomeOneReplacementEach) {
  EXPECT_EQ(ToValidUtf8("a\xFF"
                        "b"),
            "a" + kR + "b");
  EXPECT_EQ(ToValidUtf8("\xE2\x82"), kR);      // truncated 3-byte sequence: one
  EXPECT_EQ(ToValidUtf8("\xF0\x9F\x98"), kR);  // truncated 4-byte sequence: one
  EXPECT_EQ(ToValidUtf8("\xE2\x82x"), kR + "x");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), kR + kR);                    // overlong: each byte
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), kR + kR + kR);           // surrogate: each byte
  EXPECT_EQ(ToValidUtf8("\xF4\x90\x80\x80"), kR + kR + kR + kR);  // above U+10FFFF
  EXPECT_EQ(ToValidUtf8("\x80\x80"), kR + kR);
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));
}

TEST(Utf8Test, DecodeAndAppendRoundTrip) {
  const std::string text = "é日😀";
  std::string out;
  for (size_t i = 0; i < text.size(); i += CharLength(text[i]))
    AppendChar(DecodeChar(text, i), &out);
  EXPECT_EQ(out, text);
  EXPECT_EQ(DecodeChar("😀", 0), 0x1F600u);
}

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, space is "Ġ", newline "Ċ".
TEST(Utf8Test, ByteLevelAlphabet) {
  const auto& a = ByteLevelAlphabet();
  EXPECT_EQ(a['A'], "A");
  EXPECT_EQ(a[' '], "Ġ");
  EXPECT_EQ(a['\n'], "Ċ");
  EXPECT_EQ(a[0xAD], "Ń");  // the soft hyphen is the 68th non-printable byte: U+0100 + 67
  EXPECT_EQ(ByteLevelByte(0x120), ' ');
  EXPECT_EQ(ByteLevelByte('A'), 'A');
  EXPECT_EQ(ByteLevelByte(0x2603), -1);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(ByteLevelByte(DecodeChar(a[b], 0)), b);
}

}  // namespace
}  // namespace accel::text

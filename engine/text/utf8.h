// UTF-8 helpers shared by the tokenizer's stages, and GPT-2's byte-level alphabet.
//
// Invalid UTF-8 is replaced the way Rust's String::from_utf8_lossy, Python's
// bytes.decode("utf-8", errors="replace") and the WHATWG TextDecoder do it: each maximal
// subpart of an ill-formed sequence becomes one U+FFFD. Hugging Face tokenizers only ever see
// valid strings, so this is the one way text with invalid bytes reaches HF, and the way ours
// does too (docs/data.md "Tokenizers").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace accel::text {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length in bytes of the valid UTF-8 sequence starting at text[i], or 0 when the bytes there
// are not one (then MaximalInvalidPrefix says how many bytes one U+FFFD replaces).
size_t ValidSequenceLength(std::string_view text, size_t i);

// True when `text` is well-formed UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view text);

// `text` with every maximal ill-formed subpart replaced by U+FFFD (see above).
std::string ToValidUtf8(std::string_view text);

// Length in bytes of the UTF-8 character starting with lead byte `c` (1 for a stray byte);
// for valid UTF-8 only.
inline size_t CharLength(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xF0) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC0) return 2;
  return 1;
}

// True when `text` is exactly one valid UTF-8 character (a Rust `char` field of a file).
inline bool IsOneCharacter(std::string_view text) {
  return !text.empty() && ValidSequenceLength(text, 0) == text.size();
}

// Decodes the character at text[i] of valid UTF-8.
uint32_t DecodeChar(std::string_view text, size_t i);
void AppendChar(uint32_t code_point, std::string* out);

// GPT-2's bytes_to_unicode(): byte b is written as the UTF-8 of a printable code point.
const std::array<std::string, 256>& ByteLevelAlphabet();
// The byte a byte-level code point stands for, or -1 when it is not in the alphabet.
int ByteLevelByte(uint32_t code_point);

}  // namespace accel::text

#include "engine/text/utf8.h"

namespace accel::text {
namespace {

// Allowed range of the second byte for each lead byte (Unicode Table 3-7); later bytes are
// always 80..BF.
bool LeadInfo(unsigned char c, size_t* len, unsigned char* lo, unsigned char* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    *len = 2;
  } else if (c == 0xE0) {
    *len = 3, *lo = 0xA0;
  } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    *len = 3;
  } else if (c == 0xED) {
    *len = 3, *hi = 0x9F;
  } else if (c == 0xF0) {
    *len = 4, *lo = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) {
    *len = 4;
  } else if (c == 0xF4) {
    *len = 4, *hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

// For text[i] not starting a valid sequence: how many bytes form the maximal ill-formed
// subpart (at least 1).
size_t InvalidLength(std::string_view text, size_t i) {
  size_t len;
  unsigned char lo, hi;
  if (!LeadInfo(static_cast<unsigned char>(text[i]), &len, &lo, &hi)) return 1;
  size_t k = 1;
  for (; k < len && i + k < text.size(); ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
  }
  return k;
}

}  // namespace

size_t ValidSequenceLength(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo, hi;
  if (!LeadInfo(c, &len, &lo, &hi) || i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
  }
  return len;
}

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = ValidSequenceLength(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = ValidSequenceLength(text, i);
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append(kReplacementChar);
      i += InvalidLength(text, i);
    }
  }
  return out;
}

uint32_t DecodeChar(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  const size_t n = CharLength(c);
  if (n == 1) return c;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n && i + k < text.size(); ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  }
  return cp;
}

void AppendChar(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// bytes_to_unicode() of GPT-2's encoder.py: printable Latin-1 bytes stand for themselves, the
// other 68 take code points 256, 257, ... in byte order.
struct Alphabet {
  std::array<std::string, 256> chars;
  std::array<int, 324> bytes;
  Alphabet() {
    bytes.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      AppendChar(cp, &chars[b]);
      bytes[cp] = b;
    }
  }
};

const Alphabet& GetAlphabet() {
  static const Alphabet* alphabet = new Alphabet();
  return *alphabet;
}

}  // namespace

const std::array<std::string, 256>& ByteLevelAlphabet() { return GetAlphabet().chars; }

int ByteLevelByte(uint32_t code_point) {
  const auto& bytes = GetAlphabet().bytes;
  return code_point < bytes.size() ? bytes[code_point] : -1;
}

}  // namespace accel::text

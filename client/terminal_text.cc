#include "client/terminal_text.h"

#include "absl/strings/str_format.h"

namespace accel::client {
namespace {

// "\x1b" (text) or "\u001b" (json) for a C0 control or DEL.
void EscapeControl(unsigned char c, EscapeStyle style, std::string* out) {
  out->append(style == EscapeStyle::kText ? absl::StrFormat("\\x%02x", c)
                                          : absl::StrFormat("\\u%04x", c));
}

// A byte that cannot start or continue a UTF-8 sequence where it stands.
void EscapeInvalid(unsigned char c, EscapeStyle style, std::string* out) {
  out->append(style == EscapeStyle::kText ? absl::StrFormat("\\x%02x", c) : "\\ufffd");
}

void EscapePending(EscapeStyle style, std::string* pending, std::string* out) {
  for (const char c : *pending) EscapeInvalid(static_cast<unsigned char>(c), style, out);
  pending->clear();
}

// Bytes a sequence starting with `lead` needs after it (RFC 3629; 0xc0, 0xc1 and 0xf5.. start
// none: overlong or beyond U+10FFFF).
int Continuations(unsigned char lead) {
  if (lead >= 0xc2 && lead <= 0xdf) return 1;
  if (lead >= 0xe0 && lead <= 0xef) return 2;
  if (lead >= 0xf0 && lead <= 0xf4) return 3;
  return -1;
}

// Whether `c` may follow `pending` (which holds a lead byte and maybe continuations): the second
// byte's range depends on the lead (no overlong forms, no surrogates, nothing above U+10FFFF).
bool Continues(const std::string& pending, unsigned char c) {
  if (pending.size() > 1) return (c & 0xc0) == 0x80;
  const unsigned char lead = static_cast<unsigned char>(pending[0]);
  const unsigned char lo = lead == 0xe0 ? 0xa0 : lead == 0xf0 ? 0x90 : 0x80;
  const unsigned char hi = lead == 0xed ? 0x9f : lead == 0xf4 ? 0x8f : 0xbf;
  return c >= lo && c <= hi;
}

// Appends the safe form of `in` to `out`; the start of a sequence `in` ends inside of stays in
// `pending` for the next call.
void Neutralise(std::string_view in, EscapeStyle style, std::string* pending, std::string* out) {
  for (const char ch : in) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (!pending->empty()) {
      if (Continues(*pending, c)) {
        pending->push_back(ch);
        const unsigned char lead = static_cast<unsigned char>((*pending)[0]);
        if (static_cast<int>(pending->size()) == 1 + Continuations(lead)) {
          const unsigned char second = static_cast<unsigned char>((*pending)[1]);
          if (lead == 0xc2 && second <= 0x9f) {
            out->append(absl::StrFormat("\\u%04x", second));  // C1: U+0080..U+009F
          } else {
            out->append(*pending);
          }
          pending->clear();
        }
        continue;
      }
      EscapePending(style, pending, out);  // cut short; `c` starts afresh
    }
    if (c < 0x80) {
      const bool control = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
      if (control) {
        EscapeControl(c, style, out);
      } else {
        out->push_back(ch);
      }
    } else if (Continuations(c) > 0) {
      pending->push_back(ch);
    } else {
      EscapeInvalid(c, style, out);
    }
  }
}

}  // namespace

std::string TerminalSafe(std::string_view text, EscapeStyle style) {
  std::string out, pending;
  out.reserve(text.size());
  Neutralise(text, style, &pending, &out);
  EscapePending(style, &pending, &out);
  return out;
}

TerminalSafeBuf::TerminalSafeBuf(std::ostream& raw, EscapeStyle style) : raw_(raw), style_(style) {}

TerminalSafeBuf::~TerminalSafeBuf() { FlushPending(); }

std::ostream& TerminalSafeBuf::raw() {
  FlushPending();
  return raw_;
}

void TerminalSafeBuf::FlushPending() {
  if (pending_.empty()) return;
  std::string out;
  EscapePending(style_, &pending_, &out);
  raw_.write(out.data(), static_cast<std::streamsize>(out.size()));
}

void TerminalSafeBuf::Write(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  Neutralise(bytes, style_, &pending_, &out);
  raw_.write(out.data(), static_cast<std::streamsize>(out.size()));
}

TerminalSafeBuf::int_type TerminalSafeBuf::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  const char c = traits_type::to_char_type(ch);
  Write(std::string_view(&c, 1));
  return ch;
}

std::streamsize TerminalSafeBuf::xsputn(const char* s, std::streamsize n) {
  Write(std::string_view(s, static_cast<size_t>(n)));
  return n;
}

int TerminalSafeBuf::sync() {
  raw_.flush();
  return raw_.good() ? 0 : -1;
}

TerminalSafeStream::TerminalSafeStream(std::ostream& raw, EscapeStyle style)
    : std::ostream(nullptr), buf_(raw, style) {
  rdbuf(&buf_);
}

std::ostream& Unfiltered(std::ostream& out) {
  if (auto* filter = dynamic_cast<TerminalSafeBuf*>(out.rdbuf())) return filter->raw();
  return out;
}

}  // namespace accel::client

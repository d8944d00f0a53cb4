// What accelctl prints goes through one filter before it reaches the terminal, so that text
// from acceld (paths, error messages, log lines, names, checkpoint paths, gRPC status messages)
// cannot drive the terminal: an OSC that retitles it, an erase that hides earlier lines, a
// cursor move that forges one. RunAccelctl wraps its stdout and stderr in a TerminalSafeStream;
// every command prints through it. The live block's own cursor moves (watch_view.cc) are the
// one exception: they are written to Unfiltered(out).
//
// What the filter changes (everything else passes byte for byte):
//   C0 controls but \n and \t, and DEL      text: "\x1b"   json: "\u001b"
//   C1 controls U+0080..U+009F (as UTF-8)   text: "\u009b" json: "\u009b"
//   a byte that is not part of valid UTF-8  text: "\xff"   json: "\ufffd"
// \n and \t pass: multi-line texts (a traceback in a job's error) stay readable; neither moves
// the cursor anywhere but to the next line or column. The json style keeps JSON valid: protobuf
// already escapes control characters in --output json, and a \u escape inside a JSON string
// still decodes to the same character for a program that reads it.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace accel::client {

enum class EscapeStyle { kText, kJson };

// `text` as the filter writes it (any incomplete UTF-8 sequence at its end escaped).
std::string TerminalSafe(std::string_view text, EscapeStyle style = EscapeStyle::kText);

// The filter as a streambuf over `raw`: writes go through at once (nothing is buffered but the
// first bytes of a UTF-8 sequence split across two writes), so bytes written to raw() directly
// keep their order.
class TerminalSafeBuf final : public std::streambuf {
 public:
  TerminalSafeBuf(std::ostream& raw, EscapeStyle style);
  ~TerminalSafeBuf() override;
  void set_style(EscapeStyle style) { style_ = style; }
  // The stream below, with any held bytes written (escaped) first.
  std::ostream& raw();

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  void Write(std::string_view bytes);
  void FlushPending();

  std::ostream& raw_;
  EscapeStyle style_;
  std::string pending_;  // the start of a multi-byte UTF-8 sequence
};

// An ostream whose bytes pass through TerminalSafeBuf to `raw`.
class TerminalSafeStream final : public std::ostream {
 public:
  TerminalSafeStream(std::ostream& raw, EscapeStyle style);
  void set_style(EscapeStyle style) { buf_.set_style(style); }

 private:
  TerminalSafeBuf buf_;
};

// The stream below a TerminalSafeStream, else `out` itself. Only for accelctl's own escape
// sequences (the live block's cursor moves); never for text that came from elsewhere.
std::ostream& Unfiltered(std::ostream& out);

}  // namespace accel::client

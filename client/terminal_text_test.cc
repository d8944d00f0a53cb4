// The terminal filter alone (terminal_text.h): what it escapes, what it lets through, and that
// a stream keeps UTF-8 split across writes whole.
#include "client/terminal_text.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::client {
namespace {

constexpr char kHostile[] = "\x1b]0;pwned\x07\x1b[2J";

TEST(TerminalTextTest, ControlCharactersBecomeVisibleEscapes) {
  EXPECT_EQ(TerminalSafe(kHostile), "\\x1b]0;pwned\\x07\\x1b[2J");
  EXPECT_EQ(TerminalSafe("a\rb\x7f" "c\x08" "d"), "a\\x0db\\x7fc\\x08d");
  // C1 controls as UTF-8 (U+009B is a one-character CSI on some terminals), and U+0085.
  EXPECT_EQ(TerminalSafe("x\xc2\x9b" "2Jy\xc2\x85"), "x\\u009b2Jy\\u0085");
  EXPECT_EQ(TerminalSafe(kHostile, EscapeStyle::kJson), "\\u001b]0;pwned\\u0007\\u001b[2J");
}

TEST(TerminalTextTest, NewlinesTabsAndValidUtf8PassUnchanged) {
  const std::string text = "line 1\n\tline 2 · é ✓ 🚀 U+00A0:\xc2\xa0 end";
  EXPECT_EQ(TerminalSafe(text), text);
  EXPECT_EQ(TerminalSafe(text, EscapeStyle::kJson), text);
}

TEST(TerminalTextTest, InvalidUtf8IsEscapedByteByByte) {
  // A stray continuation, an invalid lead, an overlong form, a surrogate, a cut sequence.
  EXPECT_EQ(TerminalSafe("a\x80" "b\xff" "c"), "a\\x80b\\xffc");
  EXPECT_EQ(TerminalSafe("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(TerminalSafe("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(TerminalSafe("\xe2\x9c" "x"), "\\xe2\\x9cx");
  EXPECT_EQ(TerminalSafe("end\xe2\x9c"), "end\\xe2\\x9c");
  // A cut sequence followed by an escape: both neutralised.
  EXPECT_EQ(TerminalSafe("\xe2\x1b[2J"), "\\xe2\\x1b[2J");
  EXPECT_EQ(TerminalSafe("a\xff", EscapeStyle::kJson), "a\\ufffd");
}

TEST(TerminalTextTest, TheStreamFiltersEveryWriteAndKeepsSplitCharactersWhole) {
  std::ostringstream raw;
  {
    TerminalSafeStream out(raw, EscapeStyle::kText);
    out << "path " << kHostile << '\x07' << "\n";
    out << "\xe2\x9c";  // ✓ split across two writes
    out << "\x93 ok\n";
    out << "cut \xe2";  // left incomplete: escaped when the stream goes
  }
  EXPECT_EQ(raw.str(), "path \\x1b]0;pwned\\x07\\x1b[2J\\x07\n\xe2\x9c\x93 ok\ncut \\xe2");
}

TEST(TerminalTextTest, OnlyUnfilteredWritesReachTheStreamRaw) {
  std::ostringstream raw;
  TerminalSafeStream out(raw, EscapeStyle::kText);
  out << "\x1b[1A";
  Unfiltered(out) << "\x1b[1A";
  out << "z";
  out.flush();
  EXPECT_EQ(raw.str(), "\\x1b[1A\x1b[1Az");
  // A stream without the filter is its own unfiltered stream.
  EXPECT_EQ(&Unfiltered(raw), &raw);
}

}  // namespace
}  // namespace accel::client

// The request parser alone (server/http/http_request.h): what a head parses to, where it ends, and
// the status each malformed or oversized head is refused with.
#include "server/http/http_request.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;

struct Parsed {
  bool ok;
  HttpRequest request;
  HttpRefusal refusal;
};

Parsed Parse(absl::string_view head, HttpLimits limits = {}) {
  Parsed p;
  p.ok = ParseRequestHead(head, limits, &p.request, &p.refusal);
  return p;
}

int RefusedWith(absl::string_view head, HttpLimits limits = {}) {
  Parsed p = Parse(head, limits);
  return p.ok ? 0 : p.refusal.status;
}

TEST(HttpRequestTest, ParsesTheRequestLineHeadersQueryAndFraming) {
  Parsed p = Parse(
      "GET /api/v1/jobs/job-1/events?after=3&limit=2&token=a%2Bb+c HTTP/1.1\r\n"
      "Host: 127.0.0.1:9090\r\n"
      "Authorization:   Bearer s3cret  \r\n"
      "Content-Length: 5\r\n"
      "\r\n");
  ASSERT_TRUE(p.ok) << p.refusal.message;
  EXPECT_EQ(p.request.method, "GET");
  EXPECT_EQ(p.request.path, "/api/v1/jobs/job-1/events");
  EXPECT_EQ(p.request.target, "/api/v1/jobs/job-1/events?after=3&limit=2&token=a%2Bb+c");
  EXPECT_THAT(p.request.query,
              testing::ElementsAre(Pair("after", "3"), Pair("limit", "2"), Pair("token", "a+b c")));
  EXPECT_EQ(p.request.Header("authorization"), "Bearer s3cret");
  EXPECT_EQ(p.request.Header("X-None"), "");
  EXPECT_EQ(p.request.content_length, 5);
  EXPECT_TRUE(p.request.keep_alive);
  EXPECT_EQ(p.request.Param("limit"), "2");
  EXPECT_FALSE(p.request.HasParam("after2"));
}

TEST(HttpRequestTest, ConnectionFollowsTheVersionAndTheHeader) {
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.1\n\n").ok) << "bare LF line ends are taken";
}

TEST(HttpRequestTest, TheHeadEndsAtTheFirstEmptyLineWhateverTheChunks) {
  const std::string bytes = "GET / HTTP/1.1\r\nA: b\r\n\r\nGET /next";
  const size_t want = bytes.find("GET /next");
  // Fed one byte at a time, resuming the search, it ends exactly there.
  size_t scanned = 0, found = 0;
  for (size_t n = 1; n <= bytes.size() && found == 0; ++n) {
    found = RequestHeadLength(absl::string_view(bytes).substr(0, n), &scanned);
    if (found) {
      EXPECT_EQ(n, want);
    }
  }
  EXPECT_EQ(found, want);
  size_t fresh = 0;
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\nA: b\r\n", &fresh), 0u);
  fresh = 0;
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\n\nrest", &fresh), 16u);
}

TEST(HttpRequestTest, BadPercentEncodingAndNonUtf8PathsAreClientErrors) {
  EXPECT_EQ(RefusedWith("GET /api/v1/jobs/job-%ff HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET /api/v1/jobs/job-%zz HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET /a%2 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET /a%00b HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(RefusedWith("GET /%c0%af HTTP/1.1\r\n\r\n"), 400);      // overlong '/'
  EXPECT_EQ(RefusedWith("GET /%ed%a0%80 HTTP/1.1\r\n\r\n"), 400);   // a surrogate
  EXPECT_EQ(RefusedWith("GET /?a=%g1 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_THAT(Parse("GET /api/v1/jobs/job-%ff HTTP/1.1\r\n\r\n").refusal.message,
              HasSubstr("does not decode to UTF-8"));
  Parsed utf8 = Parse("GET /jobs/%C3%A9t%C3%A9 HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(utf8.ok);
  EXPECT_EQ(utf8.request.path, "/jobs/\xc3\xa9t\xc3\xa9");
}

TEST(HttpRequestTest, MalformedHeadsAreRefusedWithTheirStatus) {
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 411);
  EXPECT_EQ(RefusedWith("GET / HTTP/2.0\r\n\r\n"), 505);
  for (const char* bad : {"GET /\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET / FTP/1.1\r\n\r\n",
                          "GET http://x/ HTTP/1.1\r\n\r\n", "G(T / HTTP/1.1\r\n\r\n",
                          "GET /a\x01 HTTP/1.1\r\n\r\n", "GET /\xc3\xa9 HTTP/1.1\r\n\r\n",
                          "GET / HTTP/1.1\r\nNo colon\r\n\r\n",
                          "GET / HTTP/1.1\r\nA : b\r\n\r\n",
                          "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n",
                          "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",
                          "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n",
                          "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                          "GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
                          "GET / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
                          "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                          "\r\n\r\n"}) {
    EXPECT_EQ(RefusedWith(bad), 400) << bad;
  }
}

TEST(HttpRequestTest, SizeLimitsGive413And414And431) {
  HttpLimits limits;
  limits.max_body_bytes = 10;
  limits.max_head_bytes = 64;
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nContent-Length: 10\r\n\r\n", limits), 0);
  Parsed big = Parse("GET / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", limits);
  EXPECT_EQ(big.refusal.status, 413);
  EXPECT_THAT(big.refusal.message, HasSubstr("11 bytes is over the 10-byte limit"));
  EXPECT_EQ(RefusedWith("GET / HTTP/1.1\r\nX: " + std::string(80, 'a') + "\r\n\r\n", limits), 431);
  EXPECT_EQ(HeadTooLarge("GET /" + std::string(100, 'a'), limits).status, 414);
  EXPECT_EQ(HeadTooLarge("GET / HTTP/1.1\r\nX: " + std::string(100, 'a'), limits).status, 431);
}

TEST(HttpRequestTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // cut short
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong
}

}  // namespace
}  // namespace accel::server

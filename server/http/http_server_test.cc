// acceld's HTTP side without the daemon: the token on every path but /healthz (header, cookie,
// ?token= login), a taken port refused, and the Prometheus text format's escaping and numbers.
#include "server/http/http_server.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "server/http/prometheus_text.h"

namespace accel::server {
namespace {

using ::testing::HasSubstr;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = HttpServer::Start({"127.0.0.1:0", "s3cret"}, [](HttpRoutes& routes) {
      routes.Get("/metrics", [](const HttpRequest&, const std::vector<std::string>&) {
        HttpResponse res;
        res.content_type = "text/plain";
        res.body = "accel_up 1\n";
        return res;
      });
    });
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_connection_timeout(5);
    client_->set_read_timeout(5);
  }
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpServerTest, HealthzNeedsNoTokenAndEverythingElseDoes) {
  auto health = client_->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");

  auto none = client_->Get("/metrics");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_THAT(none->body, HasSubstr("Authorization: Bearer"));
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"acceld\"");
  // Unknown paths are 401 too: nothing about the server leaks before the token.
  auto unknown = client_->Get("/no/such/page");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 401);

  auto wrong = client_->Get("/metrics", {{"Authorization", "Bearer s3cre"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto right = client_->Get("/metrics", {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
  EXPECT_EQ(right->body, "accel_up 1\n");
  auto missing = client_->Get("/no/such/page", {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(HttpServerTest, ABrowserLogsInOnceWithTheTokenInTheAddressAndThenUsesTheCookie) {
  auto bad = client_->Get("/metrics?token=guess");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 401);
  EXPECT_TRUE(bad->get_header_value("Set-Cookie").empty());

  auto login = client_->Get("/metrics?token=s3cret");  // the client does not follow redirects
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 303);
  EXPECT_EQ(login->get_header_value("Location"), "/metrics");
  const std::string cookie = login->get_header_value("Set-Cookie");
  EXPECT_THAT(cookie, HasSubstr("accel_token=s3cret"));
  EXPECT_THAT(cookie, HasSubstr("HttpOnly"));
  EXPECT_THAT(cookie, HasSubstr("SameSite=Strict"));

  auto with_cookie = client_->Get("/metrics", {{"Cookie", "theme=dark; accel_token=s3cret"}});
  ASSERT_TRUE(with_cookie);
  EXPECT_EQ(with_cookie->status, 200);
  auto stale_cookie = client_->Get("/metrics", {{"Cookie", "accel_token=old"}});
  ASSERT_TRUE(stale_cookie);
  EXPECT_EQ(stale_cookie->status, 401);
}

TEST_F(HttpServerTest, ATakenPortAndAMalformedAddressAreRefusedAtStart) {
  auto second = HttpServer::Start({server_->address(), "x"}, nullptr);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("--http-listen: cannot listen on"));
  for (const char* bad : {"127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000", ":-1"}) {
    auto s = HttpServer::Start({bad, "x"}, nullptr);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.status().message(), HasSubstr("--http-listen")) << bad;
  }
  EXPECT_EQ(HttpServer::Start({"127.0.0.1:0", ""}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(HttpServerTest, OtherMethodsAre405WithAllowAndBadPathsAre400) {
  const httplib::Headers auth = {{"Authorization", "Bearer s3cret"}};
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH"}) {
    httplib::Request req;
    req.method = method;
    req.path = "/metrics";
    req.headers = auth;
    auto res = client_->send(req);
    ASSERT_TRUE(res) << method;
    EXPECT_EQ(res->status, 405) << method;
    EXPECT_EQ(res->get_header_value("Allow"), "GET, HEAD") << method;
  }
  // Without the token a known path still says nothing but 401; /healthz needs none.
  auto anonymous = client_->Post("/metrics", "", "text/plain");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  auto healthz = client_->Delete("/healthz");
  ASSERT_TRUE(healthz);
  EXPECT_EQ(healthz->status, 405);
  EXPECT_EQ(healthz->get_header_value("Allow"), "GET, HEAD");
  auto head = client_->Head("/metrics", auth);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->body, "");
  // Bad percent-encoding or a path that is not UTF-8: the client's error, before the routes.
  for (const char* path : {"/api/v1/jobs/job-%ff", "/api/v1/jobs/job-%zz", "/metrics%00"}) {
    auto res = client_->Get(path, auth);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path;
  }
  auto large = client_->Post("/healthz", std::string((1 << 20) + 1, 'x'), "text/plain");
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 413);
}

TEST(PresentedTokenTest, HeaderWinsThenTheCookieAmongOthers) {
  EXPECT_EQ(PresentedToken("Bearer abc", "accel_token=zzz"), "abc");
  EXPECT_EQ(PresentedToken("bearer  abc ", ""), "abc");
  EXPECT_EQ(PresentedToken("Basic abc", "a=1; accel_token=t0k; b=2"), "t0k");
  EXPECT_EQ(PresentedToken("", "accel_token_old=1"), "");
  EXPECT_EQ(PresentedToken("", ""), "");
}

TEST(PrometheusTextTest, FamiliesSamplesEscapingAndExactNumbers) {
  PrometheusText out;
  out.Family("accel_x_bytes", "Some bytes.", PrometheusText::Type::kGauge);
  out.Sample("accel_x_bytes", {{"job_id", "job-1"}, {"name", "a\"b\\c\nd"}}, 123456789012);
  out.Sample("accel_x_bytes", {}, 0.1);
  out.Sample("accel_x_bytes", {}, std::numeric_limits<double>::quiet_NaN());
  out.Sample("accel_x_bytes", {}, -std::numeric_limits<double>::infinity());
  out.Sample("accel_x_bytes", {}, 1.0 / 3.0);
  EXPECT_EQ(out.text(),
            "# HELP accel_x_bytes Some bytes.\n"
            "# TYPE accel_x_bytes gauge\n"
            "accel_x_bytes{job_id=\"job-1\",name=\"a\\\"b\\\\c\\nd\"} 123456789012\n"
            "accel_x_bytes 0.1\n"
            "accel_x_bytes NaN\n"
            "accel_x_bytes -Inf\n"
            "accel_x_bytes 0.33333333333333331\n");
}

TEST(PrometheusTextTest, HistogramBucketsAreCumulativeWithSumAndCount) {
  LatencyHistogram h;
  h.Observe(0.000244140625);  // 2^-12: the first bucket
  h.Observe(0.00390625);      // 2^-8: le 0.005
  h.Observe(100);     // +Inf only
  PrometheusText out;
  out.Histogram("accel_rpc_duration_seconds", {{"method", "GetJob"}}, h);
  const std::string& t = out.text();
  EXPECT_THAT(t, HasSubstr("accel_rpc_duration_seconds_bucket{method=\"GetJob\",le=\"0.0005\"} 1\n"));
  EXPECT_THAT(t, HasSubstr("accel_rpc_duration_seconds_bucket{method=\"GetJob\",le=\"0.0025\"} 1\n"));
  EXPECT_THAT(t, HasSubstr("accel_rpc_duration_seconds_bucket{method=\"GetJob\",le=\"0.005\"} 2\n"));
  EXPECT_THAT(t, HasSubstr("accel_rpc_duration_seconds_bucket{method=\"GetJob\",le=\"30\"} 2\n"));
  EXPECT_THAT(t, HasSubstr("accel_rpc_duration_seconds_bucket{method=\"GetJob\",le=\"+Inf\"} 3\n"));
  EXPECT_THAT(t, HasSubstr("accel_rpc_duration_seconds_sum{method=\"GetJob\"} 100.004150390625\n"));
  EXPECT_THAT(t, HasSubstr("accel_rpc_duration_seconds_count{method=\"GetJob\"} 3\n"));
}

}  // namespace
}  // namespace accel::server

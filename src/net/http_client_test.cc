#include "net/http_client.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "net/http_server.h"

namespace gpucanary::net {
namespace {

using ::testing::HasSubstr;

TEST(ParseHttpUrlTest, SplitsHostPortAndTarget) {
  auto u = ParseHttpUrl("http://127.0.0.1:9400/metrics");
  ASSERT_TRUE(u) << u.error().ToString();
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 9400);
  EXPECT_EQ(u->target, "/metrics");

  u = ParseHttpUrl("HTTP://localhost");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "localhost");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/");

  u = ParseHttpUrl("http://[::1]:8000/api/state?x=1&y=2#frag");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 8000);
  EXPECT_EQ(u->target, "/api/state?x=1&y=2");

  u = ParseHttpUrl("http://h:65535?q");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 65535);
  EXPECT_EQ(u->target, "/?q");
}

TEST(ParseHttpUrlTest, RejectsWhatItCannotFetch) {
  const char* bad[] = {"",
                       "127.0.0.1:9400/metrics",
                       "ftp://x/",
                       "https://",
                       "https://user@h/",
                       "http://",
                       "http:///metrics",
                       "http://:80/",
                       "http://h:/",
                       "http://h:0/",
                       "http://h:65536/",
                       "http://h:99999999999/",
                       "http://h:8o/",
                       "http://user:pw@h/",
                       "http://[::1/",
                       "http://[::1]x/",
                       "http://h/a b",
                       "http://h/\n"};
  for (const char* url : bad) {
    auto u = ParseHttpUrl(url);
    ASSERT_FALSE(u) << url;
    EXPECT_EQ(u.error().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(u.error().message(), HasSubstr(std::string("bad URL '") + url + "'"));
  }
  EXPECT_THAT(ParseHttpUrl("ftp://x/").error().message(),
              HasSubstr("only http:// and https:// are supported"));
}

TEST(ParseHttpUrlTest, HttpsDefaultsToPort443) {
  auto u = ParseHttpUrl("HTTPS://gpu-7.example:9443/metrics");
  ASSERT_TRUE(u) << u.error().ToString();
  EXPECT_TRUE(u->https);
  EXPECT_EQ(u->host, "gpu-7.example");
  EXPECT_EQ(u->port, 9443);
  EXPECT_EQ(u->target, "/metrics");
  u = ParseHttpUrl("https://[::1]");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->host, "::1");
  EXPECT_FALSE(ParseHttpUrl("http://h/")->https);
}

// A TCP socket bound to a free loopback port. Without listen() a connect to
// it is refused; with listen() but no accept() the kernel completes the
// handshake and nothing ever answers.
class BoundSocket {
 public:
  explicit BoundSocket(bool listening) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    auto* sa = reinterpret_cast<sockaddr*>(&addr);
    EXPECT_EQ(bind(fd_, sa, len), 0);
    EXPECT_EQ(getsockname(fd_, sa, &len), 0);
    if (listening) {
      EXPECT_EQ(listen(fd_, 8), 0);
    }
    port_ = ntohs(addr.sin_port);
  }
  ~BoundSocket() { close(fd_); }
  BoundSocket(const BoundSocket&) = delete;
  BoundSocket& operator=(const BoundSocket&) = delete;
  std::uint16_t port() const { return port_; }

 private:
  int fd_;
  std::uint16_t port_ = 0;
};

TEST(FetchTest, ConnectionRefusedNamesUrlAndCause) {
  BoundSocket closed(false);
  const std::string url = "http://127.0.0.1:" + std::to_string(closed.port()) + "/metrics";
  auto r = Fetch(url);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.error().message(), "GET " + url + ": connect: Connection refused");
}

TEST(FetchTest, BadUrlIsInvalidArgument) {
  auto r = Fetch("ftp://127.0.0.1:9400/metrics");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.error().message(),
            "bad URL 'ftp://127.0.0.1:9400/metrics': only http:// and https:// are supported");
}

TEST(FetchTest, UnresolvableHostIsUnavailable) {
  auto r = Fetch("http://no-such-host.invalid:9400/metrics");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.error().message(),
              HasSubstr("GET http://no-such-host.invalid:9400/metrics: cannot resolve host"));
}

TEST(FetchTest, SilentServerTimesOut) {
  BoundSocket silent(true);
  FetchOptions options;
  options.timeout_ms = 200;
  const std::string url = "http://127.0.0.1:" + std::to_string(silent.port()) + "/metrics";
  const auto start = std::chrono::steady_clock::now();
  auto r = Fetch(url, options);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.error().message(), "GET " + url + ": timed out after 200 ms (receive)");
  EXPECT_GE(elapsed, std::chrono::milliseconds(190));
  EXPECT_LT(elapsed, std::chrono::seconds(3));
}

TEST(FetchTest, RejectsBadOptions) {
  FetchOptions options;
  options.timeout_ms = 0;
  auto r = Fetch("http://127.0.0.1:1/", options);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
}

HttpServer::Options OneThread() { return HttpServer::Options{}; }

TEST(HttpConnectionTest, ReusesOneConnectionAndSendsBodies) {
  HttpServer server(OneThread());
  auto port = server.Listen("127.0.0.1", 0, [](const HttpRequest& req, HttpResponse& res) {
    res.content_type = "text/plain";
    res.body = req.method + " " + req.target + " " + req.body + " " +
               std::string(req.Header("content-type"));
  });
  ASSERT_TRUE(port);
  ASSERT_TRUE(server.Start().ok());
  HttpConnection conn("127.0.0.1", *port);
  for (int i = 0; i < 3; ++i) {
    FetchOptions options;
    options.method = "POST";
    options.body = "{\"i\":" + std::to_string(i) + "}";
    options.content_type = "application/json";
    auto r = conn.Request("/api/x?i=" + std::to_string(i), options);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->content_type, "text/plain");
    EXPECT_EQ(r->body, "POST /api/x?i=" + std::to_string(i) + " {\"i\":" + std::to_string(i) +
                           "} application/json");
  }
  EXPECT_EQ(conn.connects(), 1);
  EXPECT_EQ(server.stats().connections_accepted, 1U);
  EXPECT_EQ(server.stats().requests, 3U);
}

TEST(HttpConnectionTest, ReconnectsWhenServerClosedIdleConnection) {
  auto handler = [](const HttpRequest&, HttpResponse& res) { res.body = "ok"; };
  auto first = std::make_unique<HttpServer>(OneThread());
  auto port = first->Listen("127.0.0.1", 0, handler);
  ASSERT_TRUE(port);
  ASSERT_TRUE(first->Start().ok());
  HttpConnection conn("127.0.0.1", *port);
  ASSERT_TRUE(conn.Request("/"));
  first.reset();  // closes the kept-alive connection

  HttpServer second(OneThread());
  ASSERT_TRUE(second.Listen("127.0.0.1", *port, handler));
  ASSERT_TRUE(second.Start().ok());
  auto r = conn.Request("/");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(conn.connects(), 2);
}

TEST(HttpConnectionTest, DoesNotRetryPost) {
  auto first = std::make_unique<HttpServer>(OneThread());
  auto port = first->Listen("127.0.0.1", 0, [](const HttpRequest&, HttpResponse&) {});
  ASSERT_TRUE(port);
  ASSERT_TRUE(first->Start().ok());
  HttpConnection conn("127.0.0.1", *port);
  ASSERT_TRUE(conn.Request("/"));
  first.reset();
  FetchOptions post;
  post.method = "POST";
  post.body = "x";
  auto r = conn.Request("/", post);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kIoError);
  EXPECT_THAT(r.error().message(),
              HasSubstr("POST http://127.0.0.1:" + std::to_string(*port) + "/: "));
  EXPECT_EQ(conn.connects(), 1);
}

}  // namespace
}  // namespace gpucanary::net

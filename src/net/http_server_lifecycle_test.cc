#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "net/http_server.h"
#include "net/test_util.h"

// Timeouts, Stop, Listen and Start errors, options, and many listeners
// under concurrent clients.

namespace gpucanary::net {
namespace {

using test::Echo;
using test::LargeBody;
using test::RawClient;
using test::TestServer;
using test::Url;
using ::testing::StartsWith;

TEST(HttpServerTest, SlowClientTimesOutWithoutBlockingOthers) {
  HttpServer::Options options;
  options.read_timeout_s = 1;
  TestServer t(Echo, options);  // one io thread
  RawClient slow(t.port);
  slow.Send("GET / HTTP/1.1\r\nHost: x\r\n");  // and never the blank line
  auto r = Fetch(Url(t.port, "/other"));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_THAT(r->body, StartsWith("GET\n/other\n"));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(slow.WaitClosed());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

TEST(HttpServerTest, IdleKeepAliveConnectionIsClosed) {
  HttpServer::Options options;
  options.idle_timeout_s = 1;
  TestServer t(Echo, options);
  RawClient silent(t.port);  // connected, never sends a byte
  RawClient c(t.port);
  c.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_TRUE(silent.WaitClosed());
}

TEST(HttpServerTest, StopWithOpenIdleConnectionReturnsAndClosesIt) {
  TestServer t(Echo);  // idle timeout 30 s: only Stop can close it in time
  RawClient c(t.port);
  c.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 200 OK\r\n"));
  RawClient half(t.port);  // served once, then stopped in the middle of a request
  half.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_THAT(half.ReadResponse(), StartsWith("HTTP/1.1 200 OK\r\n"));
  half.Send("GET / HTTP/1.1\r\n");
  EXPECT_EQ(t.server.stats().open_connections, 2U);
  const auto start = std::chrono::steady_clock::now();
  t.server.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_TRUE(half.WaitClosed());
  EXPECT_EQ(t.server.stats().open_connections, 0U);
  t.server.Stop();  // idempotent
  RawClient after(t.port);
  EXPECT_FALSE(after.connected());
}

TEST(HttpServerTest, StopBeforeStartAndUseAfterStop) {
  HttpServer server(HttpServer::Options{});
  ASSERT_TRUE(server.Listen("127.0.0.1", 0, Echo));
  server.Stop();
  auto port = server.Listen("127.0.0.1", 0, Echo);
  ASSERT_FALSE(port);
  EXPECT_EQ(port.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(server.Start().code(), StatusCode::kUnavailable);
}

TEST(HttpServerTest, ListenReportsWhyItFailed) {
  TestServer t(Echo);
  HttpServer other(HttpServer::Options{});
  auto in_use = other.Listen("127.0.0.1", t.port, Echo);
  ASSERT_FALSE(in_use);
  EXPECT_EQ(in_use.error().code(), StatusCode::kIoError);
  EXPECT_EQ(in_use.error().message(),
            "listen 127.0.0.1:" + std::to_string(t.port) + ": Address already in use");

  auto bad_host = other.Listen("no-such-host.invalid", 0, Echo);
  ASSERT_FALSE(bad_host);
  EXPECT_EQ(bad_host.error().code(), StatusCode::kIoError);
  EXPECT_THAT(bad_host.error().message(), StartsWith("listen no-such-host.invalid:0: "));

  auto no_handler = other.Listen("127.0.0.1", 0, Handler());
  ASSERT_FALSE(no_handler);
  EXPECT_EQ(no_handler.error().code(), StatusCode::kInvalidArgument);

  ASSERT_TRUE(other.Start().ok());
  EXPECT_EQ(other.Start().code(), StatusCode::kInvalidArgument);
}

TEST(HttpServerTest, RejectsBadOptions) {
  for (auto bad : {&HttpServer::Options::threads, &HttpServer::Options::read_timeout_s,
                   &HttpServer::Options::idle_timeout_s, &HttpServer::Options::gzip_level}) {
    HttpServer::Options options;
    options.*bad = 0;
    HttpServer server(options);
    EXPECT_EQ(server.Start().code(), StatusCode::kInvalidArgument);
    EXPECT_FALSE(server.Listen("127.0.0.1", 0, Echo));
  }
}

TEST(HttpServerTest, ServesLocalhostAndIpv6Loopback) {
  HttpServer server(HttpServer::Options{});
  auto v4 = server.Listen("localhost", 0, Echo);
  ASSERT_TRUE(v4) << v4.error().ToString();
  ASSERT_TRUE(server.Start().ok());
  auto r = Fetch("http://localhost:" + std::to_string(*v4) + "/x");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_THAT(r->body, StartsWith("GET\n/x\n"));
  auto v6 = server.Listen("::1", 0, Echo);
  if (!v6) GTEST_SKIP() << "no IPv6 loopback: " << v6.error().ToString();
  r = Fetch("http://[::1]:" + std::to_string(*v6) + "/y");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_THAT(r->body, StartsWith("GET\n/y\n"));
}

// The simulator's shape: hundreds of listeners on one server, scraped
// concurrently; every response must come from its own listener.
TEST(HttpServerTest, ManyListenersUnderConcurrentClients) {
  constexpr int kListeners = 400;
  constexpr int kClients = 4;
  HttpServer::Options options;
  options.threads = 2;
  HttpServer server(options);
  std::atomic<int> calls{0};
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < kListeners; ++i) {
    auto port = server.Listen("127.0.0.1", 0, [i, &calls](const HttpRequest&, HttpResponse& res) {
      calls.fetch_add(1);
      res.body = LargeBody(2000, i);  // gzipped on the wire
    });
    ASSERT_TRUE(port) << port.error().ToString();
    ports.push_back(*port);
  }
  ASSERT_TRUE(server.Start().ok());
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int k = 0; k < kListeners; ++k) {
        const int i = (k * 7 + c * 101) % kListeners;  // each client in its own order
        auto r = Fetch(Url(ports[static_cast<std::size_t>(i)], "/metrics"));
        if (r && r->status == 200 && r->body == LargeBody(2000, i) &&
            r->Header("content-encoding") == "gzip") {
          good.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(good.load(), kListeners * kClients);
  EXPECT_EQ(calls.load(), kListeners * kClients);
  EXPECT_EQ(server.stats().requests, static_cast<std::uint64_t>(kListeners * kClients));
  EXPECT_GT(server.stats().io_cpu_seconds, 0.0);
}

}  // namespace
}  // namespace gpucanary::net

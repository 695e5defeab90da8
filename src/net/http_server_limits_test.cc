#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "net/http_server.h"
#include "net/test_util.h"

// What one client cannot take from the others: connections (per client and
// in all), and the answer of a fast handler (health checks) while every
// handler thread is busy.

namespace gpucanary::net {
namespace {

using test::Body;
using test::Echo;
using test::RawClient;
using test::TestServer;
using test::Url;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Linux routes all of 127/8 to the loopback; elsewhere a test that needs a
// second client address is skipped.
bool CanConnectFrom(const char* source, std::uint16_t port) {
  RawClient probe(port, source);
  return probe.connected();
}

// Polls `done` (the server notices closed connections asynchronously).
template <typename Done>
bool Eventually(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string Get(RawClient& c, const std::string& path) {
  c.Send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
  return c.ReadResponse();
}

TEST(HttpServerLimitsTest, DefaultIdleTimeoutIsThirtySeconds) {
  EXPECT_EQ(HttpServer::Options{}.idle_timeout_s, 30);
}

TEST(HttpServerLimitsTest, AClientAtItsLimitIsRefusedAndOthersAreServed) {
  HttpServer::Options options;
  options.max_connections_per_client = 2;
  TestServer t(Echo, options);  // idle timeout 30 s: the held connections stay
  if (!CanConnectFrom("127.0.0.2", t.port)) GTEST_SKIP() << "no 127.0.0.2 on this host";
  ASSERT_TRUE(Eventually([&] { return t.server.stats().open_connections == 0; }));

  // Client A holds its two connections idle, as a flood of idle sockets would.
  auto a1 = std::make_unique<RawClient>(t.port, "127.0.0.1");
  auto a2 = std::make_unique<RawClient>(t.port, "127.0.0.1");
  ASSERT_TRUE(a1->connected() && a2->connected());
  RawClient a3(t.port, "127.0.0.1");
  const std::string refused = a3.ReadResponse();
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 429 Too Many Requests\r\n"));
  EXPECT_THAT(refused, HasSubstr("Retry-After: 1\r\n"));
  EXPECT_THAT(refused, HasSubstr("Connection: close\r\n"));
  EXPECT_TRUE(a3.WaitClosed());
  EXPECT_EQ(t.server.stats().connections_refused, 1U);

  // Client B is served as if A were not there; so are A's own connections.
  RawClient b(t.port, "127.0.0.2");
  EXPECT_THAT(Body(Get(b, "/b")), StartsWith("GET\n/b\n"));
  EXPECT_THAT(Body(Get(*a1, "/a")), StartsWith("GET\n/a\n"));

  // A connection A closes is A's again.
  a2.reset();
  ASSERT_TRUE(Eventually([&] { return t.server.stats().open_connections == 2; }));
  RawClient a4(t.port, "127.0.0.1");
  EXPECT_THAT(Body(Get(a4, "/again")), StartsWith("GET\n/again\n"));
}

TEST(HttpServerLimitsTest, AServerAtItsLimitRefusesNewConnectionsWith503) {
  HttpServer::Options options;
  options.max_connections = 2;
  TestServer t(Echo, options);
  if (!CanConnectFrom("127.0.0.3", t.port)) GTEST_SKIP() << "no 127.0.0.3 on this host";
  ASSERT_TRUE(Eventually([&] { return t.server.stats().open_connections == 0; }));
  RawClient a(t.port, "127.0.0.1");
  RawClient b(t.port, "127.0.0.2");
  RawClient c(t.port, "127.0.0.3");
  const std::string refused = c.ReadResponse();
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_THAT(refused, HasSubstr("Retry-After: 1\r\n"));
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_THAT(Body(Get(a, "/a")), StartsWith("GET\n/a\n"));
  EXPECT_THAT(Body(Get(b, "/b")), StartsWith("GET\n/b\n"));
}

TEST(HttpServerLimitsTest, RejectsBadLimits) {
  HttpServer::Options options;
  options.handler_threads = -1;
  HttpServer server(options);
  EXPECT_EQ(server.Start().code(), StatusCode::kInvalidArgument);
}

// Health checks must not wait behind slow handlers: every handler thread is
// held on a latch, and /-/healthy is still answered, by the fast handler on
// the io thread.
TEST(HttpServerLimitsTest, FastHandlerAnswersWhileEveryHandlerThreadIsBlocked) {
  constexpr int kHandlerThreads = 2;
  HttpServer::Options options;
  options.threads = 1;
  options.handler_threads = kHandlerThreads;
  HttpServer server(options);
  std::latch entered(kHandlerThreads);
  std::latch release(1);
  auto port = server.Listen(
      "127.0.0.1", 0,
      [&](const HttpRequest& req, HttpResponse& res) {
        if (req.path == "/slow") {
          entered.count_down();
          release.wait();
        }
        res.body = "handled " + req.path;
      },
      [](const HttpRequest& req, HttpResponse& res) {
        if (req.path == "/throw") throw std::runtime_error("boom");
        if (req.path != "/-/healthy") return false;
        res.body = "healthy";
        return true;
      });
  ASSERT_TRUE(port) << port.error().ToString();
  ASSERT_TRUE(server.Start().ok());

  std::vector<std::thread> slow;
  std::atomic<int> slow_ok{0};
  bool released = false;
  auto finish = [&] {  // on every path out, so that a failure cannot hang the test
    if (!released) release.count_down();
    released = true;
    for (std::thread& t : slow) t.join();
    slow.clear();
  };
  struct Finally {
    std::function<void()> run;
    ~Finally() { run(); }
  } const finally{finish};
  for (int i = 0; i < kHandlerThreads; ++i) {
    slow.emplace_back([&] {
      auto r = Fetch(Url(*port, "/slow"));
      if (r && r->body == "handled /slow") slow_ok.fetch_add(1);
    });
  }
  // Every handler thread is now blocked (a server that ran handlers on its
  // one io thread would never get here: the second /slow would wait).
  ASSERT_TRUE(Eventually([&] { return entered.try_wait(); }));
  auto healthy = Fetch(Url(*port, "/-/healthy"));
  ASSERT_TRUE(healthy) << healthy.error().ToString();
  EXPECT_EQ(healthy->status, 200);
  EXPECT_EQ(healthy->body, "healthy");
  auto thrown = Fetch(Url(*port, "/throw"));  // a fast handler that throws: 500, as a handler
  ASSERT_TRUE(thrown) << thrown.error().ToString();
  EXPECT_EQ(thrown->status, 500);
  finish();
  EXPECT_EQ(slow_ok.load(), kHandlerThreads);
  // What the fast handler declines goes to the handler.
  auto other = Fetch(Url(*port, "/other"));
  ASSERT_TRUE(other) << other.error().ToString();
  EXPECT_EQ(other->body, "handled /other");
  EXPECT_EQ(server.stats().handler_exceptions, 1U);
}

}  // namespace
}  // namespace gpucanary::net

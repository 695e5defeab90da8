// The asynchronous client on a test's own io_context, against net::HttpServer
// on loopback: what it sends, what it reports, keep-alive and the retry rule,
// and the two wordings (the scraper's and the synchronous client's).

#include "net/async_connection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "net/gzip.h"
#include "net/test_util.h"

namespace gpucanary::net {
namespace {

using std::chrono::milliseconds;
using test::TestServer;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;
using Wording = AsyncConnection::Wording;

ClientRequest Get(std::uint16_t port, const std::string& target) {
  ClientRequest r;
  r.target = target;
  r.url = test::Url(port, target);
  return r;
}

AsyncConnection::Options WordedAs(Wording wording) {
  AsyncConnection::Options o;
  o.wording = wording;
  o.blocking_lookup = wording == Wording::kClient;
  return o;
}

class AsyncConnectionTest : public ::testing::Test {
 protected:
  std::shared_ptr<AsyncConnection> Connect(std::uint16_t port, AsyncConnection::Options o = {},
                                           const std::string& host = "127.0.0.1") {
    return AsyncConnection::Create(ioc_, host, port, o);
  }

  // One fetch, run to completion on this thread.
  FetchResult Run(AsyncConnection& c, const ClientRequest& r,
                  milliseconds timeout = milliseconds(5000)) {
    std::optional<FetchResult> out;
    c.Fetch(std::make_shared<const ClientRequest>(r), timeout,
            [&out](FetchResult f) { out = std::move(f); });
    EXPECT_FALSE(out.has_value()) << "done ran inside Fetch";
    ioc_.restart();
    ioc_.run();
    EXPECT_TRUE(out.has_value());
    return out.value_or(FetchResult{});
  }

  boost::asio::io_context ioc_;
};

TEST_F(AsyncConnectionTest, SendsTheCallersRequestOnOneKeptAliveConnection) {
  TestServer t(test::Echo);
  auto c = Connect(t.port);
  for (int i = 0; i < 3; ++i) {
    ClientRequest r = Get(t.port, "/echo?i=" + std::to_string(i));
    r.method = "POST";
    r.headers = {{"X-Trace", "t" + std::to_string(i)}};
    r.body = "b";
    const FetchResult f = Run(*c, r);
    ASSERT_TRUE(f.error.ok()) << f.error.ToString();
    EXPECT_EQ(f.status, 200);
    EXPECT_EQ(f.content_type, "text/plain");
    EXPECT_FALSE(f.gzip);
    EXPECT_TRUE(f.headers.empty());  // not asked for
    EXPECT_EQ(f.body, "POST\n/echo?i=" + std::to_string(i) + "\n/echo\ni=" + std::to_string(i) +
                          "\n11\nt" + std::to_string(i) + "\nb");
  }
  EXPECT_EQ(c->connects(), 1);
  EXPECT_EQ(t.server.stats().connections_accepted, 1U);
}

TEST_F(AsyncConnectionTest, ReportsGzipWithoutUndoingItAndKeepsHeadersWhenAsked) {
  const std::string body = test::LargeBody(4096, 1);  // over 1 KiB: the server gzips it
  TestServer t([&body](const HttpRequest&, HttpResponse& res) { res.body = body; });
  AsyncConnection::Options o;
  o.keep_headers = true;
  auto c = Connect(t.port, o);
  ClientRequest r = Get(t.port, "/metrics");
  r.headers = {{"Accept-Encoding", "gzip"}};
  const FetchResult f = Run(*c, r);
  ASSERT_TRUE(f.error.ok()) << f.error.ToString();
  EXPECT_TRUE(f.gzip);
  EXPECT_THAT(f.headers, ::testing::Contains(Pair("content-encoding", "gzip")));
  Result<std::string> decoded = GzipDecompress(f.body, 1 << 20);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(*decoded, body);
}

TEST_F(AsyncConnectionTest, RetriesAGetOnceOnANewConnectionButNeverAPost) {
  auto handler = [](const HttpRequest&, HttpResponse& res) { res.body = "ok"; };
  auto first = std::make_unique<TestServer>(handler);
  const std::uint16_t port = first->port;
  auto c = Connect(port);
  ASSERT_TRUE(Run(*c, Get(port, "/")).error.ok());
  first.reset();  // closes the kept-alive connection
  HttpServer second(HttpServer::Options{});
  ASSERT_TRUE(second.Listen("127.0.0.1", port, handler));
  ASSERT_TRUE(second.Start().ok());
  const FetchResult get = Run(*c, Get(port, "/"));
  ASSERT_TRUE(get.error.ok()) << get.error.ToString();
  EXPECT_EQ(get.body, "ok");
  EXPECT_EQ(c->connects(), 2);

  second.Stop();
  HttpServer third(HttpServer::Options{});
  ASSERT_TRUE(third.Listen("127.0.0.1", port, handler));
  ASSERT_TRUE(third.Start().ok());
  ClientRequest post = Get(port, "/");
  post.method = "POST";
  const FetchResult f = Run(*c, post);
  ASSERT_FALSE(f.error.ok());
  EXPECT_EQ(f.error.code(), StatusCode::kUnavailable);  // the scraper's words
  EXPECT_THAT(f.error.message(), StartsWith("POST " + test::Url(port, "/") + ": "));
  EXPECT_EQ(c->connects(), 2);
}

TEST_F(AsyncConnectionTest, TheTwoWordingsDifferOnlyWhereDocumented) {
  TestServer t([](const HttpRequest&, HttpResponse& res) { res.body = std::string(100, 'x'); });
  for (Wording w : {Wording::kScrape, Wording::kClient}) {
    const bool client = w == Wording::kClient;
    ClientRequest big = Get(t.port, "/big");
    big.body_limit = 10;
    const FetchResult over = Run(*Connect(t.port, WordedAs(w)), big);
    EXPECT_EQ(over.error.code(), StatusCode::kOutOfRange);
    EXPECT_EQ(
        over.error.message(),
        "GET " + big.url + ": " + (client ? "response body over" : "body over") + " 10 bytes");

    ClientRequest lookup;
    lookup.url = "http://no-such-host.invalid:9400/metrics";
    const FetchResult unknown =
        Run(*Connect(9400, WordedAs(w), "no-such-host.invalid"), lookup, milliseconds(3000));
    EXPECT_EQ(unknown.error.code(), StatusCode::kUnavailable);
    EXPECT_THAT(
        unknown.error.message(),
        StartsWith("GET " + lookup.url + ": " + (client ? "cannot resolve host: " : "resolve: ")));
  }
}

TEST_F(AsyncConnectionTest, TheDeadlineAndCloseCutAFetchShort) {
  TestServer t([](const HttpRequest&, HttpResponse& res) {
    std::this_thread::sleep_for(milliseconds(300));
    res.body = "late";
  });
  auto c = Connect(t.port);
  const FetchResult late = Run(*c, Get(t.port, "/slow"), milliseconds(100));
  EXPECT_TRUE(late.timed_out);
  EXPECT_EQ(late.error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(late.error.message(),
            "GET " + test::Url(t.port, "/slow") + ": timed out after 100 ms (receive)");
  EXPECT_GE(late.duration_s, 0.09);

  std::optional<FetchResult> out;
  c->Fetch(std::make_shared<const ClientRequest>(Get(t.port, "/slow")), milliseconds(5000),
           [&out](FetchResult f) { out = std::move(f); });
  boost::asio::post(ioc_, [&c] { c->Close(); });
  ioc_.restart();
  ioc_.run();
  ASSERT_TRUE(out.has_value());
  EXPECT_FALSE(out->timed_out);
  EXPECT_THAT(out->error.message(), HasSubstr(": cancelled"));
}

}  // namespace
}  // namespace gpucanary::net

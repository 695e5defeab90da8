#include "net/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "net/http_client.h"
#include "net/test_util.h"

// Protocol behaviour: what goes over the wire for each kind of request.

namespace gpucanary::net {
namespace {

using test::Body;
using test::Echo;
using test::LargeBody;
using test::RawClient;
using test::TestServer;
using test::Url;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(HttpServerTest, EachListenerAnswersWithItsOwnHandler) {
  HttpServer server(HttpServer::Options{});
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < 20; ++i) {
    auto port = server.Listen("127.0.0.1", 0, [i](const HttpRequest&, HttpResponse& res) {
      res.body = "listener " + std::to_string(i);
    });
    ASSERT_TRUE(port) << port.error().ToString();
    ports.push_back(*port);
  }
  ASSERT_TRUE(server.Start().ok());
  for (int i = 0; i < 20; ++i) {
    auto r = Fetch(Url(ports[static_cast<std::size_t>(i)], "/metrics"));
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "listener " + std::to_string(i));
  }
  EXPECT_EQ(server.stats().requests, 20U);
}

TEST(HttpServerTest, ListenAfterStartServesToo) {
  HttpServer server(HttpServer::Options{});
  ASSERT_TRUE(server.Start().ok());
  auto port = server.Listen("127.0.0.1", 0, Echo);
  ASSERT_TRUE(port);
  auto r = Fetch(Url(*port, "/late"));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_THAT(r->body, StartsWith("GET\n/late\n"));
}

TEST(HttpServerTest, HandsTheHandlerTheParsedRequest) {
  TestServer t(Echo);
  FetchOptions options;
  options.method = "PUT";
  options.body = "payload";
  options.headers = {{"X-Trace", "Abc"}};
  auto r = Fetch(Url(t.port, "/api/state?x=1&y=%20"), options);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->content_type, "text/plain");
  EXPECT_EQ(r->body, "PUT\n/api/state?x=1&y=%20\n/api/state\nx=1&y=%20\n11\nAbc\npayload");
}

TEST(HttpServerTest, LowerCasesHeaderNames) {
  Mutex mu;  // the handler runs on the server's thread
  std::vector<std::pair<std::string, std::string>> seen;
  TestServer t([&](const HttpRequest& req, HttpResponse&) {
    MutexLock lock(mu);
    seen = req.headers;
  });
  RawClient c(t.port);
  c.Send("GET / HTTP/1.1\r\nHost: x\r\nX-Mixed-Case: Value\r\n\r\n");
  ASSERT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 200 OK\r\n"));
  MutexLock lock(mu);
  EXPECT_THAT(seen,
              ::testing::Contains(std::pair<std::string, std::string>("x-mixed-case", "Value")));
  EXPECT_THAT(seen, ::testing::Contains(std::pair<std::string, std::string>("host", "x")));
}

TEST(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  TestServer t(Echo);
  RawClient c(t.port);
  ASSERT_TRUE(c.connected());
  c.Send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string first = c.ReadResponse();
  EXPECT_THAT(first, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(Body(first), StartsWith("GET\n/one\n"));
  c.Send("GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string second = c.ReadResponse();
  EXPECT_THAT(Body(second), StartsWith("GET\n/two\n"));
  EXPECT_EQ(t.server.stats().connections_accepted, 1U);
  EXPECT_EQ(t.server.stats().requests, 2U);
}

TEST(HttpServerTest, AnswersPipelinedRequestsInOrder) {
  TestServer t(Echo);
  RawClient c(t.port);
  c.Send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(Body(c.ReadResponse()), StartsWith("GET\n/a\n"));
  EXPECT_THAT(Body(c.ReadResponse()), StartsWith("GET\n/b\n"));
}

TEST(HttpServerTest, HonoursConnectionClose) {
  TestServer t(Echo);
  RawClient c(t.port);
  c.Send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string r = c.ReadResponse();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(r, HasSubstr("Connection: close\r\n"));
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServerTest, Http10ClosesUnlessAskedToKeepAlive) {
  TestServer t(Echo);
  {
    RawClient c(t.port);
    c.Send("GET /old HTTP/1.0\r\n\r\n");
    const std::string r = c.ReadResponse();
    EXPECT_THAT(r, StartsWith("HTTP/1.0 200 OK\r\n"));
    EXPECT_THAT(Body(r), StartsWith("GET\n/old\n/old\n\n10\n"));
    EXPECT_TRUE(c.WaitClosed());
  }
  RawClient c(t.port);
  c.Send("GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  const std::string r = c.ReadResponse();
  EXPECT_THAT(r, HasSubstr("Connection: keep-alive\r\n"));
  c.Send("GET /2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_THAT(Body(c.ReadResponse()), StartsWith("GET\n/2\n"));
}

TEST(HttpServerTest, GzipsLargeBodiesWhenAccepted) {
  const std::string body = LargeBody(40000, 7);
  TestServer t([&](const HttpRequest&, HttpResponse& res) {
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = body;
  });
  auto r = Fetch(Url(t.port, "/metrics"));  // "Accept-Encoding: gzip", as Prometheus
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->Header("content-encoding"), "gzip");
  EXPECT_EQ(r->Header("vary"), "Accept-Encoding");
  EXPECT_LT(std::stoul(std::string(r->Header("content-length"))), body.size() / 4);
  EXPECT_EQ(r->body, body);
  EXPECT_EQ(r->content_type, "text/plain; version=0.0.4; charset=utf-8");
}

TEST(HttpServerTest, SendsIdentityWhenGzipNotAccepted) {
  const std::string body = LargeBody(40000, 7);
  TestServer t([&](const HttpRequest&, HttpResponse& res) { res.body = body; });
  for (const char* accept : {"", "identity", "gzip;q=0"}) {
    FetchOptions options;
    options.accept_gzip = false;
    if (*accept != '\0') options.headers = {{"Accept-Encoding", accept}};
    auto r = Fetch(Url(t.port, "/metrics"), options);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->Header("content-encoding"), "") << accept;
    EXPECT_EQ(r->Header("vary"), "Accept-Encoding");  // a cache must still tell them apart
    EXPECT_EQ(r->Header("content-length"), std::to_string(body.size()));
    EXPECT_EQ(r->body, body);
    EXPECT_EQ(r->content_type, "");  // the handler set none: none sent
  }
}

TEST(HttpServerTest, DoesNotGzipSmallOrAlreadyEncodedBodies) {
  HttpServer::Options options;
  options.gzip_min_bytes = 100;
  const std::string small(99, 'a');
  const std::string large(5000, 'b');
  TestServer t(
      [&](const HttpRequest& req, HttpResponse& res) {
        if (req.path == "/small") res.body = small;
        if (req.path == "/encoded") {
          res.headers = {{"Content-Encoding", "identity"}};
          res.body = large;
        }
      },
      options);
  auto r = Fetch(Url(t.port, "/small"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->Header("content-encoding"), "");
  EXPECT_EQ(r->Header("vary"), "");
  EXPECT_EQ(r->body, small);
  r = Fetch(Url(t.port, "/encoded"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->Header("content-encoding"), "identity");
  EXPECT_EQ(r->body, large);
}

TEST(HttpServerTest, HeadSendsHeadersWithoutBody) {
  TestServer t([](const HttpRequest& req, HttpResponse& res) {
    res.content_type = "text/plain";
    res.body = req.path == "/big" ? std::string(3000, 'x') : "hello world";
  });
  RawClient c(t.port);
  c.Send("HEAD /small HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string head = c.ReadResponse(/*has_body=*/false);
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, HasSubstr("Content-Length: 11\r\n"));
  // Had a body followed the HEAD response, it would be read as the next response.
  c.Send("GET /small HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string get = c.ReadResponse();
  EXPECT_THAT(get, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_EQ(Body(get), "hello world");

  FetchOptions options;
  options.method = "HEAD";
  auto r = Fetch(Url(t.port, "/big"), options);  // gzip accepted: as GET would be
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->Header("content-encoding"), "gzip");
  EXPECT_LT(std::stoul(std::string(r->Header("content-length"))), 3000U);
  EXPECT_EQ(r->body, "");
}

TEST(HttpServerTest, BodyOverLimitGets413AndClose) {
  HttpServer::Options options;
  options.max_body_bytes = 1000;
  std::atomic<int> calls{0};
  TestServer t(
      [&](const HttpRequest& req, HttpResponse& res) {
        ++calls;
        res.body = std::to_string(req.body.size());
      },
      options);
  FetchOptions at_limit;
  at_limit.method = "POST";
  at_limit.body = std::string(1000, 'x');
  auto ok = Fetch(Url(t.port, "/"), at_limit);
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "1000");

  RawClient c(t.port);
  c.Send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'y'));
  const std::string r = c.ReadResponse();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 413 Payload Too Large\r\n"));
  EXPECT_THAT(r, HasSubstr("Connection: close\r\n"));
  EXPECT_EQ(Body(r), "request body too large\n");
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpServerTest, ChunkedBodyOverLimitGets413) {
  HttpServer::Options options;
  options.max_body_bytes = 1000;
  TestServer t(Echo, options);
  RawClient c(t.port);
  std::string chunked = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) chunked += "200\r\n" + std::string(512, 'z') + "\r\n";
  chunked += "0\r\n\r\n";
  c.Send(chunked);
  EXPECT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 413 "));
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServerTest, MalformedRequestsGet400AndClose) {
  TestServer t(Echo);
  const char* garbage[] = {
      "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n",  // a TLS hello
      "GET / HTTP/1.1\r\nHost x\r\n\r\n",                             // no colon
      "GET / HTTP/9.1\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
      "GET /\x01 HTTP/1.1\r\n\r\n",
  };
  for (const char* bytes : garbage) {
    RawClient c(t.port);
    c.Send(bytes);
    const std::string r = c.ReadResponse();
    EXPECT_THAT(r, StartsWith("HTTP/1.1 400 Bad Request\r\n")) << bytes;
    EXPECT_EQ(Body(r), "bad request\n");
    EXPECT_TRUE(c.WaitClosed());
  }
  EXPECT_EQ(t.server.stats().requests, 0U);
}

// RFC 9112 §6.1 and §6.3: chunked is the only transfer coding the server
// knows, and it must come last; a request framed any other way cannot be
// read reliably (request smuggling), so it is refused and the connection
// closed, before the handler sees it.
TEST(HttpServerTest, TransferEncodingOtherThanAFinalChunkedIsRefused) {
  std::atomic<int> calls{0};
  TestServer t([&](const HttpRequest& req, HttpResponse& res) {
    ++calls;
    res.body = "got " + req.body;
  });
  struct Case {
    std::string head;  // after the request line
    std::string status_line;
  };
  const std::string body = "5\r\nhello\r\n0\r\n\r\n";
  const Case cases[] = {
      // chunked not final (or absent): the length cannot be determined, 400
      {"Transfer-Encoding: xchunked\r\n", "400 Bad Request"},
      {"Transfer-Encoding: chunked, identity\r\n", "400 Bad Request"},
      {"Transfer-Encoding: gzip\r\n", "400 Bad Request"},
      {"Transfer-Encoding: identity\r\n", "400 Bad Request"},
      {"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", "400 Bad Request"},
      {"Transfer-Encoding: chunked, chunked\r\n", "400 Bad Request"},
      {"Transfer-Encoding:\r\n", "400 Bad Request"},
      {"Transfer-Encoding: chunked;ext=1\r\n", "400 Bad Request"},
      // both framings: 400, whichever comes first
      {"Transfer-Encoding: gzip\r\nContent-Length: 16\r\n", "400 Bad Request"},
      {"Content-Length: 16\r\nTransfer-Encoding: chunked\r\n", "400 Bad Request"},
      {"Transfer-Encoding: chunked\r\nContent-Length: 16\r\n", "400 Bad Request"},
      // a final chunked, but a coding before it that the server cannot undo: 501
      {"Transfer-Encoding: gzip, chunked\r\n", "501 Not Implemented"},
      {"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", "501 Not Implemented"},
  };
  for (const Case& c : cases) {
    RawClient client(t.port);
    client.Send("POST / HTTP/1.1\r\nHost: x\r\n" + c.head + "\r\n" + body);
    const std::string r = client.ReadResponse();
    EXPECT_THAT(r, StartsWith("HTTP/1.1 " + c.status_line + "\r\n")) << c.head;
    EXPECT_THAT(r, HasSubstr("Connection: close\r\n")) << c.head;
    EXPECT_TRUE(client.WaitClosed()) << c.head;
  }
  // HTTP/1.0 has no transfer codings (§6.1): the framing is faulty.
  RawClient old(t.port);
  old.Send("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + body);
  EXPECT_THAT(old.ReadResponse(), StartsWith("HTTP/1.0 400 Bad Request\r\n"));
  EXPECT_TRUE(old.WaitClosed());
  EXPECT_EQ(calls.load(), 0);

  // chunked, in any case, alone or repeated in empty list elements, is read.
  for (const char* te : {"chunked", "Chunked", " chunked ", ", chunked"}) {
    RawClient client(t.port);
    client.Send(std::string("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ") + te + "\r\n\r\n" +
                body);
    const std::string r = client.ReadResponse();
    EXPECT_THAT(r, StartsWith("HTTP/1.1 200 OK\r\n")) << te;
    EXPECT_EQ(Body(r), "got hello") << te;
  }
}

TEST(HttpServerTest, HugeHeaderGets431) {
  TestServer t(Echo);
  RawClient c(t.port);
  c.Send("GET / HTTP/1.1\r\nX-Big: " + std::string(70000, 'h') + "\r\n\r\n");
  EXPECT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 431 "));
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServerTest, HandlerExceptionGives500AndServingGoesOn) {
  TestServer t([](const HttpRequest& req, HttpResponse& res) {
    if (req.path == "/throw") throw std::runtime_error("boom");
    if (req.path == "/int") throw 42;
    res.body = "fine";
  });
  HttpConnection conn("127.0.0.1", t.port);
  for (const char* path : {"/throw", "/int"}) {
    auto r = conn.Request(path);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->status, 500);
    EXPECT_EQ(r->body, "internal server error\n");
  }
  auto r = conn.Request("/ok");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "fine");
  EXPECT_EQ(conn.connects(), 1);  // the connection survived too
  EXPECT_EQ(t.server.stats().handler_exceptions, 2U);
  EXPECT_EQ(t.server.stats().requests, 3U);
}

TEST(HttpServerTest, UnsendableHandlerResponsesBecome500) {
  TestServer t([](const HttpRequest& req, HttpResponse& res) {
    if (req.path == "/status") res.status = 42;
    if (req.path == "/inject") res.headers = {{"X-A", "1\r\nSet-Cookie: evil"}};
    if (req.path == "/name") res.headers = {{"Bad Name", "1"}};
    res.body = "never sent";
  });
  for (const char* path : {"/status", "/inject", "/name"}) {
    auto r = Fetch(Url(t.port, path));
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->status, 500) << path;
    EXPECT_EQ(r->Header("set-cookie"), "");
  }
}

TEST(HttpServerTest, StatusesWithoutBodyAndCustomStatuses) {
  TestServer t([](const HttpRequest& req, HttpResponse& res) {
    res.status = std::stoi(req.path.substr(1));
    res.body = "body";
    res.headers = {{"Content-Length", "999"}, {"X-Extra", "yes"}};  // Content-Length ignored
  });
  RawClient c(t.port);
  c.Send("GET /204 HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string no_content = c.ReadResponse(/*has_body=*/false);
  EXPECT_THAT(no_content, StartsWith("HTTP/1.1 204 No Content\r\n"));
  EXPECT_THAT(no_content, Not(HasSubstr("Content-Length")));
  EXPECT_THAT(no_content, HasSubstr("X-Extra: yes\r\n"));
  c.Send("GET /404 HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string not_found = c.ReadResponse();
  EXPECT_THAT(not_found, StartsWith("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_THAT(not_found, HasSubstr("Content-Length: 4\r\n"));
  EXPECT_EQ(Body(not_found), "body");
  c.Send("GET /299 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(c.ReadResponse(), StartsWith("HTTP/1.1 299 "));
}

TEST(HttpServerTest, AnswersExpect100Continue) {
  TestServer t(Echo);
  RawClient c(t.port);
  c.Send("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(c.ReadResponse(/*has_body=*/false), "HTTP/1.1 100 Continue\r\n\r\n");
  c.Send("hello");
  const std::string r = c.ReadResponse();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_EQ(Body(r), "POST\n/up\n/up\n\n11\n\nhello");
}

}  // namespace
}  // namespace gpucanary::net

// ClientRequest::on_body: a response body read as it arrives (a Kubernetes
// watch). net::HttpServer answers whole responses only, so the chunked
// streams come from a raw socket server that writes each chunk when the
// test tells it to: a piece the client reports before the next chunk is
// even sent proves it was not buffered to the end.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "net/async_connection.h"
#include "net/test_util.h"

namespace gpucanary::net {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Accepts one connection on 127.0.0.1:0 and plays a script on it: each step
// runs on the server's thread once Next() allows it. Reads time out after
// 5 s, so a test that goes wrong fails instead of hanging.
class ScriptedServer {
 public:
  using Step = std::function<void(int fd)>;

  explicit ScriptedServer(std::vector<Step> steps) : listen_fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(listen_fd_, 1), 0);
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, steps = std::move(steps)] { Serve(steps); });
  }
  ~ScriptedServer() {
    {
      MutexLock lock(mu_);
      allowed_ = 1 << 20;  // let every step run, so the thread ends
    }
    cv_.NotifyAll();
    thread_.join();
    close(listen_fd_);
  }
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  std::uint16_t port() const { return port_; }
  // Lets the next step run.
  void Next() {
    {
      MutexLock lock(mu_);
      ++allowed_;
    }
    cv_.NotifyAll();
  }
  std::string request() {
    MutexLock lock(mu_);
    return request_;
  }

  static void Send(int fd, std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  static std::string Chunk(std::string_view data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + std::string(data) + "\r\n";
  }
  // Whether the peer closed the connection (within 5 s).
  static bool PeerClosed(int fd) {
    char c;
    return recv(fd, &c, 1, 0) == 0;
  }

 private:
  void Serve(const std::vector<Step>& steps) {
    const int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    timeval tv{};
    tv.tv_sec = 5;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      head.append(buf, static_cast<std::size_t>(n));
    }
    {
      MutexLock lock(mu_);
      request_ = head;
    }
    for (std::size_t i = 0; i < steps.size(); ++i) {
      {
        MutexLock lock(mu_);
        cv_.Wait(mu_, [&]() REQUIRES(mu_) { return allowed_ > static_cast<int>(i); });
      }
      steps[i](fd);
    }
    close(fd);
  }

  const int listen_fd_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  Mutex mu_;
  CondVar cv_;
  int allowed_ GUARDED_BY(mu_) = 0;
  std::string request_ GUARDED_BY(mu_);
};

constexpr std::string_view kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

class AsyncConnectionStreamTest : public ::testing::Test {
 protected:
  struct Seen {
    std::vector<int> statuses;
    std::vector<std::string> pieces;
  };

  // Fetches `target` streaming; `on_piece` runs for each piece after it is
  // recorded and returns what on_body returns.
  FetchResult Stream(std::uint16_t port, Seen& seen,
                     const std::function<bool(const std::string&)>& on_piece,
                     milliseconds timeout = milliseconds(5000), std::size_t body_limit = 1 << 20) {
    auto c = AsyncConnection::Create(ioc_, "127.0.0.1", port, {});
    ClientRequest r;
    r.target = "/api/v1/pods?watch=true";
    r.url = test::Url(port, r.target);
    r.body_limit = body_limit;
    r.on_body = [&seen, &on_piece](int status, std::string_view piece) {
      seen.statuses.push_back(status);
      seen.pieces.emplace_back(piece);
      return on_piece(seen.pieces.back());
    };
    std::optional<FetchResult> out;
    c->Fetch(std::make_shared<const ClientRequest>(r), timeout,
             [&out](FetchResult f) { out = std::move(f); });
    ioc_.run();
    EXPECT_TRUE(out.has_value());
    return out.value_or(FetchResult{});
  }

  boost::asio::io_context ioc_;
};

TEST_F(AsyncConnectionStreamTest, HandsOverEachChunkBeforeTheNextIsSent) {
  ScriptedServer server({
      [](int fd) { ScriptedServer::Send(fd, std::string(kChunkedHead)); },
      [](int fd) { ScriptedServer::Send(fd, ScriptedServer::Chunk("{\"type\":\"ADDED\"}\n")); },
      [](int fd) { ScriptedServer::Send(fd, ScriptedServer::Chunk("{\"type\":\"DELETED\"}\n")); },
      [](int fd) { ScriptedServer::Send(fd, "0\r\n\r\n"); },
  });
  server.Next();  // the head
  Seen seen;
  // Each piece lets the server send the next chunk: were pieces held back
  // until the body ended, the server would wait and the fetch time out.
  const FetchResult f = Stream(server.port(), seen, [&](const std::string&) {
    server.Next();
    return true;
  });
  ASSERT_TRUE(f.error.ok()) << f.error.ToString();
  EXPECT_FALSE(f.timed_out);
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(f.content_type, "application/json");
  EXPECT_TRUE(f.body.empty());
  EXPECT_THAT(seen.pieces, ElementsAre("", "{\"type\":\"ADDED\"}\n", "{\"type\":\"DELETED\"}\n"));
  EXPECT_THAT(seen.statuses, ElementsAre(200, 200, 200));
  EXPECT_THAT(server.request(), HasSubstr("GET /api/v1/pods?watch=true HTTP/1.1\r\n"));
}

TEST_F(AsyncConnectionStreamTest, ReturningFalseStopsTheFetchAndClosesTheConnection) {
  std::promise<bool> closed;
  ScriptedServer server({
      [](int fd) {
        ScriptedServer::Send(fd, std::string(kChunkedHead) + ScriptedServer::Chunk("one\n"));
      },
      [&closed](int fd) { closed.set_value(ScriptedServer::PeerClosed(fd)); },
  });
  server.Next();
  Seen seen;
  const FetchResult f = Stream(server.port(), seen, [](const std::string& piece) {
    return piece.empty();  // go on after the head, stop at the first data
  });
  EXPECT_EQ(f.error.code(), StatusCode::kUnavailable);
  EXPECT_THAT(f.error.message(), HasSubstr("/api/v1/pods?watch=true: stopped by the caller"));
  EXPECT_EQ(f.status, 200);
  EXPECT_THAT(seen.pieces, ElementsAre("", "one\n"));
  server.Next();
  EXPECT_TRUE(closed.get_future().get());
}

TEST_F(AsyncConnectionStreamTest, AStreamCutBeforeItsLastChunkFailsWithTheStatusKnown) {
  ScriptedServer server({
      [](int fd) {
        ScriptedServer::Send(fd, std::string(kChunkedHead) + ScriptedServer::Chunk("part\n"));
      },
  });
  server.Next();  // the head and a chunk, then the server closes: no last chunk
  Seen seen;
  const FetchResult f = Stream(server.port(), seen, [](const std::string&) { return true; });
  EXPECT_FALSE(f.error.ok());
  EXPECT_FALSE(f.timed_out);
  EXPECT_EQ(f.status, 200);
  EXPECT_THAT(f.error.message(), HasSubstr("receive: "));
  EXPECT_THAT(seen.pieces, ElementsAre("", "part\n"));
}

TEST_F(AsyncConnectionStreamTest, TheDeadlineCoversTheWholeStream) {
  ScriptedServer server({
      [](int fd) { ScriptedServer::Send(fd, std::string(kChunkedHead)); },
      [](int) {},  // held until the test ends: the connection stays open, silent
  });
  server.Next();
  Seen seen;
  const FetchResult f = Stream(
      server.port(), seen, [](const std::string&) { return true; }, milliseconds(200));
  EXPECT_TRUE(f.timed_out);
  EXPECT_EQ(f.status, 200);
  EXPECT_THAT(f.error.message(), HasSubstr("timed out after 200 ms (receive)"));
  EXPECT_THAT(seen.pieces, ElementsAre(""));
}

TEST_F(AsyncConnectionStreamTest, ClosingFromTheCallbackCancelsTheFetch) {
  ScriptedServer server({
      [](int fd) {
        ScriptedServer::Send(fd, std::string(kChunkedHead) + ScriptedServer::Chunk("x"));
      },
  });
  server.Next();
  auto c = AsyncConnection::Create(ioc_, "127.0.0.1", server.port(), {});
  ClientRequest r;
  r.url = test::Url(server.port(), "/");
  int calls = 0;
  r.on_body = [&](int, std::string_view) {
    ++calls;
    c->Close();
    return true;
  };
  std::optional<FetchResult> out;
  c->Fetch(std::make_shared<const ClientRequest>(r), milliseconds(5000),
           [&out](FetchResult f) { out = std::move(f); });
  ioc_.run();
  ASSERT_TRUE(out.has_value());
  EXPECT_THAT(out->error.message(), HasSubstr(": cancelled"));
  EXPECT_EQ(calls, 1);  // the head; nothing read after Close
}

// A whole response from net::HttpServer streams too (Content-Length framed),
// and its declared length is still held to body_limit.
TEST_F(AsyncConnectionStreamTest, ALengthFramedBodyStreamsAndItsLengthIsLimited) {
  test::TestServer t([](const HttpRequest&, HttpResponse& res) {
    res.content_type = "text/plain";
    res.body = std::string(100, 'a');
  });
  Seen seen;
  FetchResult f = Stream(t.port, seen, [](const std::string&) { return true; });
  ASSERT_TRUE(f.error.ok()) << f.error.ToString();
  std::string all;
  for (const std::string& p : seen.pieces) all += p;
  EXPECT_EQ(all, std::string(100, 'a'));
  EXPECT_EQ(seen.pieces.front(), "");

  ioc_.restart();
  Seen limited;
  f = Stream(
      t.port, limited, [](const std::string&) { return true; }, milliseconds(5000), 99);
  EXPECT_EQ(f.error.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(limited.pieces.empty());
}

}  // namespace
}  // namespace gpucanary::net

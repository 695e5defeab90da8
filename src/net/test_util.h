#pragma once
// Test helpers for the net tests: a raw TCP client that sends exact bytes,
// a one-listener test server, and handlers. Test code only.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "net/http_server.h"

namespace gpucanary::net::test {

// A plain blocking TCP client, to send exactly the bytes a test needs. Every
// read gives up after 5 s, so a server that fails to answer or to close
// fails the test instead of hanging it.
class RawClient {
 public:
  // `source`: the local IPv4 address to connect from ("127.0.0.2": Linux
  // routes all of 127/8 to the loopback, so a test can be a second client).
  explicit RawClient(std::uint16_t port, const char* source = nullptr)
      : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    timeval tv{};
    tv.tv_sec = 5;
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (source != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      inet_pton(AF_INET, source, &local.sin_addr);
      if (bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) return;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }

  void Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  // One response: the head up to the blank line, then Content-Length bytes
  // of body unless `has_body` is false (HEAD, 100 Continue). "" when the
  // connection ends or stalls first.
  std::string ReadResponse(bool has_body = true) {
    std::size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return "";
    }
    std::size_t total = end + 4;
    if (has_body) {
      std::string head = pending_.substr(0, end);
      for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const std::size_t cl = head.find("\r\ncontent-length:");
      if (cl != std::string::npos) total += std::stoul(head.substr(cl + 17));
    }
    while (pending_.size() < total) {
      if (!Fill()) return "";
    }
    std::string response = pending_.substr(0, total);
    pending_.erase(0, total);
    return response;
  }

  // Whether the server closes the connection (end of stream or reset) with
  // no further bytes, within the 5 s read limit.
  bool WaitClosed() {
    char c;
    const ssize_t n = recv(fd_, &c, 1, 0);
    return pending_.empty() && (n == 0 || (n < 0 && errno == ECONNRESET));
  }

 private:
  bool Fill() {
    char buf[16384];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  int fd_;
  bool connected_ = false;
  std::string pending_;
};

inline std::string Body(const std::string& response) {
  const std::size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

inline std::string Url(std::uint16_t port, const std::string& target) {
  return "http://127.0.0.1:" + std::to_string(port) + target;
}

// Echoes what the server parsed, one field per line.
inline void Echo(const HttpRequest& req, HttpResponse& res) {
  res.content_type = "text/plain";
  res.body = req.method + "\n" + req.target + "\n" + req.path + "\n" + req.query + "\n" +
             std::to_string(req.version) + "\n" + std::string(req.Header("x-trace")) + "\n" +
             req.body;
}

// A text body of about `bytes`, like a metrics scrape.
inline std::string LargeBody(std::size_t bytes, int seed) {
  std::string out;
  for (int i = 0; out.size() < bytes; ++i) {
    out += "DCGM_FI_DEV_SM_CLOCK{gpu=\"" + std::to_string(i % 8) + "\",node=\"" +
           std::to_string(seed) + "\"} " + std::to_string(1980 - i % 7) + "\n";
  }
  return out;
}

// A started server with one listener on 127.0.0.1:0.
struct TestServer {
  explicit TestServer(Handler handler, HttpServer::Options options = {}) : server(options) {
    auto p = server.Listen("127.0.0.1", 0, std::move(handler));
    EXPECT_TRUE(p) << p.error().ToString();
    port = p.value_or(0);
    EXPECT_TRUE(server.Start().ok());
  }
  HttpServer server;
  std::uint16_t port = 0;
};

}  // namespace gpucanary::net::test

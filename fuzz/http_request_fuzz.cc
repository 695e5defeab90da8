// Fuzz target for the HTTP server's request path (net/http_server.h): any
// bytes, sent on one connection to a real HttpServer on loopback (the parser,
// the framing checks of RFC 9112 §6, pipelining, 100-continue, limits, the
// handler pool), are answered with well-formed responses or a close: never a
// crash, a hang, a sanitizer error, a 500 (the handler never throws, so a 500
// would be the server's own failure), a status outside 100..599, or a
// response that does not start with a status line. After each input the
// server must still answer a plain request (it survived).
//
// One server for the whole run (started on first use). The first input byte
// picks how the rest is sent: whole, or in pieces of 1 to 16 bytes, so that
// requests split at every place a TCP read may split them are exercised.

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "net/http_message.h"
#include "net/http_server.h"

namespace {

using gpucanary::net::HttpRequest;
using gpucanary::net::HttpResponse;
using gpucanary::net::HttpServer;

std::uint16_t ServerPort() {
  static const std::uint16_t port = [] {
    HttpServer::Options o;
    o.threads = 1;
    o.handler_threads = 2;
    o.max_body_bytes = 64 << 10;
    o.read_timeout_s = 2;
    o.write_timeout_s = 2;
    o.idle_timeout_s = 2;
    static HttpServer server(o);  // lives for the process; stopped at exit
    auto bound = server.Listen(
        "127.0.0.1", 0,
        [](const HttpRequest& request, HttpResponse& response) {
          // What a handler may rely on: a body within the limit.
          if (request.body.size() > (64u << 10)) std::abort();
          response.status = request.path == "/missing" ? 404 : 200;
          response.content_type = "text/plain";
          response.body = request.method + " " + request.path + " " +
                          std::to_string(request.body.size()) + "\n";
        },
        [](const HttpRequest& request, HttpResponse& response) {
          if (request.path != "/-/healthy") return false;
          response.body = "ok\n";
          return true;
        });
    if (!bound || !server.Start().ok()) std::abort();
    return *bound;
  }();
  return port;
}

int Connect() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) std::abort();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(ServerPort());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) std::abort();
  return fd;
}

// Everything the server sends until it closes; aborts when it neither sends
// nor closes for 10 s (a hang: every server timeout is 2 s here).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10'000) <= 0) std::abort();
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;  // closed (or reset)
    out.append(buf, static_cast<std::size_t>(n));
  }
}

void SendAll(int fd, std::string_view bytes, std::size_t piece) {
  while (!bytes.empty()) {
    const std::size_t n = std::min(piece, bytes.size());
    const ssize_t sent = ::send(fd, bytes.data(), n, MSG_NOSIGNAL);
    if (sent <= 0) return;  // the server closed early (a refused request)
    bytes.remove_prefix(static_cast<std::size_t>(sent));
  }
}

// Every response in `stream` starts with a status line of a status the
// server may send; bodies are skipped by Content-Length (the server never
// sends chunked).
void CheckResponses(std::string_view stream) {
  while (!stream.empty()) {
    if (stream.substr(0, 9) != "HTTP/1.1 " && stream.substr(0, 9) != "HTTP/1.0 ") std::abort();
    if (stream.size() < 12) std::abort();
    const int status = std::atoi(std::string(stream.substr(9, 3)).c_str());
    if (status < 100 || status > 599 || status == 500) std::abort();
    const std::size_t end = stream.find("\r\n\r\n");
    if (end == std::string_view::npos) std::abort();
    const std::string_view head = stream.substr(0, end);
    std::size_t length = 0;
    for (std::string_view name : {"\r\nContent-Length: ", "\r\ncontent-length: "}) {
      if (const std::size_t at = head.find(name); at != std::string_view::npos) {
        length = std::strtoul(std::string(head.substr(at + name.size())).c_str(), nullptr, 10);
      }
    }
    stream.remove_prefix(end + 4);
    if (status == 100) continue;  // 100 Continue carries no body
    // A HEAD response announces a body it does not send: what follows is the
    // next response (no body of this server starts with "HTTP/1.": the
    // handler's start with a method token, the server's with words).
    if (stream.empty() || stream.substr(0, 7) == "HTTP/1.") continue;
    if (length > stream.size()) std::abort();  // a body cut short
    stream.remove_prefix(length);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = data[0] < 128 ? size : 1 + data[0] % 16;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int fd = Connect();
  SendAll(fd, bytes, piece);
  ::shutdown(fd, SHUT_WR);
  CheckResponses(ReadAll(fd));
  ::close(fd);
  // Still serving.
  const int probe = Connect();
  SendAll(probe, "GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1 << 20);
  const std::string answer = ReadAll(probe);
  ::close(probe);
  if (answer.rfind("HTTP/1.1 200 ", 0) != 0) std::abort();
  return 0;
}

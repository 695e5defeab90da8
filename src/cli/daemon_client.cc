#include "cli/daemon_client.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <ostream>

namespace gpucanary::cli {
namespace {

constexpr int kTimeoutMs = 10'000;

}  // namespace

void AddServerFlags(CLI::App* cmd, ServerFlags& server, bool required) {
  CLI::Option* url =
      cmd->add_option("--url", server.url, "The daemon: http://host:port or https://host:port");
  if (required) url->required();
  cmd->add_option("--token", server.token,
                  "Bearer token (default: the environment variable GPUCANARY_TOKEN)");
  cmd->add_option("--ca-file", server.ca_file,
                  "PEM CA(s) an https:// daemon's certificate must chain to (default: the "
                  "system's, /etc/ssl/certs)");
}

std::string Endpoint(const ServerFlags& server, std::string_view path) {
  std::string url = server.url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url + std::string(path);
}

net::FetchOptions Request(const ServerFlags& server, const std::string& method) {
  net::FetchOptions o;
  o.method = method;
  o.timeout_ms = kTimeoutMs;
  std::string token = server.token;
  if (token.empty()) {
    // The CLI reads its environment on the main thread before any other starts.
    const char* env = std::getenv("GPUCANARY_TOKEN");  // NOLINT(concurrency-mt-unsafe)
    if (env != nullptr) token = env;
  }
  if (!token.empty()) o.headers.emplace_back("Authorization", "Bearer " + token);
  o.tls.ca_file = server.ca_file;
  return o;
}

bool Retryable(const Result<net::HttpResponse>& response) {
  if (!response) return true;
  const int status = response->status;
  return status == 408 || status == 429 || status >= 500;
}

int Answer(const Result<net::HttpResponse>& response, std::string_view command, CommandContext& ctx,
           const std::function<void(const std::string&)>& on_success) {
  if (!response) {
    ctx.err << "gpucanary " << command << ": " << response.error().message() << "\n";
    return kExitFail;
  }
  if (response->status < 200 || response->status >= 300) {
    ctx.err << "gpucanary " << command << ": HTTP " << response->status << ": " << response->body;
    if (response->body.empty() || response->body.back() != '\n') ctx.err << "\n";
    return kExitFail;
  }
  on_success(response->body);
  return kExitOk;
}

}  // namespace gpucanary::cli

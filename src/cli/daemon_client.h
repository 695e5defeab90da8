#pragma once
// Talking to a running `gpucanary serve` from the CLI (`release`,
// `correlate --url`): the --url/--token flags, the request options (bearer
// token from --token or GPUCANARY_TOKEN, a timeout), which answers are worth
// a retry, and printing the daemon's answer with the CLI's exit codes.

#include <functional>
#include <string>
#include <string_view>

#include "cli/command.h"
#include "core/status.h"
#include "net/http_client.h"

namespace CLI {
class App;
}

namespace gpucanary::cli {

struct ServerFlags {
  std::string url;
  std::string token;
  std::string ca_file;  // an https:// daemon's CA (default: the system's)
};

// --url (required when `required`), --token and --ca-file.
void AddServerFlags(CLI::App* cmd, ServerFlags& server, bool required = true);

// `path` appended to the daemon's base URL (trailing slashes dropped).
std::string Endpoint(const ServerFlags& server, std::string_view path);

// A request with a 10 s timeout, the bearer token, if any, and the CA to
// check an https:// daemon against.
net::FetchOptions Request(const ServerFlags& server, const std::string& method);

// No answer, 408, 429 or 5xx: the daemon may be restarting.
bool Retryable(const Result<net::HttpResponse>& response);

// Prints the daemon's answer: `on_success` with the body on 2xx (exit 0),
// "gpucanary COMMAND: HTTP 4xx: body" on stderr otherwise (exit 1).
int Answer(const Result<net::HttpResponse>& response, std::string_view command, CommandContext& ctx,
           const std::function<void(const std::string&)>& on_success);

}  // namespace gpucanary::cli

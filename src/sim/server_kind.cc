#include "sim/server_kind.h"

namespace gpucanary::sim {

std::string_view ServerKindName(const ServerKind& kind) {
  return kind ? vocab::Name(*kind) : "none";
}

std::optional<ServerKind> ParseServerKind(std::string_view name) {
  if (name == "none") return ServerKind();
  if (std::optional<vocab::Server> server = vocab::Parse<vocab::Server>(name)) {
    return ServerKind(*server);
  }
  return std::nullopt;
}

std::uint16_t DefaultMetricsPort(vocab::Server server) {
  switch (server) {
    case vocab::Server::kVllm:
    case vocab::Server::kVllmLegacy:
      return 8000;
    case vocab::Server::kSglang:
      return 30000;
    case vocab::Server::kTgi:
      return 80;
    case vocab::Server::kTritonTrtllm:
      return 8002;
  }
  return 0;
}

std::string_view ServerJob(vocab::Server server) {
  return server == vocab::Server::kVllmLegacy ? "vllm" : vocab::Name(server);
}

}  // namespace gpucanary::sim

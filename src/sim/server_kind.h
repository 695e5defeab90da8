#pragma once
// The model server a simulated node runs: a fleet entry's `server:` in a
// scenario (docs/simulator.md, "What the servers expose"). One of the
// vocabulary's servers (vocab::Server: vllm, vllm_legacy, sglang, tgi,
// triton_trtllm), or `none`: a DCGM-only node, which still runs its workload
// (its ServingNode serves requests and loads its GPUs exactly as any other)
// but exposes and records no service metrics.
//
//   ParseServerKind("tgi")   // ServerKind(vocab::Server::kTgi)
//   ParseServerKind("none")  // ServerKind(std::nullopt): a node without a server endpoint
//   ParseServerKind("trt")   // std::nullopt: unknown
//
// Thread-safe: pure functions.

#include <cstdint>
#include <optional>
#include <string_view>

#include "vocab/service_measures.h"

namespace gpucanary::sim {

// The server a node exposes; std::nullopt is `none`.
using ServerKind = std::optional<vocab::Server>;

// The names `server:` takes, for error messages.
inline constexpr std::string_view kServerKindNames =
    "vllm, vllm_legacy, sglang, tgi, triton_trtllm, none";

// "vllm", "vllm_legacy", "sglang", "tgi", "triton_trtllm" (vocab::Name), or "none".
std::string_view ServerKindName(const ServerKind& kind);
// The kind a name says; std::nullopt (no value at all) for an unknown name.
std::optional<ServerKind> ParseServerKind(std::string_view name);

// The port the real server serves its /metrics on by default, which a static
// scrape target names (`instance="<node>:<port>"`): vLLM 8000 (`vllm serve
// --port`), SGLang 30000 (`--port`), TGI 80 (the official image's PORT; the
// launcher's own default is 3000), Triton 8002 (`--metrics-port`).
std::uint16_t DefaultMetricsPort(vocab::Server server);

// The scrape job a recording gives the server's series: its vocabulary name
// ("vllm" for both vLLM versions, as the vLLM series have always been).
std::string_view ServerJob(vocab::Server server);

}  // namespace gpucanary::sim

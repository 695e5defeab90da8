#pragma once
// Offline generation: runs a fleet on simulated time as fast as the CPU allows
// and writes what a 1 s scraper would have recorded, as a recorded telemetry
// file (docs/contracts.md §4) in dcgm-exporter's vocabulary.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "recording/recording_writer.h"
#include "sim/engine.h"
#include "sim/fleet.h"

namespace gpucanary::sim {

struct OfflineOptions {
  double duration_s = 3600;
  double scrape_interval_s = 1;  // a multiple of GpuModel::kStepSeconds
  std::int64_t start_ms = 1764680000000;
};

struct OfflineStats {
  std::uint64_t steps = 0;
  std::uint64_t scrapes = 0;
  std::uint64_t samples = 0;
};

// Steps `fleet` (from its current time, set to options.start_ms) for
// options.duration_s, scraping every GPU every scrape interval into `writer`
// (families declared with dcgm-exporter's names, help and types; blank fields
// write no sample). Does not Close() the writer. Errors: the writer's.
Result<OfflineStats> WriteRecording(Fleet& fleet, const Fleet::Driver& driver,
                                    const OfflineOptions& options,
                                    recording::RecordingWriter& writer);

// Runs a scenario: steps `engine` for options.duration_s from its current
// time (options.start_ms is ignored: the engine's own start holds) and
// records, every scrape interval, what a 1 s scraper of every node would have
// stored: each node's dcgm-exporter fields (GPUs lost off the bus vanish) and
// its model server's metrics as that server exposes them (vLLM, SGLang, TGI,
// Triton; nothing for a `none` node; absent while the server restarts;
// counters restart from 0 after a deploy), each with the server's own labels
// plus job = the server (vllm, sglang, tgi, triton_trtllm) and instance =
// "<node>:<the server's default port>" (8000, 30000, 80, 8002).
Result<OfflineStats> WriteScenarioRecording(Engine& engine, const OfflineOptions& options,
                                            recording::RecordingWriter& writer);

// The same, each node into its own writer (writer_per_node[i] for node i, in
// file order; several nodes may share one), e.g. the canary nodes into one
// recording and the rest into another, as `gpucanary judge` takes them.
// Each distinct writer gets every family declared. Errors: kInvalidArgument
// when the span's size is not the node count; the writers' own.
Result<OfflineStats> WriteScenarioRecording(
    Engine& engine, const OfflineOptions& options,
    std::span<recording::RecordingWriter* const> writer_per_node);

// What RunScenarioOffline wrote (paths as DIR + "/" + name).
struct OfflineRun {
  std::vector<std::string> telemetry;  // the recordings, in the order opened
  std::string canary;                  // DIR/canary.om[.gz]; empty without canary nodes
  std::string baseline;                // DIR/baseline.om[.gz]; empty without canary nodes
  std::string truth;                   // DIR/truth.jsonl
  std::string releases;                // DIR/releases.jsonl
  OfflineStats stats;
};

// The whole offline run of `gpucanary sim --offline DIR` (docs/simulator.md):
// creates DIR, records the scenario with WriteScenarioRecording into
// DIR/telemetry.om, or, when `canary_nodes` is not empty, the canary nodes
// into DIR/canary.om and the others into DIR/baseline.om (".om.gz" with
// `gzip`), closes them, then writes DIR/truth.jsonl and DIR/releases.jsonl.
// Errors: kInvalidArgument naming an unknown canary node (before any file is
// written); kIoError for a directory or file that cannot be written.
Result<OfflineRun> RunScenarioOffline(Engine& engine, const OfflineOptions& options,
                                      const std::string& dir,
                                      std::span<const std::string> canary_nodes, bool gzip);

}  // namespace gpucanary::sim

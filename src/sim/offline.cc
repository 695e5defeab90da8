#include "sim/offline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "dcgm/exposition.h"
#include "sim/server_kind.h"
#include "sim/service_exposition.h"
#include "sim/sglang_render.h"
#include "sim/tgi_render.h"
#include "sim/triton_render.h"
#include "sim/vllm_render.h"

namespace gpucanary::sim {
namespace {

// The label values of one GPU, owned, so the writer's label views stay valid.
struct GpuLabels {
  std::string gpu;
  std::string device;
  const dcgm::GpuIdentity* id;
  std::array<model::LabelView, 7> labels;
};

Status DeclareDcgmFamilies(recording::RecordingWriter& writer) {
  for (std::size_t f = 0; f < dcgm::kExporterFieldCount; ++f) {
    const dcgm::DcgmFamilyInfo& info = dcgm::DcgmFamily(static_cast<dcgm::ExporterField>(f));
    GC_RETURN_IF_ERROR(writer.DeclareFamily(
        info.name, info.type == "counter" ? model::MetricType::kCounter : model::MetricType::kGauge,
        info.help));
  }
  return Status::Ok();
}

std::vector<GpuLabels> MakeGpuLabels(const Fleet& fleet) {
  std::vector<GpuLabels> labels;
  labels.reserve(fleet.gpu_count());
  for (const SimNode& node : fleet.nodes()) {
    for (const SimGpu& g : node.gpus) {
      labels.push_back(
          GpuLabels{std::to_string(g.id.index), "nvidia" + std::to_string(g.id.index), &g.id, {}});
    }
  }
  for (GpuLabels& l : labels) {  // views into strings that no longer move
    l.labels = {model::LabelView{"gpu", l.gpu},
                model::LabelView{"UUID", l.id->uuid},
                model::LabelView{"pci_bus_id", l.id->pci_bus_id},
                model::LabelView{"device", l.device},
                model::LabelView{"modelName", l.id->model_name},
                model::LabelView{"Hostname", l.id->hostname},
                model::LabelView{"DCGM_FI_DRIVER_VERSION", l.id->driver_version}};
  }
  return labels;
}

// Appends the fields of one GPU's readings; returns the samples written.
Result<std::uint64_t> AppendGpu(const dcgm::Readings& r, const GpuLabels& l, std::int64_t now_ms,
                                recording::RecordingWriter& writer) {
  std::uint64_t samples = 0;
  for (std::size_t f = 0; f < dcgm::kExporterFieldCount; ++f) {
    const std::optional<double>& v = r.values[f];
    if (!v) continue;
    const dcgm::DcgmFamilyInfo& info = dcgm::DcgmFamily(static_cast<dcgm::ExporterField>(f));
    const double value = dcgm::DcgmExporterValue(info, *v);
    GC_RETURN_IF_ERROR(writer.Append(info.name, l.labels, value, now_ms));
    ++samples;
  }
  return samples;
}

model::MetricType VllmKind(std::string_view type) {
  if (type == "counter") return model::MetricType::kCounter;
  if (type == "histogram") return model::MetricType::kHistogram;
  return model::MetricType::kGauge;
}

template <std::size_t N>
Result<std::uint64_t> AppendHistogram(std::string_view family, const VllmHistogram<N>& h,
                                      std::span<const model::LabelView> base, std::int64_t now_ms,
                                      recording::RecordingWriter& writer) {
  const std::string name(family);
  const std::string bucket = name + "_bucket";
  std::array<model::LabelView, 5> labels{};
  std::copy(base.begin(), base.end(), labels.begin());
  Status status;
  ForEachBucket(h, AppendPythonFloat, [&](std::string_view le, std::uint64_t cumulative) {
    if (!status.ok()) return;
    labels[base.size()] = {"le", le};
    status =
        writer.Append(bucket, std::span<const model::LabelView>(labels.data(), base.size() + 1),
                      static_cast<double>(cumulative), now_ms);
  });
  GC_RETURN_IF_ERROR(status);
  GC_RETURN_IF_ERROR(writer.Append(name + "_count", base, static_cast<double>(h.count), now_ms));
  GC_RETURN_IF_ERROR(writer.Append(name + "_sum", base, h.sum, now_ms));
  return N + 3;
}

// A vLLM series as a scraper records it: the server's own labels plus the
// target's job and instance (`<node>:8000`, the host as a static target
// names it; the judge reads a node from an instance when the series has no
// host label). Legacy vLLM has no engine label.
Result<std::uint64_t> AppendVllm(const VllmState& s, std::int64_t now_ms,
                                 recording::RecordingWriter& writer) {
  const std::string instance = s.hostname + ":8000";
  const bool current = s.version == VllmVersion::kCurrent;
  const model::LabelView labels[] = {{"model_name", s.model_name},
                                     {"engine", "0"},
                                     {"job", "vllm"},
                                     {"instance", instance},
                                     {"finished_reason", "stop"}};
  std::array<model::LabelView, 4> base_storage;
  std::size_t n_base = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    if (i == 1 && !current) continue;
    base_storage[n_base++] = labels[i];
  }
  const std::span<const model::LabelView> base(base_storage.data(), n_base);
  const std::array<VllmFamilyInfo, 9>& families = VllmFamilies(s.version);
  const double values[] = {s.num_requests_running, s.num_requests_waiting, s.gpu_cache_usage_perc,
                           s.prompt_tokens_total, s.generation_tokens_total};
  for (std::size_t i = 0; i < std::size(values); ++i) {
    GC_RETURN_IF_ERROR(writer.Append(families[i].name, base, values[i], now_ms));
  }
  std::array<model::LabelView, 5> success{};
  std::copy(base.begin(), base.end(), success.begin());
  success[n_base] = labels[4];
  GC_RETURN_IF_ERROR(writer.Append(families[5].name,
                                   std::span<const model::LabelView>(success.data(), n_base + 1),
                                   s.request_success_total, now_ms));
  std::uint64_t samples = std::size(values) + 1;
  Result<std::uint64_t> n = AppendHistogram(std::string(families[kTtftFamily].name),
                                            s.time_to_first_token_seconds, base, now_ms, writer);
  if (!n) return Error(n.error());
  samples += *n;
  n = AppendHistogram(std::string(families[kTpotFamily].name), s.time_per_output_token_seconds,
                      base, now_ms, writer);
  if (!n) return Error(n.error());
  samples += *n;
  n = AppendHistogram(std::string(families[kE2eFamily].name), s.e2e_request_latency_seconds, base,
                      now_ms, writer);
  if (!n) return Error(n.error());
  return samples + *n;
}

// The families of one server, for DeclareFamily.
std::span<const ServiceFamily> Families(vocab::Server server) {
  switch (server) {
    case vocab::Server::kSglang:
      return kSglangFamilies;
    case vocab::Server::kTgi:
      return kTgiFamilies;
    case vocab::Server::kTritonTrtllm:
      return kTritonFamilies;
    case vocab::Server::kVllm:
    case vocab::Server::kVllmLegacy:
      break;
  }
  return {};
}

Status DeclareServerFamilies(vocab::Server server, recording::RecordingWriter& writer) {
  if (server == vocab::Server::kVllm || server == vocab::Server::kVllmLegacy) {
    const VllmVersion version =
        server == vocab::Server::kVllmLegacy ? VllmVersion::kLegacy : VllmVersion::kCurrent;
    for (const VllmFamilyInfo& f : VllmFamilies(version)) {
      GC_RETURN_IF_ERROR(writer.DeclareFamily(f.name, VllmKind(f.type), f.help));
    }
    return Status::Ok();
  }
  for (const ServiceFamily& f : Families(server)) {
    GC_RETURN_IF_ERROR(writer.DeclareFamily(f.name, VllmKind(f.type), f.help));
  }
  return Status::Ok();
}

// A server's exposition as a scraper records it: each sample with the
// server's own labels, then the target's job and instance
// (`<node>:<the server's default port>`), then a bucket's `le`, as vLLM's
// series are written above.
class RecordingSink final : public ExpositionSink {
 public:
  RecordingSink(vocab::Server server, const std::string& hostname, std::int64_t now_ms,
                recording::RecordingWriter& writer)
      : job_(ServerJob(server)),
        instance_(hostname + ":" + std::to_string(DefaultMetricsPort(server))),
        now_ms_(now_ms),
        writer_(writer) {}

  void Family(const ServiceFamily& family) override { family_ = family.name; }

  void Sample(std::string_view suffix, std::span<const model::LabelView> labels,
              double value) override {
    if (!status_.ok()) return;
    name_.assign(family_);
    name_ += suffix;
    std::array<model::LabelView, 8> out{};
    std::size_t n = 0;
    const model::LabelView* le = nullptr;
    for (const model::LabelView& l : labels) {
      if (l.name == "le") {
        le = &l;
      } else if (n < out.size() - 3) {
        out[n++] = l;
      }
    }
    out[n++] = {"job", job_};
    out[n++] = {"instance", instance_};
    if (le != nullptr) out[n++] = *le;
    status_ =
        writer_.Append(name_, std::span<const model::LabelView>(out.data(), n), value, now_ms_);
    if (status_.ok()) ++samples_;
  }

  const Status& status() const { return status_; }
  std::uint64_t samples() const { return samples_; }

 private:
  std::string_view job_;
  std::string instance_;
  std::int64_t now_ms_;
  recording::RecordingWriter& writer_;
  std::string_view family_;
  std::string name_;
  Status status_ = Status::Ok();
  std::uint64_t samples_ = 0;
};

// Appends what the server of `node` exposes now; vLLM as AppendVllm writes it.
Result<std::uint64_t> AppendServer(const ServingNode& node, std::int64_t now_ms,
                                   recording::RecordingWriter& writer) {
  if (!node.server()) return std::uint64_t{0};
  const vocab::Server server = *node.server();
  if (server == vocab::Server::kVllm || server == vocab::Server::kVllmLegacy) {
    return AppendVllm(node.state(), now_ms, writer);
  }
  RecordingSink sink(server, node.state().hostname, now_ms, writer);
  switch (server) {
    case vocab::Server::kVllm:
    case vocab::Server::kVllmLegacy:
      break;
    case vocab::Server::kSglang:
      VisitSglang(node.sglang(), sink);
      break;
    case vocab::Server::kTgi:
      VisitTgi(node.tgi(), sink);
      break;
    case vocab::Server::kTritonTrtllm:
      VisitTriton(node.triton(), sink);
      break;
  }
  if (!sink.status().ok()) return Error(sink.status());
  return sink.samples();
}

}  // namespace

Result<OfflineStats> WriteRecording(Fleet& fleet, const Fleet::Driver& driver,
                                    const OfflineOptions& options,
                                    recording::RecordingWriter& writer) {
  GC_RETURN_IF_ERROR(DeclareDcgmFamilies(writer));
  std::vector<GpuLabels> labels = MakeGpuLabels(fleet);

  const auto steps_per_scrape =
      static_cast<std::uint64_t>(std::llround(options.scrape_interval_s / GpuModel::kStepSeconds));
  const auto total_steps =
      static_cast<std::uint64_t>(std::llround(options.duration_s / GpuModel::kStepSeconds));
  if (steps_per_scrape == 0) {
    return Error(StatusCode::kInvalidArgument, "scrape interval below the model step (100 ms)");
  }
  fleet.set_now_ms(options.start_ms);
  OfflineStats stats;
  for (std::uint64_t step = 1; step <= total_steps; ++step) {
    fleet.Step(driver);
    ++stats.steps;
    if (step % steps_per_scrape != 0) continue;
    ++stats.scrapes;
    std::size_t k = 0;
    for (const SimNode& node : fleet.nodes()) {
      for (const SimGpu& g : node.gpus) {
        Result<std::uint64_t> n = AppendGpu(g.model.Read(), labels[k++], fleet.now_ms(), writer);
        if (!n) return Error(n.error());
        stats.samples += *n;
      }
    }
  }
  return stats;
}

Result<OfflineStats> WriteScenarioRecording(Engine& engine, const OfflineOptions& options,
                                            recording::RecordingWriter& writer) {
  const std::vector<recording::RecordingWriter*> writers(engine.node_count(), &writer);
  return WriteScenarioRecording(engine, options, writers);
}

Result<OfflineStats> WriteScenarioRecording(
    Engine& engine, const OfflineOptions& options,
    std::span<recording::RecordingWriter* const> writer_per_node) {
  if (writer_per_node.size() != engine.node_count()) {
    return Error(StatusCode::kInvalidArgument, "one writer per node is needed");
  }
  std::vector<recording::RecordingWriter*> distinct;
  for (recording::RecordingWriter* w : writer_per_node) {
    if (std::find(distinct.begin(), distinct.end(), w) != distinct.end()) continue;
    distinct.push_back(w);
    GC_RETURN_IF_ERROR(DeclareDcgmFamilies(*w));
    for (const vocab::Server server : engine.servers()) {
      GC_RETURN_IF_ERROR(DeclareServerFamilies(server, *w));
    }
  }
  std::vector<GpuLabels> labels = MakeGpuLabels(engine.fleet());
  for (std::size_t i = 0, k = 0; i < engine.node_count(); ++i) {
    for (std::size_t g = 0; g < engine.fleet().nodes()[i].gpus.size(); ++g, ++k) {
      if (!engine.lowercase_hostname(i)) continue;
      for (model::LabelView& l : labels[k].labels) {
        if (l.name == "Hostname") l.name = "hostname";  // dcgm-exporter 4.8.2 on
      }
    }
  }
  const auto steps_per_scrape =
      static_cast<std::uint64_t>(std::llround(options.scrape_interval_s / Engine::kStepSeconds));
  const auto total_steps =
      static_cast<std::uint64_t>(std::llround(options.duration_s / Engine::kStepSeconds));
  if (steps_per_scrape == 0) {
    return Error(StatusCode::kInvalidArgument, "scrape interval below the model step (100 ms)");
  }
  OfflineStats stats;
  for (std::uint64_t step = 1; step <= total_steps; ++step) {
    engine.Step();
    ++stats.steps;
    if (step % steps_per_scrape != 0) continue;
    ++stats.scrapes;
    const std::int64_t now = engine.now_ms();
    std::size_t k = 0;
    for (std::size_t i = 0; i < engine.node_count(); ++i) {
      recording::RecordingWriter& writer = *writer_per_node[i];
      const SimNode& node = engine.fleet().nodes()[i];
      for (std::size_t g = 0; g < node.gpus.size(); ++g, ++k) {
        if (!engine.GpuReported(i, g)) continue;
        Result<std::uint64_t> n = AppendGpu(node.gpus[g].model.Read(), labels[k], now, writer);
        if (!n) return Error(n.error());
        stats.samples += *n;
      }
      const ServingNode* server = engine.server(i);
      if (server == nullptr) continue;
      Result<std::uint64_t> n = AppendServer(*server, now, writer);
      if (!n) return Error(n.error());
      stats.samples += *n;
    }
  }
  return stats;
}

Result<OfflineRun> RunScenarioOffline(Engine& engine, const OfflineOptions& options,
                                      const std::string& dir,
                                      std::span<const std::string> canary_nodes, bool gzip) {
  for (const std::string& host : canary_nodes) {
    if (!engine.FindNode(host)) {
      return Error(StatusCode::kInvalidArgument, "unknown canary node '" + host + "'");
    }
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Error(StatusCode::kIoError, "cannot create '" + dir + "': " + error.message());
  const std::string prefix = dir + "/";
  const std::string ext = gzip ? ".om.gz" : ".om";
  OfflineRun run;
  // One recording for the fleet, or one for the canary nodes and one for the
  // rest (the baseline), as `gpucanary judge` takes them.
  std::vector<std::unique_ptr<recording::RecordingWriter>> writers;
  const auto open = [&](const std::string& name) -> Result<recording::RecordingWriter*> {
    const std::string path = prefix + name + ext;
    auto w = recording::RecordingWriter::Open(path);
    if (!w) return Error(w.error());
    writers.push_back(std::move(*w));
    run.telemetry.push_back(path);
    return writers.back().get();
  };
  std::vector<recording::RecordingWriter*> per_node(engine.node_count());
  if (canary_nodes.empty()) {
    Result<recording::RecordingWriter*> all = open("telemetry");
    if (!all) return Error(all.error());
    std::fill(per_node.begin(), per_node.end(), *all);
  } else {
    Result<recording::RecordingWriter*> canary = open("canary");
    if (!canary) return Error(canary.error());
    Result<recording::RecordingWriter*> baseline = open("baseline");
    if (!baseline) return Error(baseline.error());
    run.canary = run.telemetry[0];
    run.baseline = run.telemetry[1];
    std::fill(per_node.begin(), per_node.end(), *baseline);
    for (const std::string& host : canary_nodes) per_node[*engine.FindNode(host)] = *canary;
  }
  Result<OfflineStats> stats = WriteScenarioRecording(engine, options, per_node);
  if (!stats) return Error(stats.error());
  run.stats = *stats;
  for (auto& w : writers) GC_RETURN_IF_ERROR(w->Close());
  run.truth = prefix + "truth.jsonl";
  run.releases = prefix + "releases.jsonl";
  GC_RETURN_IF_ERROR(WriteTruthJsonl(engine.Truth(), run.truth));
  GC_RETURN_IF_ERROR(WriteReleasesJsonl(engine.releases(), run.releases));
  return run;
}

}  // namespace gpucanary::sim

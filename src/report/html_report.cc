#include "report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/replay/replay.h"
#include "core/time_format.h"
#include "dashboard/dashboard.h"
#include "vocab/service_measures.h"
#include "vocab/vocab.h"

namespace gpucanary::report {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct ChartSpec {
  std::string_view metric;
  std::string_view title;
  std::string_view unit;
};
constexpr ChartSpec kGpuCharts[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "SM clock", "MHz"},
    {"DCGM_FI_DEV_POWER_USAGE", "Power", "W"},
    {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature", "°C"},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "DRAM active", "ratio"},
};
// Tokens generated, whichever inference server a node runs (the
// generated_tokens counters of the service-measure table).
bool IsTokenCounter(std::string_view name) {
  for (const vocab::ServiceMetric& row : vocab::ServiceMetrics()) {
    if (row.measure == vocab::ServiceMeasure::kGeneratedTokens && row.metric == name) return true;
  }
  return false;
}
constexpr std::string_view kThrottle = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS";

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// JSON that is safe inside <script>: no "</" can close the element.
std::string ScriptJson(const Json& j) {
  std::string text = j.dump();
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    return Error(fs::exists(path, ec) ? StatusCode::kIoError : StatusCode::kNotFound,
                 path.string() + ": " + (fs::exists(path, ec) ? "cannot read" : "no such file"));
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Str(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::optional<double> Num(const Json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

// The samples of the charted metrics, by GPU (or node) key and time.
struct Collected {
  std::set<std::int64_t> times;
  std::map<std::string, std::map<std::string, std::map<std::int64_t, double>>> gpu;  // metric->gpu
  std::map<std::string, std::map<std::int64_t, double>> tokens;                      // node -> t
  std::map<std::string, std::set<std::int64_t>> throttled;                           // host -> t
};

Status CollectTicks(analysis::Replay& replay, Collected& out) {
  out = Collected{};  // afresh: a recording re-read through the sort replays from the start
  analysis::Tick tick;
  for (;;) {
    Result<bool> more = replay.Next(tick);
    if (!more) return more.error();
    if (!*more) break;
    const auto& metrics = replay.metrics();
    const auto& gpus = replay.gpus();
    const auto& nodes = replay.nodes();
    for (const analysis::Point& p : tick.gpu_points) {
      const std::string& name = metrics[static_cast<std::size_t>(p.metric)].name;
      const analysis::GpuInfo& gpu = gpus[static_cast<std::size_t>(p.entity)];
      if (name == kThrottle) {
        const auto reasons = static_cast<std::uint64_t>(p.value);
        if ((reasons & ~std::uint64_t{1}) != 0) out.throttled[gpu.host].insert(tick.time_s);
        continue;
      }
      for (const ChartSpec& c : kGpuCharts) {
        if (name == c.metric) {
          out.gpu[name][gpu.key][tick.time_s] = p.value;
          out.times.insert(tick.time_s);
        }
      }
    }
    for (const analysis::Point& p : tick.node_points) {
      if (!IsTokenCounter(metrics[static_cast<std::size_t>(p.metric)].name) || !p.increase) {
        continue;
      }
      out.tokens[nodes[static_cast<std::size_t>(p.entity)].host][tick.time_s] = *p.increase;
      out.times.insert(tick.time_s);
    }
  }
  return Status::Ok();
}

// The recording may have any layout (docs/recorded-telemetry.md).
Status Collect(const fs::path& recording, Collected& out) {
  return analysis::ReplayRecordings(
      {{recording.string(), analysis::Role::kCanary, {}}}, {},
      [&out](analysis::Replay& replay) { return CollectTicks(replay, out); });
}

std::string HostOf(const std::string& gpu_key) { return gpu_key.substr(0, gpu_key.rfind('/')); }

// The page's script: one uPlot chart per entry, canary series in colour,
// baseline in grey, the release start and the decision as vertical lines,
// throttled seconds of canary GPUs shaded.
constexpr std::string_view kScript = R"js(
(function () {
  const R = JSON.parse(document.getElementById('report-data').textContent);
  const palette = ['#d62728', '#ff7f0e', '#9467bd', '#e377c2', '#8c564b', '#bcbd22', '#17becf', '#1f77b4'];
  function marks(u) {
    const ctx = u.ctx, top = u.bbox.top, height = u.bbox.height;
    ctx.save();
    ctx.fillStyle = 'rgba(214, 39, 40, 0.10)';
    for (const [from, to] of R.throttled) {
      const x0 = u.valToPos(from, 'x', true), x1 = u.valToPos(to + 1, 'x', true);
      ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
    }
    const lines = [[R.release_start, '#2ca02c', 'release'], [R.decided_at, '#d62728', 'decided']];
    for (const [t, colour, label] of lines) {
      if (t == null) continue;
      const x = u.valToPos(t, 'x', true);
      ctx.strokeStyle = colour; ctx.lineWidth = 2 * devicePixelRatio;
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + height); ctx.stroke();
      ctx.fillStyle = colour; ctx.font = (11 * devicePixelRatio) + 'px sans-serif';
      ctx.fillText(label, x + 4 * devicePixelRatio, top + 12 * devicePixelRatio);
    }
    ctx.restore();
  }
  const root = document.getElementById('charts');
  for (const chart of R.charts) {
    const box = document.createElement('section');
    box.className = 'chart';
    const h = document.createElement('h3');
    h.textContent = chart.title + ' (' + chart.unit + ')';
    box.appendChild(h);
    root.appendChild(box);
    let c = 0;
    const series = [{}].concat(chart.series.map(s => ({
      label: s.label,
      stroke: s.role === 'canary' ? palette[(c++) % palette.length] : 'rgba(120,120,120,0.55)',
      width: s.role === 'canary' ? 2 : 1,
      spanGaps: false,
    })));
    const data = [R.times].concat(chart.series.map(s => s.values));
    new uPlot({width: Math.min(1100, window.innerWidth - 40), height: 260, series,
               hooks: {draw: [marks]}, legend: {live: true}}, data, box);
  }
})();
)js";

constexpr std::string_view kStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 20px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 4px; color: #fff; font-weight: 600; }
.verdict.fail { background: #c62828; } .verdict.pass { background: #2e7d32; }
.verdict.inconclusive { background: #757575; }
table { border-collapse: collapse; margin: 8px 0 16px; }
td, th { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
.cause { margin: 8px 0; padding: 8px 12px; border-left: 4px solid #c62828; background: #fff5f5; }
.cause.node { border-left-color: #ef6c00; background: #fff8ef; }
.meta { color: #555; font-size: 13px; }
.chart { margin: 16px 0; } .chart h3 { font-size: 15px; margin: 4px 0; }
)css";

// incident.json, which must hold a JSON object.
Result<Json> ReadIncident(const fs::path& dir) {
  auto incident_text = ReadFile(dir / "incident.json");
  if (!incident_text) return Error(incident_text.error());
  Json incident = Json::parse(*incident_text, nullptr, /*allow_exceptions=*/false);
  if (!incident.is_object()) {
    return Error(StatusCode::kParseError, (dir / "incident.json").string() + ": not a JSON object");
  }
  return incident;
}

std::set<std::string> CanaryNodes(const Json& incident) {
  std::set<std::string> canary_nodes;
  if (incident.contains("canary_nodes") && incident["canary_nodes"].is_array()) {
    for (const Json& n : incident["canary_nodes"]) {
      if (n.is_string()) canary_nodes.insert(n.get<std::string>());
    }
  }
  return canary_nodes;
}

// The charts' data: a time axis and one column of values per series.
struct Charts {
  std::vector<std::int64_t> times;  // every second from the first to the last sample
  Json charts = Json::array();
  std::set<std::string> charted_gpus;

  // `values` on the time axis; null where there is no (finite) value.
  Json Column(const std::map<std::int64_t, double>& values) const {
    Json out = Json::array();
    for (std::int64_t t : times) {
      auto it = values.find(t);
      out.push_back(it == values.end() || !std::isfinite(it->second) ? Json(nullptr)
                                                                     : Json(it->second));
    }
    return out;
  }
};

// One chart per GPU metric with data: canary GPUs first, so their colours
// and legend entries lead.
void AddGpuCharts(const Collected& data, const std::set<std::string>& canary_nodes, Charts& out) {
  for (const ChartSpec& spec : kGpuCharts) {
    auto it = data.gpu.find(std::string(spec.metric));
    if (it == data.gpu.end()) continue;
    Json series = Json::array();
    for (bool canary : {true, false}) {
      for (const auto& [gpu, values] : it->second) {
        if (canary_nodes.contains(HostOf(gpu)) != canary) continue;
        series.push_back({{"label", gpu},
                          {"role", canary ? "canary" : "baseline"},
                          {"values", out.Column(values)}});
        out.charted_gpus.insert(gpu);
      }
    }
    out.charts.push_back(
        {{"title", spec.title}, {"unit", spec.unit}, {"series", std::move(series)}});
  }
}

// Generated tokens per second per node, canary nodes first.
void AddTokensChart(const Collected& data, const std::set<std::string>& canary_nodes, Charts& out) {
  if (data.tokens.empty()) return;
  Json series = Json::array();
  for (bool canary : {true, false}) {
    for (const auto& [node, values] : data.tokens) {
      if (canary_nodes.contains(node) != canary) continue;
      series.push_back({{"label", node},
                        {"role", canary ? "canary" : "baseline"},
                        {"values", out.Column(values)}});
    }
  }
  out.charts.push_back({{"title", "Generated tokens per second"},
                        {"unit", "tokens/s"},
                        {"series", std::move(series)}});
}

Charts MakeCharts(const Collected& data, const std::set<std::string>& canary_nodes) {
  Charts out;
  if (!data.times.empty()) {
    for (std::int64_t t = *data.times.begin(); t <= *data.times.rbegin(); ++t) {
      out.times.push_back(t);
    }
  }
  AddGpuCharts(data, canary_nodes, out);
  AddTokensChart(data, canary_nodes, out);
  return out;
}

// Seconds in which any canary GPU was throttled (idle aside), as ranges.
Json ThrottledRanges(const Collected& data, const std::set<std::string>& canary_nodes) {
  std::set<std::int64_t> throttled;
  for (const auto& [host, seconds] : data.throttled) {
    if (canary_nodes.contains(host)) throttled.insert(seconds.begin(), seconds.end());
  }
  Json ranges = Json::array();
  for (auto it = throttled.begin(); it != throttled.end();) {
    std::int64_t from = *it;
    std::int64_t to = from;
    while (++it != throttled.end() && *it == to + 1) to = *it;
    ranges.push_back({from, to});
  }
  return ranges;
}

// The strings of the JSON array `list` (other items skipped), joined by ", ".
std::string JoinStrings(const Json& list) {
  std::string out;
  for (const Json& item : list) {
    if (!item.is_string()) continue;
    if (!out.empty()) out += ", ";
    out += item.get<std::string>();
  }
  return out;
}

// Each cause: kind, scope (and node), its sentence and GPUs.
std::string CausesHtml(const Json& incident) {
  if (!incident.contains("causes") || !incident["causes"].is_array() ||
      incident["causes"].empty()) {
    return "<p>No cause was recorded.</p>\n";
  }
  std::string html;
  for (const Json& c : incident["causes"]) {
    const std::string scope = Str(c, "scope");
    html += "<div class=\"cause " + Escape(scope) + "\"><strong>" + Escape(Str(c, "kind")) +
            "</strong> (" + Escape(scope) + " scope";
    if (!Str(c, "node").empty()) html += ", " + Escape(Str(c, "node"));
    html += ")<br>" + Escape(Str(c, "summary"));
    if (c.contains("gpus") && c["gpus"].is_array() && !c["gpus"].empty()) {
      html += "<br><span class=\"meta\">GPUs: " + Escape(JoinStrings(c["gpus"])) + "</span>";
    }
    html += "</div>\n";
  }
  return html;
}

// The release annotation, one row per field.
std::string ReleaseRows(const Json& annotation) {
  std::string html;
  for (const auto& [key, value] : annotation.items()) {
    html += "<tr><th>" + Escape(key) + "</th><td>" +
            Escape(value.is_string() ? value.get<std::string>() : value.dump()) + "</td></tr>\n";
  }
  return html;
}

// The canary and baseline nodes, one row each.
std::string NodeRows(const Json& incident) {
  std::string html;
  for (const char* key : {"canary_nodes", "baseline_nodes"}) {
    std::string nodes;
    if (incident.contains(key) && incident[key].is_array()) nodes = JoinStrings(incident[key]);
    html += "<tr><th>" +
            std::string(key == std::string_view("canary_nodes") ? "canary" : "baseline") +
            "</th><td>" + Escape(nodes.empty() ? "(none)" : nodes) + "</td></tr>\n";
  }
  return html;
}

// The page's head, title and summary line.
std::string HeadHtml(const Json& incident, const std::string& release_id,
                     const std::string& verdict, std::optional<double> decided_at,
                     std::string_view uplot_css) {
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<title>gpucanary: " + Escape(release_id) + " " + Escape(verdict) + "</title>\n";
  html += "<style>" + std::string(uplot_css) + "</style>\n";
  html += "<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  html += "<h1>Release " + Escape(release_id) + " <span class=\"verdict " + Escape(verdict) +
          "\">" + Escape(verdict) + "</span></h1>\n";
  html += "<p class=\"meta\">canary " + Escape(Str(incident, "canary"));
  if (decided_at) {
    html += ", decided at " +
            Escape(FormatUtcMillis(static_cast<std::int64_t>(std::llround(*decided_at * 1000))));
  }
  html += "</p>\n";
  return html;
}

}  // namespace

Result<std::string> RenderHtmlReport(const fs::path& dir, HtmlReportStats* stats) {
  auto read = ReadIncident(dir);
  if (!read) return Error(read.error());
  const Json& incident = *read;
  const fs::path recording = dir / "telemetry.om";
  std::error_code ec;
  if (!fs::exists(recording, ec)) {
    return Error(StatusCode::kNotFound, recording.string() + ": no such file");
  }
  Collected data;
  if (Status st = Collect(recording, data); !st.ok()) return Error(st);

  const Json release = incident.contains("release") ? incident["release"] : Json::object();
  const Json annotation = release.contains("annotation") && release["annotation"].is_object()
                              ? release["annotation"]
                              : Json::object();
  const std::set<std::string> canary_nodes = CanaryNodes(incident);
  Charts charts = MakeCharts(data, canary_nodes);
  const std::optional<double> release_start = Num(annotation, "started_at");
  const std::optional<double> decided_at = Num(incident, "decided_at");
  Json page = {{"times", charts.times},
               {"charts", charts.charts},
               {"throttled", ThrottledRanges(data, canary_nodes)},
               {"release_start", release_start ? Json(*release_start) : Json(nullptr)},
               {"decided_at", decided_at ? Json(*decided_at) : Json(nullptr)}};

  const dashboard::Asset* uplot_js = dashboard::FindAsset("/assets/uPlot.iife.min.js");
  const dashboard::Asset* uplot_css = dashboard::FindAsset("/assets/uPlot.min.css");
  if (uplot_js == nullptr || uplot_css == nullptr) {
    return Error(StatusCode::kInternal, "uPlot is not built into this binary");
  }

  // A bundle is written for a fail; its words are shown as the bundle has them.
  const std::string verdict = Str(incident, "verdict").empty()
                                  ? std::string(vocab::Name(vocab::Verdict::kFail))
                                  : Str(incident, "verdict");
  std::string html = HeadHtml(incident, Str(release, "id"), verdict, decided_at, uplot_css->body);
  html += "<h2>Causes</h2>\n" + CausesHtml(incident);
  html += "<h2>Release</h2>\n<table>\n" + ReleaseRows(annotation);
  html += "</table>\n<h2>Nodes</h2>\n<table>\n" + NodeRows(incident);
  html +=
      "</table>\n<h2>Telemetry</h2>\n<p class=\"meta\">Canary GPUs in colour, baseline in "
      "grey; the green line is the release start, the red one the decision; shaded seconds "
      "are those in which a canary GPU's clocks were throttled.</p>\n";
  html += "<div id=\"charts\"></div>\n";
  html +=
      "<script id=\"report-data\" type=\"application/json\">" + ScriptJson(page) + "</script>\n";
  html += "<script>" + std::string(uplot_js->body) + "</script>\n";
  html += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  if (stats != nullptr) {
    stats->gpus = static_cast<int>(charts.charted_gpus.size());
    stats->seconds = static_cast<int>(charts.times.size());
    stats->charts = static_cast<int>(charts.charts.size());
  }
  return html;
}

}  // namespace gpucanary::report

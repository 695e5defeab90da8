#include "analysis/policy/policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "analysis/default_policy.h"  // generated from policies/default.yaml
#include "config/yaml_fields.h"
#include "dcgm/throttle.h"

namespace gpucanary::analysis {
namespace {

using config::Child;
using config::Fields;
using config::Index;
using config::ReadBool;
using config::ReadDuration;
using config::ReadInt;
using config::ReadNumber;
using config::ReadString;
using config::Reporter;

constexpr std::string_view kTopKeys[] = {"alpha",
                                         "pass_alpha",
                                         "block",
                                         "min_block_fraction",
                                         "min_blocks",
                                         "min_seconds",
                                         "min_service_seconds",
                                         "warmup",
                                         "rules",
                                         "metrics",
                                         "without_service"};
constexpr std::string_view kRuleKeys[] = {"throttle", "dram_efficiency", "pcie_link",
                                          "critical_xids", "ecc_dbe"};
constexpr std::string_view kThrottleKeys[] = {"reasons", "power_cap_if_baseline_uncapped",
                                              "halt_on_canary", "seconds", "critical"};
constexpr std::string_view kDramKeys[] = {"max_drop"};
constexpr std::string_view kPcieKeys[] = {"seconds", "critical", "halt_on_canary"};
constexpr std::string_view kEccKeys[] = {"critical"};
constexpr std::string_view kMetricKeys[] = {"name",   "measure", "kind",
                                            "better", "margin",  "critical"};

class PolicyParser {
 public:
  PolicyParser(const Reporter& r, Policy* p) : r_(r), p_(p) {}

  Status Parse(const YAML::Node& root) {
    Result<Fields> top = Fields::Read(r_, root, "policy", kTopKeys);
    if (!top) return top.error();
    if (const YAML::Node* n = top->Find("alpha")) {
      Result<double> a = ReadNumber(r_, *n, "alpha");
      if (!a) return a.error();
      if (*a <= 0 || *a >= 0.5) return r_.Fail(*n, "alpha", "must be in (0, 0.5)").value();
      p_->alpha = *a;
    }
    if (const YAML::Node* n = top->Find("pass_alpha")) {
      Result<double> a = ReadNumber(r_, *n, "pass_alpha");
      if (!a) return a.error();
      if (*a <= 0 || *a >= 0.5) return r_.Fail(*n, "pass_alpha", "must be in (0, 0.5)").value();
      p_->pass_alpha = *a;
    }
    if (const YAML::Node* n = top->Find("block")) {
      Result<double> b = ReadDuration(r_, *n, "block");
      if (!b) return b.error();
      if (*b < 1 || *b > 3600) return r_.Fail(*n, "block", "must be 1s..1h").value();
      p_->block_s = *b;
    }
    if (const YAML::Node* n = top->Find("min_block_fraction")) {
      Result<double> f = ReadNumber(r_, *n, "min_block_fraction");
      if (!f) return f.error();
      if (*f <= 0 || *f > 1) return r_.Fail(*n, "min_block_fraction", "must be in (0, 1]").value();
      p_->min_block_fraction = *f;
    }
    if (const YAML::Node* n = top->Find("min_blocks")) {
      Result<std::int64_t> b = ReadInt(r_, *n, "min_blocks", 2, 100000);
      if (!b) return b.error();
      p_->min_blocks = static_cast<int>(*b);
    }
    if (const YAML::Node* n = top->Find("min_seconds")) {
      Result<double> d = ReadDuration(r_, *n, "min_seconds");
      if (!d) return d.error();
      if (*d < 3 || *d > 3600) return r_.Fail(*n, "min_seconds", "must be 3s..1h").value();
      p_->min_seconds = static_cast<int>(*d);
    }
    if (const YAML::Node* n = top->Find("min_service_seconds")) {
      Result<double> d = ReadDuration(r_, *n, "min_service_seconds");
      if (!d) return d.error();
      if (*d < 3 || *d > 3600) {
        return r_.Fail(*n, "min_service_seconds", "must be 3s..1h").value();
      }
      p_->min_service_seconds = static_cast<int>(*d);
    }
    if (const YAML::Node* n = top->Find("warmup")) {
      Result<double> w = ReadDuration(r_, *n, "warmup");
      if (!w) return w.error();
      if (*w < 0 || *w > 3600) return r_.Fail(*n, "warmup", "must be 0s..1h").value();
      p_->warmup_s = *w;
    }
    if (const YAML::Node* n = top->Find("rules")) GC_RETURN_IF_ERROR(ParseRules(*n));
    if (const YAML::Node* n = top->Find("metrics")) {
      GC_RETURN_IF_ERROR(ParseMetrics(*n, "metrics", p_->metrics));
    }
    if (const YAML::Node* n = top->Find("without_service")) {
      GC_RETURN_IF_ERROR(ParseMetrics(*n, "without_service", p_->without_service));
    }
    return Status::Ok();
  }

 private:
  Status ParseRules(const YAML::Node& node) {
    Result<Fields> f = Fields::Read(r_, node, "rules", kRuleKeys);
    if (!f) return f.error();
    if (const YAML::Node* n = f->Find("throttle")) GC_RETURN_IF_ERROR(ParseThrottle(*n));
    if (const YAML::Node* n = f->Find("dram_efficiency")) {
      Result<Fields> d = Fields::Read(r_, *n, "rules.dram_efficiency", kDramKeys);
      if (!d) return d.error();
      p_->rules.dram_efficiency = true;
      if (const YAML::Node* m = d->Find("max_drop")) {
        Result<double> v = ReadNumber(r_, *m, "rules.dram_efficiency.max_drop");
        if (!v) return v.error();
        if (*v <= 0 || *v >= 1) {
          return r_.Fail(*m, "rules.dram_efficiency.max_drop", "must be in (0, 1)").value();
        }
        p_->rules.dram_efficiency_max_drop = *v;
      }
    }
    if (const YAML::Node* n = f->Find("pcie_link")) {
      Result<Fields> d = Fields::Read(r_, *n, "rules.pcie_link", kPcieKeys);
      if (!d) return d.error();
      p_->rules.pcie_link = true;
      if (const YAML::Node* m = d->Find("seconds")) {
        Result<double> v = ReadDuration(r_, *m, "rules.pcie_link.seconds");
        if (!v) return v.error();
        p_->rules.pcie_seconds = *v;
      }
      if (const YAML::Node* m = d->Find("critical")) {
        Result<bool> v = ReadBool(r_, *m, "rules.pcie_link.critical");
        if (!v) return v.error();
        p_->rules.pcie_critical = *v;
      }
      if (const YAML::Node* m = d->Find("halt_on_canary")) {
        Result<bool> v = ReadBool(r_, *m, "rules.pcie_link.halt_on_canary");
        if (!v) return v.error();
        p_->rules.pcie_halt_on_canary = *v;
      }
    }
    if (const YAML::Node* n = f->Find("critical_xids")) {
      if (!n->IsSequence()) return r_.Fail(*n, "rules.critical_xids", "expected a list").value();
      for (std::size_t i = 0; i < n->size(); ++i) {
        Result<std::int64_t> x = ReadInt(r_, (*n)[i], Index("rules.critical_xids", i), 1, 999);
        if (!x) return x.error();
        p_->rules.critical_xids.push_back(static_cast<int>(*x));
      }
      auto& xids = p_->rules.critical_xids;
      std::sort(xids.begin(), xids.end());
      xids.erase(std::unique(xids.begin(), xids.end()), xids.end());
    }
    if (const YAML::Node* n = f->Find("ecc_dbe")) {
      Result<Fields> d = Fields::Read(r_, *n, "rules.ecc_dbe", kEccKeys);
      if (!d) return d.error();
      p_->rules.ecc_dbe = true;
      if (const YAML::Node* m = d->Find("critical")) {
        Result<bool> v = ReadBool(r_, *m, "rules.ecc_dbe.critical");
        if (!v) return v.error();
        p_->rules.ecc_dbe_critical = *v;
      }
    }
    return Status::Ok();
  }

  Status ParseThrottle(const YAML::Node& node) {
    Result<Fields> f = Fields::Read(r_, node, "rules.throttle", kThrottleKeys);
    if (!f) return f.error();
    ThrottlePolicy& t = p_->rules.throttle;
    t.enabled = true;
    const YAML::Node* reasons = f->Find("reasons");
    if (reasons == nullptr) return r_.Fail(node, "rules.throttle.reasons", "missing").value();
    if (!reasons->IsSequence() || reasons->size() == 0) {
      return r_.Fail(*reasons, "rules.throttle.reasons", "expected a list of reason names").value();
    }
    for (std::size_t i = 0; i < reasons->size(); ++i) {
      const std::string field = Index("rules.throttle.reasons", i);
      Result<std::string> name = ReadString(r_, (*reasons)[i], field);
      if (!name) return name.error();
      const dcgm::ClockEventReason* reason = nullptr;
      for (const dcgm::ClockEventReason& c : dcgm::AllClockEventReasons()) {
        if (c.name == *name) reason = &c;
      }
      if (reason == nullptr) {
        std::string known;
        for (const dcgm::ClockEventReason& c : dcgm::AllClockEventReasons()) {
          if (!known.empty()) known += ", ";
          known += c.name;
        }
        return r_
            .Fail((*reasons)[i], field, "unknown reason '" + *name + "' (known: " + known + ")")
            .value();
      }
      t.harmful_mask |= reason->bit;
    }
    if (const YAML::Node* n = f->Find("power_cap_if_baseline_uncapped")) {
      Result<bool> v = ReadBool(r_, *n, "rules.throttle.power_cap_if_baseline_uncapped");
      if (!v) return v.error();
      t.power_cap_if_baseline_uncapped = *v;
    }
    if (const YAML::Node* n = f->Find("halt_on_canary")) {
      Result<bool> v = ReadBool(r_, *n, "rules.throttle.halt_on_canary");
      if (!v) return v.error();
      t.halt_on_canary = *v;
    }
    if (const YAML::Node* n = f->Find("seconds")) {
      Result<double> v = ReadDuration(r_, *n, "rules.throttle.seconds");
      if (!v) return v.error();
      t.seconds = *v;
    }
    if (const YAML::Node* n = f->Find("critical")) {
      Result<bool> v = ReadBool(r_, *n, "rules.throttle.critical");
      if (!v) return v.error();
      t.critical = *v;
    }
    return Status::Ok();
  }

  // `metrics:` or `without_service:` (`list`), into `out`.
  Status ParseMetrics(const YAML::Node& node, std::string_view list,
                      std::vector<MetricPolicy>& out) {
    if (!node.IsSequence()) return r_.Fail(node, std::string(list), "expected a list").value();
    for (std::size_t i = 0; i < node.size(); ++i) {
      const std::string field = Index(std::string(list), i);
      Result<Fields> f = Fields::Read(r_, node[i], field, kMetricKeys);
      if (!f) return f.error();
      MetricPolicy m;
      const YAML::Node* name = f->Find("name");
      const YAML::Node* measure = f->Find("measure");
      if (name != nullptr && measure != nullptr) {
        return r_.Fail(*measure, Child(field, "measure"), "give a name or a measure, not both")
            .value();
      }
      if (name == nullptr && measure == nullptr) {
        return r_.Fail(node[i], Child(field, "name"), "missing (or give a measure)").value();
      }
      if (measure != nullptr) {
        GC_RETURN_IF_ERROR(ReadMeasure(*measure, Child(field, "measure"), m));
        name = measure;  // errors about the entry as a whole point here
      } else {
        Result<std::string> n = ReadString(r_, *name, Child(field, "name"));
        if (!n) return n.error();
        m.name = *n;
      }
      if (const YAML::Node* k = f->Find("kind")) {
        Result<std::string> kind = ReadString(r_, *k, Child(field, "kind"));
        if (!kind) return kind.error();
        if (*kind == "gauge") {
          m.kind = MetricPolicy::Kind::kGauge;
        } else if (*kind == "rate") {
          m.kind = MetricPolicy::Kind::kRate;
        } else if (*kind == "mean") {
          m.kind = MetricPolicy::Kind::kMean;
        } else if (*kind == "p99") {
          m.kind = MetricPolicy::Kind::kP99;
        } else if (*kind == "count") {
          m.kind = MetricPolicy::Kind::kCount;
        } else {
          return r_.Fail(*k, Child(field, "kind"), "expected gauge, rate, mean, p99 or count")
              .value();
        }
      }
      if (m.measure) {
        if (Status st = CheckMeasureKind(*m.measure, m.kind, f->Find("kind"), node[i], field);
            !st.ok()) {
          return st;
        }
      }
      if (m.gpu_measure && m.kind != MetricPolicy::Kind::kGauge) {
        return r_
            .Fail(*f->Find("kind"), Child(field, "kind"),
                  "measure " + m.name + " is compared as gauge")
            .value();
      }
      const YAML::Node* better = f->Find("better");
      if (better == nullptr) return r_.Fail(node[i], Child(field, "better"), "missing").value();
      Result<std::string> b = ReadString(r_, *better, Child(field, "better"));
      if (!b) return b.error();
      if (*b != "higher" && *b != "lower") {
        return r_.Fail(*better, Child(field, "better"), "expected higher or lower").value();
      }
      m.better = *b == "higher" ? MetricPolicy::Better::kHigher : MetricPolicy::Better::kLower;
      const YAML::Node* margin = f->Find("margin");
      if (margin == nullptr) return r_.Fail(node[i], Child(field, "margin"), "missing").value();
      Result<double> mg = ReadNumber(r_, *margin, Child(field, "margin"));
      if (!mg) return mg.error();
      if (!(*mg >= 0) || *mg > 100) {
        return r_.Fail(*margin, Child(field, "margin"), "must be in [0, 100]").value();
      }
      m.margin = *mg;
      if (const YAML::Node* c = f->Find("critical")) {
        Result<bool> v = ReadBool(r_, *c, Child(field, "critical"));
        if (!v) return v.error();
        m.critical = *v;
        if (m.critical && m.kind == MetricPolicy::Kind::kCount) {
          return r_
              .Fail(*c, Child(field, "critical"),
                    "a count metric can fail a release but not pass one; it cannot be critical")
              .value();
        }
      }
      const std::string where = Child(field, measure != nullptr ? "measure" : "name");
      for (const MetricPolicy& other : out) {
        if (other.name == m.name && other.kind == m.kind) {
          return r_.Fail(*name, where, "metric listed twice").value();
        }
      }
      if (&out == &p_->without_service) {
        if (const YAML::Node* c = f->Find("critical")) {
          return r_
              .Fail(*c, Child(field, "critical"),
                    "every without_service entry is required to pass; critical is not read here")
              .value();
        }
        if (m.kind == MetricPolicy::Kind::kCount) {
          return r_
              .Fail(*f->Find("kind"), Child(field, "kind"),
                    "a count metric cannot pass a release; list it under metrics")
              .value();
        }
        GC_RETURN_IF_ERROR(CheckWithoutService(m, *name, where));
      }
      out.push_back(std::move(m));
    }
    return Status::Ok();
  }

  // A `without_service` entry may repeat a `metrics` entry only as it is
  // there (then it is the same comparison), and names no service metric.
  Status CheckWithoutService(const MetricPolicy& m, const YAML::Node& at,
                             const std::string& where) {
    if (m.measure) {
      return r_
          .Fail(at, where,
                "a service measure has no data on a canary without service metrics; name a "
                "GPU measure or a DCGM field")
          .value();
    }
    const std::optional<std::size_t> repeated = p_->FindMetric(m.name, m.kind);
    if (repeated &&
        (p_->metrics[*repeated].better != m.better || p_->metrics[*repeated].margin != m.margin)) {
      return r_
          .Fail(at, where,
                "repeats a metrics entry with another better or margin; repeat it as it is "
                "there (it is then the same comparison) or leave it out")
          .value();
    }
    return Status::Ok();
  }

  // A service measure or a GPU measure, by its wire name.
  Status ReadMeasure(const YAML::Node& node, const std::string& field, MetricPolicy& m) {
    Result<std::string> text = ReadString(r_, node, field);
    if (!text) return text.error();
    m.name = *text;
    if (std::optional<vocab::ServiceMeasure> sm = vocab::Parse<vocab::ServiceMeasure>(*text)) {
      m.measure = *sm;
      return Status::Ok();
    }
    if (std::optional<vocab::GpuMeasure> gm = vocab::Parse<vocab::GpuMeasure>(*text)) {
      m.gpu_measure = *gm;
      return Status::Ok();
    }
    std::string known;
    for (const vocab::Word<vocab::ServiceMeasure>& w : vocab::Words<vocab::ServiceMeasure>()) {
      known += (known.empty() ? "" : ", ") + std::string(w.name);
    }
    for (const vocab::Word<vocab::GpuMeasure>& w : vocab::Words<vocab::GpuMeasure>()) {
      known += ", " + std::string(w.name);
    }
    return r_.Fail(node, field, "unknown measure '" + *text + "' (known: " + known + ")").value();
  }

  // A latency is a histogram (or a mean of counters): mean or p99; tokens
  // are a counter: rate; queue depth and KV-cache usage are gauges.
  Status CheckMeasureKind(vocab::ServiceMeasure sm, MetricPolicy::Kind kind, const YAML::Node* k,
                          const YAML::Node& entry, const std::string& field) {
    using K = MetricPolicy::Kind;
    const char* expected = nullptr;
    switch (sm) {
      case vocab::ServiceMeasure::kPerTokenLatency:
      case vocab::ServiceMeasure::kTimeToFirstToken:
      case vocab::ServiceMeasure::kE2eLatency:
        if (kind != K::kMean && kind != K::kP99) expected = "mean or p99";
        break;
      case vocab::ServiceMeasure::kGeneratedTokens:
        if (kind != K::kRate) expected = "rate";
        break;
      case vocab::ServiceMeasure::kQueueDepth:
      case vocab::ServiceMeasure::kKvCacheUsage:
      case vocab::ServiceMeasure::kRunningRequests:
        if (kind != K::kGauge) expected = "gauge";
        break;
    }
    if (expected == nullptr) return Status::Ok();
    return r_
        .Fail(k != nullptr ? *k : entry, Child(field, "kind"),
              "measure " + std::string(vocab::Name(sm)) + " is compared as " + expected)
        .value();
  }

  const Reporter& r_;
  Policy* p_;
};

}  // namespace

std::string_view MetricKindName(MetricPolicy::Kind kind) {
  switch (kind) {
    case MetricPolicy::Kind::kGauge:
      return "gauge";
    case MetricPolicy::Kind::kRate:
      return "rate";
    case MetricPolicy::Kind::kMean:
      return "mean";
    case MetricPolicy::Kind::kP99:
      return "p99";
    case MetricPolicy::Kind::kCount:
      return "count";
  }
  return "gauge";
}

Result<Policy> ParsePolicy(std::string_view yaml_text, std::string_view file_name) {
  const Reporter r{std::string(file_name)};
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "syntax", e.msg);
  }
  Policy p;
  p.file = std::string(file_name);
  PolicyParser parser(r, &p);
  try {
    GC_RETURN_IF_ERROR(parser.Parse(root));
  } catch (const YAML::Exception& e) {  // yaml-cpp may throw on odd nodes
    return r.Fail(e.mark, "policy", e.msg);
  }
  return p;
}

Result<Policy> LoadPolicy(const std::string& path) {
  auto text = config::ReadConfigFile(path);
  if (!text) return Error(text.error());
  return ParsePolicy(*text, path);
}

std::string_view DefaultPolicyText() { return kDefaultPolicyYaml; }

const Policy& DefaultPolicy() {
  static const Policy* const policy = [] {
    Result<Policy> p = ParsePolicy(kDefaultPolicyYaml, "policies/default.yaml");
    GC_CHECK(p.has_value(), p ? "" : p.error().message().c_str());
    return new Policy(std::move(*p));
  }();
  return *policy;
}

}  // namespace gpucanary::analysis

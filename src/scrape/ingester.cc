#include "scrape/ingester.h"

#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>

#include "expfmt/parser.h"
#include "model/label_limits.h"
#include "net/http_message.h"

namespace gpucanary::scrape {
namespace {

// Prometheus's scrape report, in its order (scrape/scrape.go, report).
constexpr std::string_view kReportNames[5] = {
    "up", "scrape_duration_seconds", "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling", "scrape_series_added"};
// Entries not seen for this many scrapes are dead; the cache is rebuilt
// without them once they outnumber the live ones (and kMinDeadToCompact).
constexpr std::uint64_t kDeadAfter = 2;
constexpr std::size_t kMinDeadToCompact = 1024;

// The raw series text of a sample line: from the name to the end of the label
// block, exactly as written ("up", "m{a=\"1\"}").
std::string_view RawSeries(const expfmt::SampleView& s) {
  if (s.label_text.empty()) return s.name;
  const char* begin = s.name.data();
  const char* end = s.label_text.data() + s.label_text.size();
  return {begin, static_cast<std::size_t>(end - begin)};
}

bool HasLabel(const model::Labels& labels, std::string_view name) {
  return std::any_of(labels.begin(), labels.end(),
                     [&](const model::Label& l) { return l.name == name; });
}

}  // namespace

std::string_view LimitExceededName(LimitExceeded limit) {
  switch (limit) {
    case LimitExceeded::kSampleLimit:
      return "sample_limit";
    case LimitExceeded::kLabelLimits:
      return "label_limits";
    case LimitExceeded::kBodySizeLimit:
      return "body_size_limit";
    case LimitExceeded::kNone:
      break;
  }
  return "none";
}

expfmt::Format FormatForContentType(std::string_view content_type) {
  constexpr std::string_view kOpenMetrics = "application/openmetrics-text";
  return content_type.size() >= kOpenMetrics.size() &&
                 net::EqualsIgnoreCase(content_type.substr(0, kOpenMetrics.size()), kOpenMetrics)
             ? expfmt::Format::kOpenMetrics
             : expfmt::Format::kPrometheusText;
}

Ingester::Ingester(store::Appendable& store, model::Labels target_labels, IngestOptions options)
    : store_(store), target_labels_(std::move(target_labels)), options_(std::move(options)) {}

Ingester::~Ingester() {
  if (appender_ != nullptr) appender_->Rollback();
}

store::Appender& Ingester::appender() {
  if (appender_ == nullptr) appender_ = store_.NewAppender();
  return *appender_;
}

// Prometheus scrape.go mutateSampleLabels: without honor_labels, "label
// conflicts are resolved by renaming conflicting labels in the scraped data
// to exported_<original-label>" (configuration docs, honor_labels), repeating
// the prefix while the name is still taken; with it, scraped labels win.
// Empty label values are dropped (Prometheus treats them as absent).
void Ingester::BuildLabels(const expfmt::SampleView& s) {
  scratch_.clear();
  scratch_.push_back({std::string(model::kMetricNameLabel), std::string(s.name)});
  for (const model::LabelView& l : s.labels) {
    if (!l.value.empty()) scratch_.push_back({std::string(l.name), std::string(l.value)});
  }
  const std::size_t scraped = scratch_.size();
  for (const model::Label& t : target_labels_) {
    auto clash =
        std::find_if(scratch_.begin(), scratch_.begin() + static_cast<std::ptrdiff_t>(scraped),
                     [&](const model::Label& l) { return l.name == t.name; });
    if (clash == scratch_.begin() + static_cast<std::ptrdiff_t>(scraped)) {
      scratch_.push_back(t);
      continue;
    }
    if (options_.honor_labels) continue;
    std::string renamed = "exported_" + clash->name;
    while (HasLabel(scratch_, renamed) || HasLabel(target_labels_, renamed)) {
      renamed.insert(0, "exported_");
    }
    clash->name = std::move(renamed);
    scratch_.push_back(t);
  }
  model::SortLabels(scratch_);
}

// Prometheus scrape.go verifyLabelLimits, with its messages.
Status Ingester::CheckLabelLimits() const {
  const ScrapeLimits& limits = options_.limits;
  const std::optional<model::LabelLimitProblem> problem = model::CheckLabelLimits(
      scratch_, model::LabelLimits{limits.label_limit, limits.label_name_length_limit,
                                   limits.label_value_length_limit});
  return problem ? Status(StatusCode::kOutOfRange, problem->message) : Status::Ok();
}

Result<store::SeriesRef> Ingester::SeriesFor(const expfmt::SampleView& s, bool* dropped) {
  BuildLabels(s);
  *dropped = false;
  if (!options_.metric_relabel.empty()) {
    if (!model::Relabel(options_.metric_relabel, scratch_)) {
      *dropped = true;
      return store::SeriesRef{0};
    }
    if (Status st = model::ValidateLabels(scratch_); !st.ok()) {
      series_error_ = Status(StatusCode::kInvalidArgument,
                             "invalid metric name or label names after metric_relabel_configs: " +
                                 st.message() + " in " + model::LabelsToString(scratch_));
      return Error(series_error_);
    }
  }
  if (Status st = CheckLabelLimits(); !st.ok()) {
    series_error_ = std::move(st);
    series_limit_ = LimitExceeded::kLabelLimits;
    return Error(series_error_);
  }
  return appender().Series(scratch_);
}

Ingester::Entry* Ingester::Lookup(const expfmt::SampleView& s, std::string_view raw,
                                  ScrapeOutcome& out, store::SeriesRef* ref, bool* ok) {
  *ok = true;
  const std::uint64_t h = FlatHashMap<std::uint32_t>::NonZero(XXH3_64bits(raw.data(), raw.size()));
  bool inserted = false;
  std::uint32_t& slot = index_.FindOrInsert(h, inserted);
  if (slot != 0) {
    Entry& e = entries_[slot - 1];
    if (e.raw == raw) return &e;
  }
  // A miss, or (rarely) another series with the same hash: ask the store.
  const bool collision = slot != 0;
  bool dropped = false;
  Result<store::SeriesRef> r = SeriesFor(s, &dropped);
  if (!series_error_.ok()) {
    *ok = false;
    return nullptr;
  }
  if (!r) {
    ++out.rejected;
    if (out.store_error.ok()) out.store_error = r.error();
    *ok = false;
    return nullptr;
  }
  if (collision) {
    *ref = *r;
    if (dropped) {
      ++out.relabel_dropped;
      *ok = false;
    }
    return nullptr;
  }
  slot = static_cast<std::uint32_t>(entries_.size() + 1);
  entries_.push_back(Entry{std::string(raw), *r, 0, dropped});
  if (!dropped) ++out.series_added;
  return &entries_.back();
}

void Ingester::AppendOne(store::SeriesRef ref, std::int64_t t_ms, double v, ScrapeOutcome& out) {
  Status st = appender().Append(ref, t_ms, v);
  if (!st.ok()) {
    ++out.rejected;
    if (out.store_error.ok()) out.store_error = std::move(st);
    return;
  }
  ++batch_size_;
}

ScrapeOutcome Ingester::Ingest(std::string_view body, expfmt::Format format, std::int64_t t_ms,
                               double duration_s) {
  ScrapeOutcome out;
  ++iteration_;
  current_.clear();
  const std::size_t sample_limit = options_.limits.sample_limit;
  std::size_t to_append = 0;  // samples past relabeling and the duplicate check
  // HELP, TYPE and UNIT change rarely and are sent once a minute: read them
  // from one scrape a minute (at 1 s scrapes a map lookup per line of
  // metadata was about 1% of the daemon's CPU).
  const bool note_metadata = metadata_at_ms_ == kNoMetadataYet ||
                             t_ms - metadata_at_ms_ >= kMetadataEveryMs || t_ms < metadata_at_ms_;
  expfmt::Parser parser(body, format);
  for (bool done = false; !done;) {
    switch (parser.Next()) {
      case expfmt::Entry::kSample: {
        const expfmt::SampleView& s = parser.sample();
        ++out.samples;
        store::SeriesRef ref = 0;
        bool ok = true;
        Entry* e = Lookup(s, RawSeries(s), out, &ref, &ok);
        if (!series_error_.ok()) {
          Status why = std::move(series_error_);
          const LimitExceeded limit = series_limit_;
          series_error_ = Status::Ok();
          series_limit_ = LimitExceeded::kNone;
          return Fail(std::move(why), t_ms, duration_s, /*exposition=*/false, limit);
        }
        if (!ok) break;
        if (e != nullptr) {
          if (e->dropped) {
            e->last_seen = iteration_;
            ++out.relabel_dropped;
            break;
          }
          if (e->last_seen == iteration_) {  // Prometheus keeps the first of duplicates
            ++out.duplicates;
            break;
          }
          e->last_seen = iteration_;
          ref = e->ref;
        }
        // Prometheus's limitAppender counts what reaches the store, after
        // metric relabeling; one over the limit fails the whole scrape.
        if (sample_limit > 0 && ++to_append > sample_limit) {
          return Fail(Status(StatusCode::kOutOfRange,
                             "sample limit exceeded: more than " + std::to_string(sample_limit) +
                                 " samples after metric relabeling (sample_limit)"),
                      t_ms, duration_s, /*exposition=*/false, LimitExceeded::kSampleLimit);
        }
        const bool own_time = options_.honor_timestamps && s.has_timestamp();
        if (own_time && s.timestamp_ms > t_ms + kMaxAheadMs) {
          ++out.out_of_bounds;
          break;
        }
        if (e != nullptr && !own_time) {
          current_.push_back(static_cast<std::uint32_t>(e - entries_.data()));
        }
        AppendOne(ref, own_time ? s.timestamp_ms : t_ms, s.value, out);
        break;
      }
      case expfmt::Entry::kError: {
        Status why(StatusCode::kParseError, "parse error at " + parser.error().Format(""));
        return Fail(std::move(why), t_ms, duration_s, /*exposition=*/true);
      }
      case expfmt::Entry::kEof:
      case expfmt::Entry::kEnd:
        done = true;
        break;
      case expfmt::Entry::kMetadata:
        if (note_metadata) NoteMetadata(parser.metadata());
        break;
      case expfmt::Entry::kComment:
        break;
    }
  }
  if (format == expfmt::Format::kOpenMetrics && !parser.eof_seen()) {
    return Fail(Status(StatusCode::kParseError, "data does not end with # EOF"), t_ms, duration_s,
                /*exposition=*/true);
  }
  out.up = true;
  // Prometheus counts the samples appended after metric relabeling: not the
  // dropped ones, nor a duplicate, nor one the store refused.
  const std::size_t not_added =
      out.relabel_dropped + out.duplicates + out.rejected + out.out_of_bounds;
  out.post_relabel = out.samples > not_added ? out.samples - not_added : 0;
  MarkPreviousStale(t_ms, out);
  if (note_metadata) {
    PublishMetadata();
    metadata_at_ms_ = t_ms;
  }
  std::swap(previous_, current_);
  AppendReport(t_ms, duration_s, out, out);
  Commit(out);
  Compact();
  return out;
}

ScrapeOutcome Ingester::Fail(Status why, std::int64_t t_ms, double duration_s) {
  return Fail(std::move(why), t_ms, duration_s, /*exposition=*/false);
}

ScrapeOutcome Ingester::Fail(Status why, std::int64_t t_ms, double duration_s, bool exposition,
                             LimitExceeded exceeded) {
  // What this scrape appended so far is dropped: a failed scrape is all or nothing.
  if (appender_ != nullptr) appender_->Rollback();
  batch_size_ = 0;
  ScrapeOutcome out;
  out.error = std::move(why);
  out.exposition_error = exposition;
  out.exceeded = exceeded;
  ++iteration_;  // so the next scrape counts nothing as seen before
  MarkPreviousStale(t_ms, out);
  previous_.clear();
  AppendReport(t_ms, duration_s, out, out);
  Commit(out);
  return out;
}

void Ingester::EndOfRun(std::int64_t t_ms) {
  ScrapeOutcome out;
  ++iteration_;
  MarkPreviousStale(t_ms, out);
  previous_.clear();
  if (report_ready_ && reported_) {
    for (const store::SeriesRef ref : report_refs_) AppendOne(ref, t_ms, store::StaleNaN(), out);
    reported_ = false;
  }
  Commit(out);
}

void Ingester::MarkPreviousStale(std::int64_t t_ms, ScrapeOutcome& out) {
  for (const std::uint32_t i : previous_) {
    const Entry& e = entries_[i];
    if (e.last_seen == iteration_) continue;
    AppendOne(e.ref, t_ms, store::StaleNaN(), out);
    ++out.stale_markers;
  }
}

void Ingester::AppendReport(std::int64_t t_ms, double duration_s, const ScrapeOutcome& o,
                            ScrapeOutcome& out) {
  if (!report_ready_) {
    for (std::size_t i = 0; i < report_refs_.size(); ++i) {
      model::Labels labels = target_labels_;
      labels.push_back({std::string(model::kMetricNameLabel), std::string(kReportNames[i])});
      model::SortLabels(labels);
      Result<store::SeriesRef> r = appender().Series(labels);
      if (!r) {
        if (out.store_error.ok()) out.store_error = r.error();
        return;
      }
      report_refs_[i] = *r;
    }
    report_ready_ = true;
  }
  const double values[5] = {o.up ? 1.0 : 0.0, duration_s, static_cast<double>(o.samples),
                            static_cast<double>(o.post_relabel),
                            static_cast<double>(o.series_added)};
  for (std::size_t i = 0; i < report_refs_.size(); ++i) {
    AppendOne(report_refs_[i], t_ms, values[i], out);
  }
  reported_ = true;
}

void Ingester::Commit(ScrapeOutcome& out) {
  if (appender_ == nullptr) return;
  Result<store::CommitResult> r = appender_->Commit();
  if (!r) {
    out.rejected += batch_size_;
    if (out.store_error.ok()) out.store_error = r.error();
    // Nothing of the batch was kept (a full disk, an I/O error): the scrape
    // failed, as Prometheus reports an append error (up 0, the error on the
    // target), rather than a target up whose samples are gone.
    out.up = false;
    if (out.error.ok()) out.error = Status(r.error().code(), "store: " + r.error().message());
  } else {
    out.rejected += r->out_of_order + r->duplicates;
    if (!r->first_error.ok() && out.store_error.ok()) out.store_error = r->first_error;
  }
  batch_size_ = 0;
}

void Ingester::Compact() {
  std::size_t live = 0;
  for (const Entry& e : entries_) live += e.last_seen + kDeadAfter > iteration_ ? 1 : 0;
  const std::size_t dead = entries_.size() - live;
  if (dead < kMinDeadToCompact || dead < live) return;
  std::vector<std::uint32_t> moved_to(entries_.size(), 0);  // new position + 1
  std::vector<Entry> kept;
  kept.reserve(live);
  index_.Clear();
  index_.Reserve(live);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.last_seen + kDeadAfter <= iteration_) continue;
    bool inserted = false;
    const std::uint64_t h =
        FlatHashMap<std::uint32_t>::NonZero(XXH3_64bits(e.raw.data(), e.raw.size()));
    kept.push_back(std::move(e));
    index_.FindOrInsert(h, inserted) = static_cast<std::uint32_t>(kept.size());
    moved_to[i] = static_cast<std::uint32_t>(kept.size());
  }
  entries_ = std::move(kept);
  // Series of the last scrape were all seen in it, so all survived.
  for (std::uint32_t& i : previous_) i = moved_to[i] - 1;
}

void Ingester::NoteMetadata(const expfmt::MetadataView& m) {
  auto it = families_.find(m.name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(m.name), FamilySeen{}).first;
    it->second.metadata.family = std::string(m.name);
    families_changed_ = true;
  }
  FamilySeen& f = it->second;
  f.last_seen = iteration_;
  MetricMetadata& md = f.metadata;
  switch (m.kind) {
    case expfmt::MetadataKind::kHelp:
      if (md.help != m.text) {
        md.help = std::string(m.text);
        families_changed_ = true;
      }
      break;
    case expfmt::MetadataKind::kType:
      if (md.type != m.type) {
        md.type = m.type;
        families_changed_ = true;
      }
      break;
    case expfmt::MetadataKind::kUnit:
      if (md.unit != m.text) {
        md.unit = std::string(m.text);
        families_changed_ = true;
      }
      break;
  }
}

void Ingester::PublishMetadata() {
  families_changed_ |= std::erase_if(families_, [&](const auto& kv) {
                         return kv.second.last_seen != iteration_;
                       }) > 0;
  if (!families_changed_) return;
  families_changed_ = false;
  auto snapshot = std::make_shared<std::vector<MetricMetadata>>();
  snapshot->reserve(families_.size());
  for (const auto& [name, f] : families_) snapshot->push_back(f.metadata);
  std::sort(snapshot->begin(), snapshot->end(),
            [](const MetricMetadata& a, const MetricMetadata& b) { return a.family < b.family; });
  MutexLock lock(metadata_mu_);
  metadata_ = std::move(snapshot);
}

std::shared_ptr<const std::vector<MetricMetadata>> Ingester::metadata() const {
  MutexLock lock(metadata_mu_);
  return metadata_;
}

}  // namespace gpucanary::scrape

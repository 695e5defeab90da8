// gpucanary backfill --data DIR FILE...: appends recorded telemetry (OpenMetrics
// or Prometheus text with timestamps, .gz too) to the embedded store, like
// `promtool tsdb create-blocks-from openmetrics`. One summary line per file on
// stdout; FILE:LINE:COLUMN messages on stderr; exit 0 when every sample went
// in, 3 when a file was unreadable, had bad lines or samples the store
// rejected (the rest is kept). See docs/cli.md.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli/command.h"
#include "expfmt/reader.h"
#include "store/meta_db.h"
#include "store/store.h"

namespace gpucanary::cli {
namespace {

namespace fs = std::filesystem;

// Samples per Commit: large enough to amortise the WAL write, small enough
// that a batch's memory stays a few hundred KiB.
constexpr std::size_t kCommitEvery = 4096;

struct BackfillArgs {
  std::string data;
  std::vector<std::string> files;
  std::size_t max_errors = 20;
};

struct FileResult {
  std::uint64_t samples = 0;   // appended and kept
  std::uint64_t series = 0;    // distinct label sets seen
  std::uint64_t rejected = 0;  // no timestamp, bad labels, out of order, duplicate
  std::string first_rejection;
  std::int64_t max_t = std::numeric_limits<std::int64_t>::min();
};

// Feeds one file's samples to an appender. Each distinct series (metric name
// plus its raw label block) is looked up in the store once.
class FileLoader {
 public:
  FileLoader(store::Store& store, std::string name)
      : appender_(store.NewAppender()), name_(std::move(name)) {}

  void Add(const expfmt::SampleView& s) {
    if (!s.has_timestamp()) return Reject("sample without a timestamp", s);
    std::string key;
    key.reserve(s.name.size() + s.label_text.size());
    key.append(s.name).append(s.label_text);
    auto it = refs_.find(key);
    if (it == refs_.end()) {
      auto ref = appender_->Series(LabelsOf(s));
      if (!ref) return Reject(ref.error().message(), s);
      it = refs_.emplace(std::move(key), *ref).first;
    }
    Status st = appender_->Append(it->second, s.timestamp_ms, s.value);
    if (st.code() == StatusCode::kNotFound) {  // dropped as idle meanwhile: look up again
      auto ref = appender_->Series(LabelsOf(s));
      if (!ref) return Reject(ref.error().message(), s);
      it->second = *ref;
      st = appender_->Append(it->second, s.timestamp_ms, s.value);
    }
    if (!st.ok()) return Reject(st.message(), s);
    if (s.timestamp_ms > result_.max_t) result_.max_t = s.timestamp_ms;
    if (++pending_ >= kCommitEvery) Commit();
  }

  // Commits what is pending. False on an I/O error (reported in io_error()).
  bool Commit() {
    pending_ = 0;
    auto c = appender_->Commit();
    if (!c) {
      io_error_ = c.error().message();
      return false;
    }
    result_.samples += c->appended;
    const std::size_t rejected = c->out_of_order + c->duplicates;
    if (rejected > 0 && result_.first_rejection.empty()) {
      result_.first_rejection = name_ + ": " + c->first_error.message();
    }
    result_.rejected += rejected;
    return true;
  }

  FileResult Finish() {
    result_.series = refs_.size();
    return result_;
  }
  const std::string& io_error() const { return io_error_; }

 private:
  static model::Labels LabelsOf(const expfmt::SampleView& s) {
    model::Labels labels;
    labels.reserve(s.labels.size() + 1);
    labels.push_back({std::string(model::kMetricNameLabel), std::string(s.name)});
    for (const model::LabelView& l : s.labels) {
      labels.push_back({std::string(l.name), std::string(l.value)});
    }
    model::SortLabels(labels);
    return labels;
  }

  void Reject(const std::string& why, const expfmt::SampleView& s) {
    ++result_.rejected;
    if (result_.first_rejection.empty()) {
      result_.first_rejection =
          name_ + ": " + std::string(s.name) + std::string(s.label_text) + ": " + why;
    }
  }

  std::unique_ptr<store::Appender> appender_;
  std::string name_;
  std::unordered_map<std::string, store::SeriesRef> refs_;
  std::size_t pending_ = 0;
  FileResult result_;
  std::string io_error_;
};

std::uint64_t DirectoryBytes(const fs::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) total += it->file_size(size_ec);
  }
  return total;
}

std::string PerSample(std::uint64_t bytes, std::uint64_t samples) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f",
                samples == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(samples));
  return buf;
}

// Seals the open chunks (they hold up to max_chunk_samples per series in
// memory and in the WAL) so the chunk bytes reported are final: the store
// seals a series' open chunk once it has been idle for idle_series_ms, so
// retention "now" is put just past that, with retention itself disabled (see
// OpenOptions), then the WAL is checkpointed.
Status SealOpenChunks(store::Store& store, const store::StoreOptions& options, std::int64_t max_t) {
  if (max_t == std::numeric_limits<std::int64_t>::min()) return Status::Ok();
  if (Status s = store.ApplyRetention(max_t + options.idle_series_ms + 1); !s.ok()) return s;
  return store.Checkpoint();
}

// Backfilled data can be of any age: nothing is deleted by this process.
store::StoreOptions OpenOptions() {
  store::StoreOptions o;
  o.retention_ms = 0;
  o.retention_bytes = 0;
  o.sync_interval_ms = 0;  // synced on checkpoint and close
  return o;
}

// Returns false when the file must count as bad input.
bool BackfillFile(const std::string& file, const BackfillArgs& args, store::Store& store,
                  const store::StoreOptions& options, CommandContext& ctx) {
  expfmt::ReadOptions read_options;
  read_options.skip_bad_lines = true;  // keep the good lines, report the bad ones
  read_options.max_messages = args.max_errors;
  FileLoader loader(store, file);
  auto report = expfmt::ReadFile(file, read_options,
                                 [&loader](const expfmt::SampleView& s, std::string_view,
                                           model::MetricType) { loader.Add(s); });
  const bool committed = loader.Commit();
  if (!report) {
    ctx.err << "gpucanary backfill: " << report.error().message() << "\n";
    return false;
  }
  for (const std::string& m : report->messages) ctx.err << m << "\n";
  if (report->bad_lines > report->messages.size()) {
    ctx.err << report->name << ": ... and " << (report->bad_lines - report->messages.size())
            << " more bad lines\n";
  }
  if (!committed) {
    ctx.err << "gpucanary backfill: " << file << ": " << loader.io_error() << "\n";
    return false;
  }
  const FileResult r = loader.Finish();
  if (!r.first_rejection.empty()) ctx.err << r.first_rejection << "\n";
  if (Status s = SealOpenChunks(store, options, r.max_t); !s.ok()) {
    ctx.err << "gpucanary backfill: " << args.data << ": " << s.message() << "\n";
    return false;
  }
  const store::StoreStats st = store.stats();
  const std::uint64_t dir_bytes = DirectoryBytes(args.data);
  ctx.out << report->name << ": " << r.samples << " samples, " << r.series << " series, "
          << r.rejected << " rejected, " << report->bad_lines
          << " bad lines; store: " << st.segment_bytes << " B chunk segments ("
          << PerSample(st.segment_bytes, st.samples_appended) << " B/sample), " << dir_bytes
          << " B on disk (" << PerSample(dir_bytes, st.samples_appended) << " B/sample)\n";
  return report->ok() && r.rejected == 0;
}

void Run(const BackfillArgs& args, CommandContext& ctx) {
  const store::StoreOptions options = OpenOptions();
  const std::filesystem::path data(args.data);
  std::error_code ec;
  const bool fresh =
      !std::filesystem::exists(data / "wal", ec) && !std::filesystem::exists(data / "chunks", ec);
  auto store = store::Store::Open(args.data, options);
  if (!store) {
    ctx.err << "gpucanary backfill: " << args.data << ": " << store.error().message() << "\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  // A new data directory gets its (empty) metadata too, so that `serve` on
  // it starts; one that holds telemetry but lost its meta.sqlite is left as
  // it is, for `serve` to refuse (docs/configuration.md, "Metadata").
  if (fresh && !std::filesystem::exists(data / "meta.sqlite", ec)) {
    auto meta = store::MetaDb::Open(data / "meta.sqlite");
    if (!meta) {
      ctx.err << "gpucanary backfill: " << meta.error().message() << "\n";
      ctx.exit_code = kExitFail;
      return;
    }
  }
  bool all_ok = true;
  for (const std::string& file : args.files) {
    all_ok = BackfillFile(file, args, **store, options, ctx) && all_ok;
  }
  ctx.exit_code = all_ok ? kExitOk : kExitBadInput;
}

}  // namespace

void RegisterBackfillCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<BackfillArgs>();
  CLI::App* cmd =
      app.add_subcommand("backfill",
                         "Append recorded telemetry files to a data directory (like promtool tsdb "
                         "create-blocks-from openmetrics)");
  cmd->add_option("--data", args->data, "The store's data directory (created when missing)")
      ->required();
  cmd->add_option("files", args->files,
                  "Recorded telemetry files with timestamps ('-' reads standard input; .gz is "
                  "gunzipped)")
      ->required();
  cmd->add_option("--max-errors", args->max_errors, "Error messages printed per file");
  cmd->callback([args, &ctx] { Run(*args, ctx); });
}

}  // namespace gpucanary::cli

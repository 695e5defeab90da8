#include "recording/recording_writer.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <utility>

#include "model/escaping.h"
#include "model/names.h"
#include "model/utf8.h"
#include "recording/openmetrics_text.h"

namespace gpucanary::recording {
namespace {

// Output is accumulated in memory and written in blocks of about this size, so
// a sample costs no system call.
constexpr size_t kFlushThreshold = size_t{256} * 1024;
constexpr std::string_view kTotalSuffix = "_total";
// A series key packs the label-set id above the family index.
constexpr unsigned kFamilyIndexBits = 20;

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

gzFile AsGz(void* gz) { return static_cast<gzFile>(gz); }

}  // namespace

Result<std::unique_ptr<RecordingWriter>> RecordingWriter::Open(const std::string& path) {
  if (path == "-") {
    return std::unique_ptr<RecordingWriter>(
        new RecordingWriter(path, SinkKind::kStdout, stdout, nullptr));
  }
  if (EndsWith(path, ".gz")) {
    errno = 0;
    gzFile gz = gzopen(path.c_str(), "wb");
    if (gz == nullptr) {
      return Error(StatusCode::kIoError,
                   "cannot create '" + path + "': " + (errno ? ErrnoMessage(errno) : "zlib error"));
    }
    gzbuffer(gz, 128 * 1024);
    return std::unique_ptr<RecordingWriter>(
        new RecordingWriter(path, SinkKind::kGzip, nullptr, gz));
  }
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return Error(StatusCode::kIoError, "cannot create '" + path + "': " + ErrnoMessage(errno));
  }
  // buffer_ already batches writes; a second stdio buffer would only copy.
  std::setvbuf(file, nullptr, _IONBF, 0);
  return std::unique_ptr<RecordingWriter>(
      new RecordingWriter(path, SinkKind::kFile, file, nullptr));
}

RecordingWriter::RecordingWriter(std::string path, SinkKind sink, std::FILE* file, void* gz)
    : path_(std::move(path)), sink_(sink), file_(file), gz_(gz) {
  buffer_.reserve(kFlushThreshold + 4096);
}

RecordingWriter::~RecordingWriter() {
  if (closed_) return;
  if (error_.ok()) (void)FlushBuffer();
  switch (sink_) {
    case SinkKind::kFile:
      std::fclose(file_);
      break;
    case SinkKind::kStdout:
      std::fflush(file_);
      break;
    case SinkKind::kGzip:
      gzclose(AsGz(gz_));
      break;
  }
}

Status RecordingWriter::DeclareFamily(std::string_view name, model::MetricType kind,
                                      std::string_view help) {
  if (!model::IsValidMetricName(name)) {
    return Status(StatusCode::kInvalidArgument, "invalid metric name '" + std::string(name) + "'");
  }
  if (!model::IsValidUtf8(help)) {
    return Status(StatusCode::kInvalidArgument,
                  "help text of '" + std::string(name) + "' is not valid UTF-8");
  }
  if (kind != model::MetricType::kGauge && kind != model::MetricType::kCounter &&
      kind != model::MetricType::kUnknown && kind != model::MetricType::kHistogram) {
    return Status(StatusCode::kInvalidArgument, "metric '" + std::string(name) + "' has type " +
                                                    std::string(model::MetricTypeName(kind)) +
                                                    ", which recordings do not hold");
  }
  if (auto it = families_.find(name); it != families_.end()) {
    if (it->second.kind == kind && it->second.help == help) return Status::Ok();
    return Status(StatusCode::kInvalidArgument,
                  "metric '" + std::string(name) + "' was already declared differently");
  }
  std::string family_name(name);
  // A counter without the _total suffix cannot be an OpenMetrics counter under
  // its own name; "unknown" keeps the name (and the value) exactly as given.
  model::MetricType exposed_kind =
      kind == model::MetricType::kCounter ? model::MetricType::kUnknown : kind;
  if (kind == model::MetricType::kCounter && EndsWith(name, kTotalSuffix)) {
    exposed_kind = model::MetricType::kCounter;
    family_name.resize(name.size() - kTotalSuffix.size());
    if (!model::IsValidMetricName(family_name)) {
      return Status(StatusCode::kInvalidArgument,
                    "counter '" + std::string(name) + "' has no family name before _total");
    }
  }
  if (family_names_.contains(family_name)) {
    return Status(StatusCode::kInvalidArgument, "metric '" + std::string(name) +
                                                    "' needs family name '" + family_name +
                                                    "', which another metric already uses");
  }
  if (families_.size() >= (std::uint64_t{1} << kFamilyIndexBits)) {
    return Status(StatusCode::kInvalidArgument, "too many metric families");
  }
  if (kind == model::MetricType::kHistogram) {
    for (std::string_view suffix : {"_bucket", "_count", "_sum"}) {
      const std::string sample = std::string(name) + std::string(suffix);
      if (families_.contains(sample) || histogram_samples_.contains(sample)) {
        return Status(StatusCode::kInvalidArgument, "histogram '" + std::string(name) +
                                                        "' needs sample name '" + sample +
                                                        "', which another metric already uses");
      }
    }
    for (std::string_view suffix : {"_bucket", "_count", "_sum"}) {
      histogram_samples_.emplace(std::string(name) + std::string(suffix), std::string(name));
    }
  } else if (histogram_samples_.contains(name)) {
    return Status(StatusCode::kInvalidArgument,
                  "metric '" + std::string(name) + "' is a sample name of a histogram");
  }
  family_names_.insert(family_name);
  const auto index = static_cast<std::uint32_t>(families_.size());
  families_.emplace(std::string(name),
                    Family{std::move(family_name), kind, exposed_kind, std::string(help), index});
  return Status::Ok();
}

Status RecordingWriter::Append(std::string_view name, std::span<const model::LabelView> labels,
                               double value, std::int64_t timestamp_ms) {
  GC_RETURN_IF_ERROR(CheckUsable());
  auto family_it = families_.find(name);
  bool histogram_count = false;  // a _bucket or _count sample
  if (family_it == families_.end()) {
    if (auto h = histogram_samples_.find(name); h != histogram_samples_.end()) {
      family_it = families_.find(h->second);
      histogram_count = !EndsWith(name, "_sum");
    }
  } else if (family_it->second.kind == model::MetricType::kHistogram) {
    family_it = families_.end();  // "x" itself is no sample name of histogram x
  }
  if (family_it == families_.end()) {
    return Status(StatusCode::kInvalidArgument,
                  "metric '" + std::string(name) + "' was not declared");
  }
  Family& family = family_it->second;
  // OpenMetrics: a counter's _total "MUST NOT be NaN or negative"; so are a
  // histogram's bucket and count values.
  if ((family.exposed_kind == model::MetricType::kCounter || histogram_count) &&
      (std::isnan(value) || value < 0)) {
    return Status(StatusCode::kInvalidArgument,
                  "counter '" + std::string(name) + "' cannot take a negative or NaN value");
  }
  GC_RETURN_IF_ERROR(UseLabels(labels));

  // One series = one (label set, family) pair.
  const std::uint64_t series_key = (label_set_id_ << kFamilyIndexBits) | family.index;
  auto [last_it, inserted] = last_timestamp_.try_emplace(series_key, timestamp_ms);
  if (!inserted) {
    if (timestamp_ms < last_it->second) {
      return Status(StatusCode::kInvalidArgument,
                    "sample of " + std::string(name) + label_text_ + " at " +
                        std::to_string(timestamp_ms) +
                        " ms is older than the series' last sample at " +
                        std::to_string(last_it->second) + " ms");
    }
    last_it->second = timestamp_ms;
  }

  if (!family.metadata_written) AppendMetadata(family);
  buffer_ += name;
  buffer_ += label_text_;
  buffer_ += ' ';
  AppendValue(buffer_, value);
  buffer_ += ' ';
  if (timestamp_ms != timestamp_text_ms_ || timestamp_text_.empty()) {
    timestamp_text_.clear();
    AppendTimestamp(timestamp_text_, timestamp_ms);
    timestamp_text_ms_ = timestamp_ms;
  }
  buffer_ += timestamp_text_;
  buffer_ += '\n';
  ++samples_written_;
  if (buffer_.size() >= kFlushThreshold) return FlushBuffer();
  return Status::Ok();
}

Status RecordingWriter::Close() {
  GC_RETURN_IF_ERROR(CheckUsable());
  closed_ = true;
  buffer_ += "# EOF\n";
  Status status = FlushBuffer();
  switch (sink_) {
    case SinkKind::kFile:
      if (std::fclose(file_) != 0 && status.ok()) {
        status =
            Status(StatusCode::kIoError, "cannot close '" + path_ + "': " + ErrnoMessage(errno));
      }
      break;
    case SinkKind::kStdout:
      if (std::fflush(file_) != 0 && status.ok()) {
        status =
            Status(StatusCode::kIoError, "cannot flush standard output: " + ErrnoMessage(errno));
      }
      break;
    case SinkKind::kGzip: {
      errno = 0;
      const int rc = gzclose(AsGz(gz_));
      if (rc != Z_OK && status.ok()) {
        status = Status(
            StatusCode::kIoError,
            "cannot close '" + path_ +
                "': " + (rc == Z_ERRNO ? ErrnoMessage(errno) : "zlib error " + std::to_string(rc)));
      }
      break;
    }
  }
  file_ = nullptr;
  gz_ = nullptr;
  return status;
}

Status RecordingWriter::CheckUsable() const {
  if (closed_) return Status(StatusCode::kInvalidArgument, "'" + path_ + "' is already closed");
  return error_;
}

Status RecordingWriter::ValidateLabels(std::span<const model::LabelView> labels) const {
  for (size_t i = 0; i < labels.size(); ++i) {
    if (!model::IsValidLabelName(labels[i].name)) {
      return Status(StatusCode::kInvalidArgument,
                    "invalid label name '" + std::string(labels[i].name) + "'");
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels[j].name == labels[i].name) {
        return Status(StatusCode::kInvalidArgument,
                      "label '" + std::string(labels[i].name) + "' is repeated");
      }
    }
  }
  return Status::Ok();
}

Status RecordingWriter::UseLabels(std::span<const model::LabelView> labels) {
  // Callers usually append every metric of one entity in a row: the labels of
  // the previous call are then already checked, rendered and interned.
  const auto same_as_last = [&] {
    if (labels.size() != last_labels_.size()) return false;
    for (size_t i = 0; i < labels.size(); ++i) {
      if (labels[i].name != last_labels_[i].first || labels[i].value != last_labels_[i].second) {
        return false;
      }
    }
    return true;
  };
  if (has_last_labels_ && same_as_last()) return Status::Ok();

  GC_RETURN_IF_ERROR(ValidateLabels(labels));
  std::string text;
  for (const model::LabelView& label : labels) {
    if (label.value.empty()) continue;
    text += text.empty() ? '{' : ',';
    text += label.name;
    text += "=\"";
    model::AppendEscaped(text, label.value);
    text += '"';
  }
  if (!text.empty()) text += '}';
  // With valid names the rendered text identifies the label set exactly, so
  // values need the UTF-8 check only the first time a label set is seen.
  auto it = label_set_ids_.find(std::string_view(text));
  if (it == label_set_ids_.end()) {
    for (const model::LabelView& label : labels) {
      if (!model::IsValidUtf8(label.value)) {
        return Status(StatusCode::kInvalidArgument,
                      "value of label '" + std::string(label.name) + "' is not valid UTF-8");
      }
    }
    it = label_set_ids_.emplace(text, label_set_ids_.size()).first;
  }
  label_set_id_ = it->second;
  label_text_ = std::move(text);
  last_labels_.resize(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    last_labels_[i].first.assign(labels[i].name);
    last_labels_[i].second.assign(labels[i].value);
  }
  has_last_labels_ = true;
  return Status::Ok();
}

void RecordingWriter::AppendMetadata(Family& family) {
  if (!family.help.empty()) {
    buffer_ += "# HELP ";
    buffer_ += family.family_name;
    buffer_ += ' ';
    model::AppendEscaped(buffer_, family.help);
    buffer_ += '\n';
  }
  buffer_ += "# TYPE ";
  buffer_ += family.family_name;
  buffer_ += ' ';
  buffer_ += model::MetricTypeName(family.exposed_kind);
  buffer_ += '\n';
  family.metadata_written = true;
}

Status RecordingWriter::FlushBuffer() {
  if (buffer_.empty()) return Status::Ok();
  const size_t size = buffer_.size();
  if (sink_ == SinkKind::kGzip) {
    size_t offset = 0;
    while (offset < size) {
      const auto chunk = static_cast<unsigned>(std::min<size_t>(size - offset, INT_MAX / 2));
      errno = 0;
      if (gzwrite(AsGz(gz_), buffer_.data() + offset, chunk) <= 0) {
        int zlib_error = Z_OK;
        const char* message = gzerror(AsGz(gz_), &zlib_error);
        return Fail(Status(
            StatusCode::kIoError,
            "cannot write '" + path_ +
                "': " + (zlib_error == Z_ERRNO ? ErrnoMessage(errno) : std::string(message))));
      }
      offset += chunk;
    }
  } else if (std::fwrite(buffer_.data(), 1, size, file_) != size) {
    return Fail(
        Status(StatusCode::kIoError, "cannot write '" + path_ + "': " + ErrnoMessage(errno)));
  }
  buffer_.clear();
  return Status::Ok();
}

Status RecordingWriter::Fail(Status status) {
  error_ = status;
  buffer_.clear();
  return status;
}

}  // namespace gpucanary::recording

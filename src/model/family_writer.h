#pragma once
// The one writer of gpucanary's own metric families (gpucanary_* on the
// daemon's and the collector's /metrics), in the Prometheus text format 0.0.4:
//
//   # HELP <name> <help>
//   # TYPE <name> <type>
//   <name>{<label>="<escaped value>",...} <value>
//
// Values are text the caller renders, so that every family keeps its number
// format. Not thread-safe; appends to a string the caller owns.

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "model/label_view.h"
#include "model/metric_type.h"

namespace gpucanary::model {

class FamilyWriter {
 public:
  explicit FamilyWriter(std::string& out) : out_(out) {}

  // Starts family `name`: its "# HELP" and "# TYPE" lines. HELP text is
  // escaped as 0.0.4 wants it (backslash -> \\, line feed -> \n). Later
  // samples are samples of `name`.
  void Family(std::string_view name, MetricType type, std::string_view help);

  // One sample of the current family: `labels` in the order given, each
  // written even when its value is empty, values escaped (model::AppendEscaped);
  // no braces without labels. `value` is written as given.
  void Sample(std::span<const LabelView> labels, std::string_view value);
  void Sample(std::initializer_list<LabelView> labels, std::string_view value) {
    Sample(std::span<const LabelView>(labels.begin(), labels.size()), value);
  }

  // A sample whose label block the caller rendered ("{...}" or empty), for a
  // family that shares its labels with another writer's series.
  void SampleWithLabelText(std::string_view label_text, std::string_view value);

 private:
  std::string& out_;
  std::string name_;
};

// Appends HELP text escaped for the text format 0.0.4: backslash -> \\ and
// line feed -> \n; a double quote stays as it is (it is no escape there).
void AppendEscapedHelp(std::string& out, std::string_view help);

}  // namespace gpucanary::model

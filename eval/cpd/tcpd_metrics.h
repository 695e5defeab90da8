#pragma once
// Scoring change point detectors the way TCPDBench does (van den Burg &
// Williams, "An Evaluation of Change Point Detection Algorithms",
// arXiv:2003.06222; metrics restated in shared/data/tcpd/README.md), and
// loading the TCPD series and annotations that ship in shared/data/tcpd.
//
//   auto data = tcpd::LoadDataset(dir);                 // Result<std::vector<LabelledSeries>>
//   for (const auto& s : *data) {
//     auto cps = cpd::Segment(s.dims[0]);
//     double f1 = tcpd::FMeasure(s.annotators, cps).f1;
//     double cover = tcpd::Covering(s.annotators, cps, s.n_obs);
//   }
//
// Every change point here is a 0-based index of the first sample of a new
// segment, as in TCPD's annotations and in cpd.h. Thread-safe free functions.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace gpucanary::eval::cpd::tcpd {

// TCPDBench's margin: a prediction within +-5 indices of a true change
// point matches it.
inline constexpr std::size_t kMargin = 5;

// One annotator's change points (any order; duplicates count once).
using ChangePoints = std::vector<std::size_t>;

struct FMeasureResult {
  double f1 = 0;
  double precision = 0;
  double recall = 0;
};

// The F1 measure of TCPDBench's metrics.py `f_measure` (alpha = 0.5):
//  - index 0 is added to every annotator's set and to the predictions;
//  - precision = |true_positives(union of annotators, predictions)| / |predictions|;
//  - recall = mean over annotators of |true_positives(annotator, predictions)| / |annotator|;
//  - true_positives takes the true points one by one and gives each the
//    closest prediction within `margin` not yet taken (ties: the smaller
//    index), so no prediction counts twice.
// The one liberty: we take the true points in ascending order; metrics.py
// walks a Python set, whose order is CPython's hash-table order (ascending
// for most small sets, not all). The counts differ only when true points
// closer than 2 * margin compete for the same predictions; the zero
// detector's scores never depend on it.
// With no annotators the recall is taken as 1 (metrics.py would divide by zero).
FMeasureResult FMeasure(std::span<const ChangePoints> annotators,
                        std::span<const std::size_t> predictions, std::size_t margin = kMargin);

// Number of true points matched, as metrics.py's `true_positives(T, X, margin)`.
// Exposed for tests of the matching rule.
std::size_t TruePositives(std::span<const std::size_t> truth,
                          std::span<const std::size_t> predictions, std::size_t margin = kMargin);

// Segmentation covering (Arbelaez et al. 2010, eq. 8) of each annotator's
// segmentation of [0, n_obs) by the predicted one, averaged over annotators,
// as metrics.py's `covering`: each true segment is weighted by its length and
// scored by its best Jaccard overlap with a predicted segment. Change points
// at 0 or >= n_obs do not cut anything. Returns 0 when n_obs is 0 or there are
// no annotators.
double Covering(std::span<const ChangePoints> annotators, std::span<const std::size_t> predictions,
                std::size_t n_obs);

// One TCPD series with its annotations.
struct LabelledSeries {
  std::string name;
  std::size_t n_obs = 0;
  // dims[k][t]: dimension k at time t; JSON null (missing) reads as NaN.
  std::vector<std::vector<double>> dims;
  // One entry per annotator, in the order of their ids in annotations.json.
  std::vector<ChangePoints> annotators;
};

// Reads every `<dir>/datasets/*.json` series (sorted by name) and its
// annotations from `<dir>/annotations.json`. Errors: kIoError when a file
// cannot be read, kParseError with the file and field when one does not
// follow TCPD's schema, kNotFound for a series with no annotations.
Result<std::vector<LabelledSeries>> LoadDataset(const std::filesystem::path& dir);

// A detector under test: change points of one univariate series (NaN =
// missing), with cpd.h's conventions.
using Detector = std::function<std::vector<std::size_t>(std::span<const double>)>;

// One row of a score table: a detector against the zero detector (no change
// points) on one series.
struct ScoreRow {
  std::string name;
  std::size_t n_obs = 0;
  std::size_t changes = 0;  // how many change points the detector reported
  double f1 = 0;
  double cover = 0;
  double zero_f1 = 0;
  double zero_cover = 0;
};

struct ScoreTable {
  std::vector<ScoreRow> rows;  // in the order of the series given
  double mean_f1 = 0;          // means over rows; 0 when there are none
  double mean_cover = 0;
  double zero_mean_f1 = 0;
  double zero_mean_cover = 0;
};

// Runs `detector` on every univariate series (multivariate ones, such as
// run_log, are skipped) and scores it with FMeasure and Covering.
ScoreTable ScoreUnivariate(std::span<const LabelledSeries> data, const Detector& detector);

// The table as Markdown: one row per series, then the means.
std::string FormatMarkdown(const ScoreTable& table);

}  // namespace gpucanary::eval::cpd::tcpd

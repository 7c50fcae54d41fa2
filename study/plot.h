// The study's plots, as gnuplot scripts plus data files rendered to PNG and SVG:
//   - accuracy vs parameters: one panel per task split (the probe included), one line per
//     encoder, the mean over seeds with its 95% interval (study/stats.h) as error bars, the
//     parameter axis labelled with the cells' counts (ParamsXTics), and the floors as horizontal
//     lines (the majority class; the second-segment-only control on pair tasks);
//   - learning curves: held-out MLM loss against pretraining step, one line per cell, and the
//     context-free floor (data::ContextFreeMlmLoss) as a horizontal line when it is known;
//   - the probe's curve: test accuracy on the shift-k probe tasks against k, one panel per size,
//     one line per encoder (pretrained solid, from scratch dashed in the same colour) with the
//     same intervals, and the majority class as a floor.
#ifndef GMLP_STUDY_PLOT_H_
#define GMLP_STUDY_PLOT_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "study/report.h"
#include "study/results_table.h"

namespace gmlp::study {

// The parameter axis's gnuplot tics ("'1.76M' 1760000, ..."): one labelled tic per count, but
// counts within kTickGroupRatio of the first of their group (the encoders of one size, matched
// in parameters) share one label "lo-hi" at their geometric middle, each drawn as an unlabelled
// minor tic, so labels never overlap.
constexpr double kTickGroupRatio = 1.25;
std::string ParamsXTics(const std::set<int64_t>& params);

// Writes <dir>/<basename>.gp and its data files from results.csv's rows and runs gnuplot. Returns
// an error naming the missing gnuplot (install gnuplot-nox) or its message if rendering fails;
// the script stays for a re-run.
absl::Status WritePlot(const std::vector<ResultRow>& rows, const std::string& dir,
                       const std::string& basename);

// The learning-curve plot of every cell with a curve, the same way; `context_free_loss` > 0
// draws that floor.
absl::Status WriteCurvesPlot(const std::vector<CellResult>& cells, double context_free_loss,
                             const std::string& dir, const std::string& basename);

// The probe curve's basename in a study's output.
inline constexpr char kProbeShiftPlot[] = "probe_vs_shift";

// The probe's curve from results.csv's probe-shift-<k> rows (the reported split); writes nothing
// and returns OK when there are none.
absl::Status WriteProbeShiftPlot(const std::vector<ResultRow>& rows, const std::string& dir,
                                 const std::string& basename);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_PLOT_H_

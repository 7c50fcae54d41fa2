// The study's accuracy-vs-parameters plot: a gnuplot script plus data files, rendered to PNG
// and SVG (log x = parameters, one panel per task, one line per encoder of the arch table,
// median over seeds with min-max error bars).
#ifndef GMLP_STUDY_PLOT_H_
#define GMLP_STUDY_PLOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "study/report.h"

namespace gmlp::study {

// Writes <dir>/<basename>.gp plus one data file per (task, arch) and runs gnuplot to render
// <dir>/<basename>.png and .svg. Returns an error naming the missing gnuplot (install
// gnuplot-nox) or its message if rendering fails; the script stays for a re-run.
absl::Status WritePlot(const std::vector<CellResult>& cells, const std::string& dir,
                       const std::string& basename);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_PLOT_H_

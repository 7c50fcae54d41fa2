// Run metrics: the JSONL metrics file (one JSON object per line; only rank 0 writes) and the same
// scalars as TensorBoard events, the live progress line on a terminal, and the GEMM peak that MFU
// is measured against.
#ifndef GMLP_PRETRAIN_METRICS_H_
#define GMLP_PRETRAIN_METRICS_H_

#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/tensorboard.h"

namespace gmlp::pretrain {

class MetricsLog {
 public:
  // Opens `path` for appending. `keep_through_step` >= 0 (a resume) first drops the records of
  // later steps, which the resumed run recomputes; -1 starts the file afresh. A non-empty
  // `tensorboard_dir` gets a new event file (EventWriter) that starts with a restart marker at
  // keep_through_step + 1: TensorBoard then drops what earlier event files there logged at later
  // steps, as this drops those lines (0 on a fresh start: all of them).
  static absl::StatusOr<std::unique_ptr<MetricsLog>> Open(const std::string& path,
                                                          int64_t keep_through_step,
                                                          const std::string& tensorboard_dir = "");
  ~MetricsLog();

  // Appends one record as a line and flushes it; with an event file, also every number of the
  // record but "step" as a scalar tagged with its key, at the record's step, in one event. One
  // call writes both, so no scalar is in one and not the other.
  absl::Status Write(const nlohmann::json& record);

  // The event file ("" without one).
  std::string events_path() const { return events_ ? events_->path() : ""; }

  // The "elapsed_s" of the last record kept from an earlier run by Open (0 when none).
  double kept_elapsed_s() const { return kept_elapsed_s_; }

 private:
  MetricsLog(std::string path, std::FILE* file, double kept_elapsed_s)
      : path_(std::move(path)), file_(file), kept_elapsed_s_(kept_elapsed_s) {}
  std::string path_;
  std::FILE* file_;
  double kept_elapsed_s_;
  std::unique_ptr<EventWriter> events_;
};

// One-line live display with ETA when `stream` is a terminal, plain lines otherwise.
class Progress {
 public:
  explicit Progress(std::FILE* stream);
  ~Progress();
  // Shows a training record (as written to the metrics file) at `step` of `total_steps`.
  void Train(const nlohmann::json& record, int64_t total_steps, double eta_s);
  // Prints an evaluation or other message on its own line.
  void Line(const std::string& text);

 private:
  std::FILE* stream_;
  bool tty_;
  bool open_line_ = false;
};

// fp32 (or bf16) GEMM rate of this process with its current intra-op threads (or of a GPU), in
// GFLOP/s, measured on 1024^3 (GPU: 8192^3) matrix products for about `seconds`: on the CPU the
// faster of a plain product and one accumulated into its output (model/gemm.h).
double MeasureGemmPeakGflops(bool bf16, double seconds = 0.3, torch::Device device = torch::kCPU);

// "1h02m", "3m12s", "45s".
std::string FormatDuration(double seconds);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_METRICS_H_

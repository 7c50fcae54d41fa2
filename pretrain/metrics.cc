#include "pretrain/metrics.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/status.h"

namespace gmlp::pretrain {

absl::StatusOr<std::unique_ptr<MetricsLog>> MetricsLog::Open(const std::string& path,
                                                             int64_t keep_through_step,
                                                             const std::string& tensorboard_dir) {
  std::string kept;
  double kept_elapsed_s = 0;
  if (keep_through_step >= 0 && PathExists(path)) {
    GMLP_ASSIGN_OR_RETURN(std::string old, ReadFile(path));
    for (absl::string_view line : absl::StrSplit(old, '\n', absl::SkipEmpty())) {
      // A SIGKILL can leave a torn last line; it is dropped like a later step.
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object()) continue;
      if (j.value("step", int64_t{0}) > keep_through_step) continue;
      kept_elapsed_s = j.value("elapsed_s", kept_elapsed_s);
      absl::StrAppend(&kept, line, "\n");
    }
  }
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(path, kept));
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open for appending"));
  }
  std::unique_ptr<MetricsLog> log(new MetricsLog(path, f, kept_elapsed_s));
  if (!tensorboard_dir.empty()) {
    GMLP_ASSIGN_OR_RETURN(log->events_, EventWriter::Open(tensorboard_dir));
    GMLP_RETURN_IF_ERROR(log->events_->WriteStart(keep_through_step + 1));
  }
  return log;
}

MetricsLog::~MetricsLog() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status MetricsLog::Write(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path_, ": cannot append metrics (disk full?)"));
  }
  if (events_ == nullptr) return absl::OkStatus();
  Scalars scalars;
  for (const auto& [key, value] : record.items()) {
    if (key != "step" && value.is_number()) scalars.emplace_back(key, value.get<double>());
  }
  return events_->WriteScalars(record.value("step", int64_t{0}), scalars);
}

Progress::Progress(std::FILE* stream) : stream_(stream), tty_(::isatty(::fileno(stream)) != 0) {}

Progress::~Progress() {
  if (open_line_) std::fputc('\n', stream_);
}

void Progress::Train(const nlohmann::json& r, int64_t total_steps, double eta_s) {
  const std::string text = absl::StrFormat(
      "step %d/%d  loss %.4f  lr %.3g  gnorm %.3g  %.0f tok/s  MFU %.3f  data %.1f%%  ETA %s",
      r.value("step", int64_t{0}), total_steps, r.value("loss", 0.0), r.value("lr", 0.0),
      r.value("grad_norm", 0.0), r.value("tokens_per_s", 0.0), r.value("mfu", 0.0),
      100.0 * r.value("data_wait_frac", 0.0), FormatDuration(eta_s));
  if (tty_) {
    std::fprintf(stream_, "\r\033[K%s", text.c_str());
    open_line_ = true;
  } else {
    std::fprintf(stream_, "%s\n", text.c_str());
  }
  std::fflush(stream_);
}

void Progress::Line(const std::string& text) {
  if (open_line_) {
    std::fputc('\n', stream_);
    open_line_ = false;
  }
  std::fprintf(stream_, "%s\n", text.c_str());
  std::fflush(stream_);
}

double MeasureGemmPeakGflops(bool bf16, double seconds, torch::Device device) {
  torch::NoGradGuard no_grad;
  const bool cuda = device.is_cuda();
  const int64_t n = cuda ? 8192 : 1024;
  const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
  torch::Tensor a = torch::randn({n, n}).to(device, dtype);
  torch::Tensor b = torch::randn({n, n}).to(device, dtype);
  torch::Tensor c = torch::mm(a, b);  // warm-up
  using Clock = std::chrono::steady_clock;
  auto rate = [&](const auto& product, double s) {
    product();
    if (cuda) torch::cuda::synchronize(device.index());
    int64_t reps = 0;
    const auto start = Clock::now();
    double elapsed = 0.0;
    do {
      product();
      if (cuda) torch::cuda::synchronize(device.index());
      ++reps;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < s);
    return 2.0 * n * n * n * reps / elapsed / 1e9;
  };
  if (cuda) return rate([&] { torch::mm_out(c, a, b); }, seconds);
  // On the CPU the faster of a plain product (beta = 0) and one accumulated into the output
  // (beta = 1, as model/gemm.h runs float32 products: OpenBLAS scales by beta != 1 slowly).
  return std::max(rate([&] { torch::mm_out(c, a, b); }, seconds / 2),
                  rate([&] { c.addmm_(a, b); }, seconds / 2));
}

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return absl::StrFormat("%dh%02dm", t / 3600, (t % 3600) / 60);
  if (t >= 60) return absl::StrFormat("%dm%02ds", t / 60, t % 60);
  return absl::StrFormat("%ds", t);
}

}  // namespace gmlp::pretrain

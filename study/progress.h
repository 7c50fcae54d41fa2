// What the study's stages share: progress lines on stderr and the advice of errors about an
// output of the study that is damaged.
#ifndef GMLP_STUDY_PROGRESS_H_
#define GMLP_STUDY_PROGRESS_H_

#include <chrono>
#include <cstdio>
#include <string>

namespace gmlp::study {

using Clock = std::chrono::steady_clock;

// Ends the error about a damaged file the study wrote.
inline constexpr char kRedo[] = "delete it to redo that step";

// Progress lines: "[study 12:34 elapsed] ...".
class Progress {
 public:
  Progress() : t0_(Clock::now()) {}
  void operator()(const std::string& msg) const {
    const double s = Seconds();
    std::fprintf(stderr, "[study %02d:%02d] %s\n", static_cast<int>(s / 60),
                 static_cast<int>(s) % 60, msg.c_str());
    std::fflush(stderr);
  }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

 private:
  Clock::time_point t0_;
};

}  // namespace gmlp::study

#endif  // GMLP_STUDY_PROGRESS_H_

// Provenance of outputs (see provenance.h).
#include "model/provenance.h"

#include <torch/version.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/version.h"

#ifdef GMLP_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace gmlp::model {

std::string CpuDescription() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, name = "unknown CPU";
  bool bf16 = false, amx = false, have_flags = false;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0 && name == "unknown CPU") {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        name = std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
      }
    } else if (line.rfind("flags", 0) == 0 && !have_flags) {
      have_flags = true;
      const std::string flags = line + " ";
      bf16 = flags.find(" avx512_bf16 ") != std::string::npos;
      amx = flags.find(" amx_bf16 ") != std::string::npos;
    }
  }
  std::vector<std::string> native;
  if (bf16) native.push_back("AVX-512 BF16");
  if (amx) native.push_back("AMX");
  std::vector<std::string> caps;
  for (const char* var : kInstructionSetCaps) {
    const char* value = std::getenv(var);
    if (value != nullptr && *value != '\0') caps.push_back(absl::StrCat(var, "=", value));
  }
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return absl::StrCat(
      name, " (", cores, " cores; ",
      native.empty() ? "bf16 emulated: no AVX-512 BF16 or AMX" : absl::StrJoin(native, ", "),
      caps.empty() ? "" : absl::StrCat("; instruction sets capped by ", absl::StrJoin(caps, ", ")),
      ")");
}

nlohmann::ordered_json Provenance(const torch::Device& device, int64_t world_size) {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string where = device.str();
#ifdef GMLP_WITH_CUDA
  if (device.is_cuda()) {
    where = absl::StrCat(
        where, ": ", at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0)->name);
  }
#endif
  return {{"gmlp", GmlpVersion()},
          {"libtorch", TORCH_VERSION},
          {"device", where},
          {"cpu", CpuDescription()},
          {"threads", torch::get_num_threads()},
          {"world_size", world_size},
          {"date", date}};
}

std::string ProvenanceLine(const nlohmann::ordered_json& m) {
  auto text = [&m](const char* key) {
    return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : std::string("?");
  };
  auto number = [&m](const char* key) {
    return m.contains(key) && m[key].is_number_integer() ? m[key].get<int64_t>() : int64_t{-1};
  };
  return absl::StrCat("gmlp ", text("gmlp"), ", LibTorch ", text("libtorch"), ", ", text("device"),
                      " on ", text("cpu"), ", ", number("threads"), " threads x ",
                      number("world_size"), " rank(s), ", text("date"));
}

}  // namespace gmlp::model

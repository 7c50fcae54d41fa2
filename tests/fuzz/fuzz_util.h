// Shared by the fuzz targets: the readers under test take file paths, so each input is written
// to a file of this process first (in /dev/shm when it exists: no disk traffic per input).
#ifndef GMLP_TESTS_FUZZ_FUZZ_UTIL_H_
#define GMLP_TESTS_FUZZ_FUZZ_UTIL_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gmlp::fuzz {

// A directory of this process's own, made once.
inline const std::string& ScratchDir() {
  static const std::string dir = [] {
    const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string d = std::string(base) + "/gmlp_fuzz_" + std::to_string(getpid());
    std::string cmd = "mkdir -p '" + d + "'";
    if (std::system(cmd.c_str()) != 0) std::abort();
    return d;
  }();
  return dir;
}

// Writes `size` bytes to ScratchDir()/name and returns the path.
inline std::string WriteInput(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = ScratchDir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace gmlp::fuzz

#endif  // GMLP_TESTS_FUZZ_FUZZ_UTIL_H_

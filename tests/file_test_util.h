// File fixtures shared by the tests: temporary directories and whole-file reads and writes.
#ifndef GMLP_TESTS_FILE_TEST_UTIL_H_
#define GMLP_TESTS_FILE_TEST_UTIL_H_

#include <stdlib.h>

#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"
#include "common/file_util.h"
#include "gtest/gtest.h"

namespace gmlp::testing {

// A fresh directory /tmp/gmlp_<name>_XXXXXX.
inline std::string MakeTempDir(const char* name) {
  std::string tmpl = std::string("/tmp/gmlp_") + name + "_XXXXXX";
  return std::string(::mkdtemp(tmpl.data()));
}

// Removes a directory tree made by MakeTempDir (tests leave nothing behind in /tmp). Not
// std::filesystem: PyPI's libtorch.so exports std::filesystem symbols that a test linked against
// it binds to, and its remove_all crashes (a null call inside torch 2.11's copy).
inline void RemoveTempDir(const std::string& dir) { (void)RemoveTree(dir); }

// A MakeTempDir directory removed with what it holds when this goes out of scope.
class ScopedTempDir {
 public:
  explicit ScopedTempDir(const char* name) : path_(MakeTempDir(name)) {}
  ~ScopedTempDir() { RemoveTempDir(path_); }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void WriteBytes(const std::string& path, absl::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

// The whole file, or "" when it cannot be opened.
inline std::string ReadBytes(const std::string& path) {
  std::string out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

}  // namespace gmlp::testing

#endif  // GMLP_TESTS_FILE_TEST_UTIL_H_

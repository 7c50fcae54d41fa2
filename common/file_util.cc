#include "common/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace gmlp {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const int err = errno;
  std::string msg = absl::StrCat(path, ": ", what, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == ENOSPC)
    return absl::ResourceExhaustedError(absl::StrCat(msg, " (free some disk space)"));
  return absl::UnknownError(msg);
}

namespace {

std::string ParentDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Writes all of `contents` to `fd` (retrying on EINTR); errors name `path`.
absl::Status WriteAll(int fd, absl::string_view contents, const std::string& path) {
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!PathExists(path)) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file; check the path"));
    }
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open for reading"));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status FsyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open for fsync", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return ErrnoError("fsync", path);
  return absl::OkStatus();
}

absl::Status WriteFileAtomic(const std::string& path, absl::string_view contents) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create", tmp);
  if (absl::Status st = WriteAll(fd, contents, tmp); !st.ok()) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return st;
  }
  if (::fsync(fd) != 0) {
    absl::Status st = ErrnoError("fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return st;
  }
  if (::close(fd) != 0) {
    absl::Status st = ErrnoError("close", tmp);
    ::unlink(tmp.c_str());
    return st;
  }
  absl::Status st = RenameAtomic(tmp, path);
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

absl::Status RenameAtomic(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoError("rename to " + to, from);
  return FsyncPath(ParentDir(to));
}

absl::Status MakeDirs(const std::string& path) {
  if (path.empty() || IsDirectory(path)) return absl::OkStatus();
  const std::string parent = ParentDir(path);
  if (parent != path) {
    absl::Status st = MakeDirs(parent);
    if (!st.ok()) return st;
  }
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("mkdir", path);
  return absl::OkStatus();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::StatusOr<int64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat", path);
  return static_cast<int64_t>(st.st_size);
}

absl::StatusOr<std::vector<std::string>> ExpandGlobs(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& pattern : patterns) {
    if (PathExists(pattern)) {
      out.push_back(pattern);
      continue;
    }
    glob_t g;
    std::memset(&g, 0, sizeof(g));
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
      ::globfree(&g);
      return absl::NotFoundError(absl::StrCat(
          pattern, ": no such file (and no file matches it as a glob); check the path"));
    }
    if (rc != 0) {
      ::globfree(&g);
      return absl::InvalidArgumentError(absl::StrCat(pattern, ": cannot expand this glob"));
    }
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
  }
  return out;
}

std::string JoinPath(absl::string_view a, absl::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  const bool a_slash = a.back() == '/';
  const bool b_slash = b.front() == '/';
  if (a_slash && b_slash) return absl::StrCat(a, b.substr(1));
  if (a_slash || b_slash) return absl::StrCat(a, b);
  return absl::StrCat(a, "/", b);
}

std::string Dirname(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

absl::Status ReplaceDirectory(const std::string& tmp, const std::string& dir) {
  const std::string old = absl::StrCat(dir, ".old.", ::getpid());
  if (PathExists(dir)) GMLP_RETURN_IF_ERROR(RenameAtomic(dir, old));
  GMLP_RETURN_IF_ERROR(RenameAtomic(tmp, dir));
  if (PathExists(old)) GMLP_RETURN_IF_ERROR(RemoveTree(old));
  return absl::OkStatus();
}

std::string ExecutableDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return ParentDir(std::string(buf));
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status RemoveTree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return absl::OkStatus();
  if (S_ISDIR(st.st_mode)) {
    for (const std::string& name : ListDir(path)) {
      if (absl::Status s = RemoveTree(JoinPath(path, name)); !s.ok()) return s;
    }
    if (::rmdir(path.c_str()) != 0) return ErrnoError("rmdir", path);
  } else if (::unlink(path.c_str()) != 0) {
    return ErrnoError("unlink", path);
  }
  return absl::OkStatus();
}

absl::Status CopyFile(const std::string& from, const std::string& to) {
  absl::StatusOr<std::string> bytes = ReadFile(from);
  if (!bytes.ok()) return bytes.status();
  const int fd = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create", to);
  absl::Status st = WriteAll(fd, *bytes, to);
  if (::close(fd) != 0 && st.ok()) st = ErrnoError("close", to);
  return st;
}

}  // namespace gmlp

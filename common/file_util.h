// Small file-system helpers: whole-file reads, atomic writes (temporary name, fsync, rename,
// fsync of the directory) so that nothing half-written ever looks complete, and glob expansion.
#ifndef GMLP_COMMON_FILE_UTIL_H_
#define GMLP_COMMON_FILE_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmlp {

// An error for the failed system call `what` on `path` from errno: NotFound for ENOENT,
// ResourceExhausted (with a hint) for ENOSPC, else Unknown; the message names path and errno.
absl::Status ErrnoError(absl::string_view what, const std::string& path);

// Reads a whole file. NotFound names the path when it does not exist.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path` atomically: `path.tmp.<pid>` is written and fsynced, then renamed
// over `path`, then the directory is fsynced. On any failure (a full disk, say) the previous
// file at `path`, if any, is left untouched and the temporary file is removed.
absl::Status WriteFileAtomic(const std::string& path, absl::string_view contents);

// Renames a finished temporary file or directory into place and fsyncs the parent directory.
absl::Status RenameAtomic(const std::string& from, const std::string& to);

// fsyncs a file or directory by path.
absl::Status FsyncPath(const std::string& path);

// Creates a directory and its parents (like `mkdir -p`).
absl::Status MakeDirs(const std::string& path);

bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
absl::StatusOr<int64_t> FileSize(const std::string& path);

// Expands each pattern with glob(3), sorted; a pattern that names an existing file is kept as
// is. A pattern that matches nothing is a NotFound error naming it.
absl::StatusOr<std::vector<std::string>> ExpandGlobs(const std::vector<std::string>& patterns);

// The names in `dir` (no "." or ".."), sorted; empty when it cannot be read.
std::vector<std::string> ListDir(const std::string& dir);

// `rm -r`: removes a file or a directory tree; a missing path is not an error.
absl::Status RemoveTree(const std::string& path);

// Copies a file byte for byte (not atomically: the caller commits the directory it is in).
absl::Status CopyFile(const std::string& from, const std::string& to);

// Joins two path components with exactly one '/'.
std::string JoinPath(absl::string_view a, absl::string_view b);
// The directory part of `path` ("a/b/c" -> "a/b", "c" -> ".").
std::string Dirname(const std::string& path);

// Puts the complete directory `tmp` at `dir`: a directory already at `dir` is moved aside, `tmp`
// renamed into place, the old one removed. A crash leaves either the old or the new directory at
// `dir` (or `dir` absent with the old one beside it), never a partial one.
absl::Status ReplaceDirectory(const std::string& tmp, const std::string& dir);

// The directory holding the running executable (from /proc/self/exe).
std::string ExecutableDir();

}  // namespace gmlp

#endif  // GMLP_COMMON_FILE_UTIL_H_

// manifest.json: the table of contents of a shard directory written by `gmlp prepare`. It names
// the tokenizer (path and checksum), the sequence length, the flags used, every shard with its
// split, sequence count and file checksum, and the totals. The loader trusts nothing else.
#ifndef GMLP_DATA_MANIFEST_H_
#define GMLP_DATA_MANIFEST_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gmlp::data {

inline constexpr int64_t kManifestFormatVersion = 1;
inline constexpr char kManifestFile[] = "manifest.json";

struct ShardEntry {
  std::string file;   // relative to the manifest's directory
  std::string split;  // train | valid
  int64_t num_sequences = 0;
  int64_t num_tokens = 0;  // ids that are not [PAD]
  std::string checksum;    // of the whole file (common/checksum.h FileChecksum)

  // The entry's JSON object, as the manifest and prepare's block records hold it. FromJson
  // throws nlohmann::json::exception on a missing key or a wrong type.
  nlohmann::json ToJson() const;
  static ShardEntry FromJson(const nlohmann::json& j);
};

struct SplitTotals {
  int64_t shards = 0;
  int64_t sequences = 0;
  int64_t tokens = 0;
};

struct Manifest {
  int64_t format_version = kManifestFormatVersion;
  std::string tokenizer;           // path of the .model file given to prepare
  std::string tokenizer_checksum;  // its checksum; every shard header repeats it
  int64_t vocab_size = 0;
  int64_t seq_len = 0;
  int64_t token_bytes = 0;
  // Per id: does the piece begin a word? Whole-word masking reads this instead of loading the
  // tokenizer. Stored as a hex bitmap (bit i of byte i/8, least significant first).
  std::vector<bool> word_starts;
  nlohmann::json flags = nlohmann::json::object();  // the options prepare ran with
  std::string part;                // "i/N" in a part manifest; empty in a complete one
  std::vector<ShardEntry> shards;  // in the order the loader numbers sequences
  int64_t documents = 0;
  int64_t valid_documents = 0;
  int64_t input_bytes = 0;  // decompressed bytes read
  int64_t invalid_utf8_lines = 0;

  SplitTotals Totals(const std::string& split) const;
  nlohmann::json ToJson() const;
  // `source` (a path) only names the file in error messages.
  static absl::StatusOr<Manifest> FromJson(const nlohmann::json& j, const std::string& source);
};

// Reads and validates `path` (a manifest file).
absl::StatusOr<Manifest> ReadManifest(const std::string& path);
// Writes `manifest` to `path` atomically, pretty-printed.
absl::Status WriteManifest(const std::string& path, const Manifest& manifest);

}  // namespace gmlp::data

#endif  // GMLP_DATA_MANIFEST_H_

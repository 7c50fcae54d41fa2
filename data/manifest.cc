#include "data/manifest.h"

#include <exception>
#include <limits>
#include <map>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "common/field_json.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/shard.h"

namespace gmlp::data {
namespace {

// The integer at `key` of `j`. nlohmann's get<int64_t> converts any number, and one out of
// int64's range (a 120-digit vocab_size, parsed as a double) is undefined behaviour: found by
// tests/fuzz/manifest_fuzz. Throws std::invalid_argument naming the key; FromJson reports it.
int64_t IntAt(const nlohmann::json& j, const char* key) {
  int64_t out = 0;
  const std::string problem = ReadJsonValue(j.at(key), &out);
  if (!problem.empty()) throw std::invalid_argument(absl::StrCat("\"", key, "\"", problem));
  return out;
}

std::string EncodeBitmap(const std::vector<bool>& bits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve((bits.size() + 7) / 8 * 2);
  for (size_t byte = 0; byte * 8 < bits.size(); ++byte) {
    unsigned v = 0;
    for (size_t b = 0; b < 8 && byte * 8 + b < bits.size(); ++b) {
      if (bits[byte * 8 + b]) v |= 1u << b;
    }
    out.push_back(kHex[v >> 4]);
    out.push_back(kHex[v & 15]);
  }
  return out;
}

bool DecodeBitmap(const std::string& hex, size_t n, std::vector<bool>* bits) {
  if (hex.size() != (n + 7) / 8 * 2) return false;
  bits->assign(n, false);
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t byte = 0; byte < hex.size() / 2; ++byte) {
    const int hi = nibble(hex[2 * byte]);
    const int lo = nibble(hex[2 * byte + 1]);
    if (hi < 0 || lo < 0) return false;
    const unsigned v = static_cast<unsigned>(hi * 16 + lo);
    for (size_t b = 0; b < 8 && byte * 8 + b < n; ++b) (*bits)[byte * 8 + b] = (v >> b) & 1u;
  }
  return true;
}

// "crc32:xxxxxxxx", as Crc32Hex prints it.
bool IsCrc32Hex(const std::string& s) {
  return s.size() == 14 && s.compare(0, 6, "crc32:") == 0 &&
         s.find_first_not_of("0123456789abcdef", 6) == std::string::npos;
}

}  // namespace

SplitTotals Manifest::Totals(const std::string& split) const {
  SplitTotals t;
  for (const ShardEntry& s : shards) {
    if (s.split != split) continue;
    ++t.shards;
    t.sequences += s.num_sequences;
    t.tokens += s.num_tokens;
  }
  return t;
}

nlohmann::json Manifest::ToJson() const {
  nlohmann::json j;
  j["format_version"] = format_version;
  j["tokenizer"] = tokenizer;
  j["tokenizer_checksum"] = tokenizer_checksum;
  j["vocab_size"] = vocab_size;
  j["seq_len"] = seq_len;
  j["token_bytes"] = token_bytes;
  if (!part.empty()) j["part"] = part;
  j["flags"] = flags;
  nlohmann::json totals;
  for (const char* split : {"train", "valid"}) {
    const SplitTotals t = Totals(split);
    totals[split] = {{"shards", t.shards}, {"sequences", t.sequences}, {"tokens", t.tokens}};
  }
  totals["documents"] = documents;
  totals["valid_documents"] = valid_documents;
  totals["input_bytes"] = input_bytes;
  totals["invalid_utf8_lines"] = invalid_utf8_lines;
  j["totals"] = totals;
  nlohmann::json list = nlohmann::json::array();
  for (const ShardEntry& s : shards) {
    list.push_back(s.ToJson());
  }
  j["shards"] = list;
  j["word_start_bitmap"] = EncodeBitmap(word_starts);
  return j;
}

namespace {

// What is wrong with shards[i] of a manifest (a file name outside the folder, an unknown split,
// impossible counts, a malformed checksum, a file listed twice), or "" when nothing is.
std::string ShardEntryProblem(const ShardEntry& e, size_t i, int64_t seq_len,
                              std::map<std::string, size_t>* index_of_file) {
  std::string bad;
  if (e.file.empty()) {
    bad = ".file is empty";
  } else if (e.file.find('/') != std::string::npos || e.file == "." || e.file == "..") {
    // Shards live beside their manifest: a path could read (or, on resume, overwrite)
    // files elsewhere.
    bad = absl::StrCat(".file \"", e.file, "\" is not a file name in the shard directory");
  } else if (e.split != "train" && e.split != "valid") {
    bad = absl::StrCat(".split is \"", e.split, "\", not train or valid");
  } else if (e.num_sequences < 0 ||
             e.num_sequences > std::numeric_limits<int64_t>::max() / seq_len) {
    bad = absl::StrCat(".num_sequences is ", e.num_sequences, ", not a count of sequences");
  } else if (e.num_tokens < 0 || e.num_tokens > e.num_sequences * seq_len) {
    bad = absl::StrCat(".num_tokens is ", e.num_tokens,
                       ", not in [0, num_sequences x seq_len = ", e.num_sequences * seq_len, "]");
  } else if (!IsCrc32Hex(e.checksum)) {
    bad = absl::StrCat(".checksum is \"", e.checksum, "\", not crc32:<8 hex digits>");
  } else if (const auto [it, fresh] = index_of_file->emplace(e.file, i); !fresh) {
    bad = absl::StrCat(".file \"", e.file, "\" is listed already, as shards[", it->second, "]");
  }
  return bad;
}

// The "shards" list, each entry checked.
absl::StatusOr<std::vector<ShardEntry>> ReadShardEntries(const nlohmann::json& shards,
                                                         int64_t seq_len, const std::string& source,
                                                         const std::string& fix) {
  std::vector<ShardEntry> out;
  std::map<std::string, size_t> index_of_file;
  for (const nlohmann::json& s : shards) {
    const size_t i = out.size();
    const std::string where = absl::StrCat(source, ": shards[", i, "]");
    ShardEntry e;
    try {
      e = ShardEntry::FromJson(s);
    } catch (const std::exception& err) {
      return absl::DataLossError(
          absl::StrCat(where, " is malformed (", err.what(), "): ", s.dump(), "; ", fix));
    }
    const std::string bad = ShardEntryProblem(e, i, seq_len, &index_of_file);
    if (!bad.empty()) return absl::DataLossError(absl::StrCat(where, bad, "; ", fix));
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

absl::StatusOr<Manifest> Manifest::FromJson(const nlohmann::json& j, const std::string& source) {
  const std::string fix = "re-run `gmlp prepare` to rewrite it";
  try {
    Manifest m;
    m.format_version = IntAt(j, "format_version");
    if (m.format_version != kManifestFormatVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat(source, ": manifest format_version ", m.format_version, ", this gmlp reads ",
                       kManifestFormatVersion, "; re-run `gmlp prepare` with this gmlp"));
    }
    m.tokenizer = j.at("tokenizer").get<std::string>();
    m.tokenizer_checksum = j.at("tokenizer_checksum").get<std::string>();
    m.vocab_size = IntAt(j, "vocab_size");
    m.seq_len = IntAt(j, "seq_len");
    m.token_bytes = IntAt(j, "token_bytes");
    if (m.vocab_size <= 0 || m.seq_len < 2) {
      return absl::DataLossError(absl::StrCat(source, ": vocab_size ", m.vocab_size,
                                              " and seq_len ", m.seq_len,
                                              " must be >= 1 and >= 2; ", fix));
    }
    if (m.token_bytes != TokenBytesForVocab(m.vocab_size)) {
      return absl::DataLossError(absl::StrCat(
          source, ": token_bytes is ", m.token_bytes, " but shards of vocab_size ", m.vocab_size,
          " hold ", TokenBytesForVocab(m.vocab_size), "-byte ids; ", fix));
    }
    if (j.contains("part")) m.part = j.at("part").get<std::string>();
    m.flags = j.value("flags", nlohmann::json::object());
    const nlohmann::json& totals = j.at("totals");
    m.documents = IntAt(totals, "documents");
    m.valid_documents = IntAt(totals, "valid_documents");
    m.input_bytes = IntAt(totals, "input_bytes");
    m.invalid_utf8_lines = IntAt(totals, "invalid_utf8_lines");
    GMLP_ASSIGN_OR_RETURN(m.shards, ReadShardEntries(j.at("shards"), m.seq_len, source, fix));
    if (!DecodeBitmap(j.at("word_start_bitmap").get<std::string>(),
                      static_cast<size_t>(m.vocab_size), &m.word_starts)) {
      return absl::DataLossError(
          absl::StrCat(source, ": word_start_bitmap does not match vocab_size; ", fix));
    }
    return m;
  } catch (const std::exception& e) {
    return absl::DataLossError(
        absl::StrCat(source, ": malformed manifest (", e.what(), "); ", fix));
  }
}

nlohmann::json ShardEntry::ToJson() const {
  return {{"file", file},
          {"split", split},
          {"num_sequences", num_sequences},
          {"num_tokens", num_tokens},
          {"checksum", checksum}};
}

ShardEntry ShardEntry::FromJson(const nlohmann::json& j) {
  ShardEntry e;
  e.file = j.at("file").get<std::string>();
  e.split = j.at("split").get<std::string>();
  e.num_sequences = IntAt(j, "num_sequences");
  e.num_tokens = IntAt(j, "num_tokens");
  e.checksum = j.at("checksum").get<std::string>();
  return e;
}

absl::StatusOr<Manifest> ReadManifest(const std::string& path) {
  if (!PathExists(path)) {
    return absl::NotFoundError(absl::StrCat(
        path, ": no such manifest; run `gmlp prepare --output=<dir>` first and pass that <dir>"));
  }
  GMLP_ASSIGN_OR_RETURN(
      const nlohmann::json j,
      ReadJsonFile(path, "a half-written or edited manifest? re-run `gmlp prepare`"));
  return Manifest::FromJson(j, path);
}

absl::Status WriteManifest(const std::string& path, const Manifest& manifest) {
  return WriteFileAtomic(path, manifest.ToJson().dump(2) + "\n");
}

}  // namespace gmlp::data

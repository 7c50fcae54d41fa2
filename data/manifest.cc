#include "data/manifest.h"

#include <exception>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/shard.h"

namespace gmlp::data {
namespace {

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

absl::StatusOr<Manifest> Manifest::FromJson(const nlohmann::json& j, const std::string& source) {
  const std::string fix = "re-run `gmlp prepare` to rewrite it";
  try {
    Manifest m;
    m.format_version = j.at("format_version").get<int64_t>();
    if (m.format_version != kManifestFormatVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat(source, ": manifest format_version ", m.format_version, ", this gmlp reads ",
                       kManifestFormatVersion, "; re-run `gmlp prepare` with this gmlp"));
    }
    m.tokenizer = j.at("tokenizer").get<std::string>();
    m.tokenizer_checksum = j.at("tokenizer_checksum").get<std::string>();
    m.vocab_size = j.at("vocab_size").get<int64_t>();
    m.seq_len = j.at("seq_len").get<int64_t>();
    m.token_bytes = j.at("token_bytes").get<int64_t>();
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
    m.documents = totals.at("documents").get<int64_t>();
    m.valid_documents = totals.at("valid_documents").get<int64_t>();
    m.input_bytes = totals.at("input_bytes").get<int64_t>();
    m.invalid_utf8_lines = totals.at("invalid_utf8_lines").get<int64_t>();
    std::map<std::string, size_t> index_of_file;
    for (const nlohmann::json& s : j.at("shards")) {
      const size_t i = m.shards.size();
      const std::string where = absl::StrCat(source, ": shards[", i, "]");
      ShardEntry e;
      try {
        e = ShardEntry::FromJson(s);
      } catch (const nlohmann::json::exception& err) {
        return absl::DataLossError(
            absl::StrCat(where, " is malformed (", err.what(), "): ", s.dump(), "; ", fix));
      }
      std::string bad;
      if (e.file.empty()) {
        bad = ".file is empty";
      } else if (e.split != "train" && e.split != "valid") {
        bad = absl::StrCat(".split is \"", e.split, "\", not train or valid");
      } else if (e.num_sequences < 0 ||
                 e.num_sequences > std::numeric_limits<int64_t>::max() / m.seq_len) {
        bad = absl::StrCat(".num_sequences is ", e.num_sequences, ", not a count of sequences");
      } else if (e.num_tokens < 0 || e.num_tokens > e.num_sequences * m.seq_len) {
        bad = absl::StrCat(".num_tokens is ", e.num_tokens,
                           ", not in [0, num_sequences x seq_len = ", e.num_sequences * m.seq_len,
                           "]");
      } else if (!IsCrc32Hex(e.checksum)) {
        bad = absl::StrCat(".checksum is \"", e.checksum, "\", not crc32:<8 hex digits>");
      } else if (const auto [it, fresh] = index_of_file.emplace(e.file, i); !fresh) {
        bad = absl::StrCat(".file \"", e.file, "\" is listed already, as shards[", it->second, "]");
      }
      if (!bad.empty()) return absl::DataLossError(absl::StrCat(where, bad, "; ", fix));
      m.shards.push_back(std::move(e));
    }
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
  e.num_sequences = j.at("num_sequences").get<int64_t>();
  e.num_tokens = j.at("num_tokens").get<int64_t>();
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

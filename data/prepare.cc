#include "data/prepare.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/bounded_queue.h"
#include "data/packer.h"
#include "data/random.h"
#include "data/shard.h"
#include "tokenizer/corpus_reader.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::data {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct PartSpec {
  int64_t index = 0;
  int64_t count = 1;
};

absl::StatusOr<PartSpec> ParsePart(const std::string& part) {
  std::vector<std::string> fields = absl::StrSplit(part, '/');
  PartSpec p;
  if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &p.index) ||
      !absl::SimpleAtoi(fields[1], &p.count) || p.count < 1 || p.index < 0 || p.index >= p.count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--part='", part, "': expected i/N with 0 <= i < N, e.g. --part=0/4 for the first of 4"));
  }
  return p;
}

std::string BlockName(const char* prefix, int64_t file, int64_t block, const char* ext) {
  return absl::StrFormat("%s-%05d-%05d.%s", prefix, file, block, ext);
}

std::string PartManifestName(int64_t index, int64_t count) {
  return absl::StrFormat("manifest.part-%d-of-%d.json", index, count);
}

// SentencePiece's lattice takes memory in proportion to the text encoded in one call (hundreds of
// bytes per input byte), so long pieces are encoded in spans of at most this many bytes, cut after
// a space. The span after the cut starts a new word either way, so ids hardly change; lines of
// ordinary text are shorter and are encoded whole.
constexpr size_t kMaxEncodeSpan = 16 << 10;

// Length of the next span of `text` to encode: all of it when short, else up to and including the
// last space within kMaxEncodeSpan bytes, else a cut at a UTF-8 character boundary.
size_t EncodeSpan(absl::string_view text) {
  if (text.size() <= kMaxEncodeSpan) return text.size();
  const size_t space = text.substr(0, kMaxEncodeSpan).rfind(' ');
  if (space != absl::string_view::npos && space > 0) return space + 1;
  size_t cut = kMaxEncodeSpan;
  while (cut > 1 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

// One piece of text inside a block's buffer.
struct Piece {
  uint32_t begin = 0;
  uint32_t size = 0;
  bool new_document = false;
  bool valid = false;
};

// About shard_input_bytes of text from one file: the unit of parallel work and of resumption.
struct Block {
  int64_t file = 0;
  int64_t index = 0;
  std::string text;
  std::vector<Piece> pieces;
  int64_t documents = 0;
  int64_t valid_documents = 0;
};

struct BlockResult {
  int64_t file = 0;
  int64_t index = 0;
  std::vector<ShardEntry> shards;
  int64_t documents = 0;
  int64_t valid_documents = 0;
  int64_t text_bytes = 0;
  bool skipped = false;
};

// The settings that change what is written, as the manifest records them: every option but
// where to, how fast and which part.
nlohmann::json ManifestFlags(const PrepareOptions& o) {
  nlohmann::json j = nlohmann::json::object();
  PrepareOptions::ForEachField(o, [&j](const char* name, const auto& field, const char*) {
    const absl::string_view n = name;
    if (n != "output" && n != "workers" && n != "part" && n != "progress") j[name] = field;
  });
  return j;
}

// Everything that changes a block's bytes: the tokenizer itself (not its path), and not the
// input list either (a block depends only on its own text).
nlohmann::json ContentSettings(const PrepareOptions& o, const TextEncoder& encoder) {
  nlohmann::json j = ManifestFlags(o);
  j.erase("input");
  j.erase("tokenizer");
  // At their defaults the reading flags are left out, so blocks written before they existed
  // still count as complete.
  if (o.format == "auto") j.erase("format");
  if (o.text_field == "text") j.erase("text_field");
  j["shard_format_version"] = kShardFormatVersion;
  j["tokenizer_checksum"] = encoder.checksum();
  j["vocab_size"] = encoder.vocab_size();
  return j;
}

class Preparer {
 public:
  Preparer(const PrepareOptions& options, const TextEncoder& encoder, PartSpec part,
           std::vector<std::string> files)
      : options_(options),
        encoder_(encoder),
        part_(part),
        files_(std::move(files)),
        settings_(ContentSettings(options, encoder)) {}

  absl::StatusOr<PrepareResult> Run();

 private:
  bool OwnsFile(int64_t f) const { return f % part_.count == part_.index; }
  bool IsValidDocument(int64_t file, int64_t doc) const {
    const uint64_t h = HashKey(options_.seed, static_cast<uint64_t>(file),
                               static_cast<uint64_t>(doc), 0x76616c6964ULL /* "valid" */);
    return static_cast<double>(h >> 11) * 0x1.0p-53 < options_.valid_fraction;
  }

  absl::Status ReadAll(BoundedQueue<Block>* queue);
  // Reads file `f` into blocks for the workers (those this part owns), counting its blocks in
  // `global_block` and its bytes into `bytes_before`. False when reading should stop (the queue
  // was closed, or a worker failed: its error is reported instead).
  absl::StatusOr<bool> ReadFileBlocks(int64_t f, const tokenizer::CorpusOptions& corpus,
                                      BoundedQueue<Block>* queue, int64_t* global_block,
                                      int64_t* bytes_before);
  // A file read to its end: its bytes and skipped lines into the totals, and the warning.
  void CountFile(int64_t f, const tokenizer::CorpusStats& stats, int64_t* bytes_before);
  void Work(BoundedQueue<Block>* queue);
  // The reader on this thread and the encoding workers, until every block is done.
  absl::Status EncodeAll();
  // This run's manifest (or this part's) from the finished blocks, in input order.
  PrepareResult Collect();
  // Writes the manifest: the whole corpus's, or this part's and, once every part has one, the
  // merged one.
  absl::Status WriteManifests(PrepareResult* result);
  absl::StatusOr<BlockResult> Process(const Block& block);
  std::optional<BlockResult> TryReuse(const Block& block, const std::string& record_path);
  nlohmann::json RecordFor(const Block& block, const BlockResult& r) const;
  void SetError(absl::Status status) {
    absl::MutexLock lock(&mu_);
    if (error_.ok()) error_ = std::move(status);
    failed_ = true;
  }
  void Progress(bool final);

  const PrepareOptions& options_;
  const TextEncoder& encoder_;
  const PartSpec part_;
  const std::vector<std::string> files_;
  std::vector<int64_t> file_bytes_;
  const nlohmann::json settings_;
  bool by_file_ = true;

  Clock::time_point start_;
  Clock::time_point last_log_;
  std::atomic<int64_t> bytes_read_{0};  // decompressed input bytes, all files so far
  std::atomic<int64_t> blocks_done_{0};
  std::atomic<bool> failed_{false};
  int64_t input_bytes_ = 0;         // of owned files
  int64_t invalid_utf8_lines_ = 0;  // of owned files

  absl::Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::vector<BlockResult> results_ ABSL_GUARDED_BY(mu_);
};

void Preparer::Progress(bool final) {
  const double elapsed = SecondsSince(start_);
  if (!options_.progress) return;
  if (!final && std::chrono::duration<double>(Clock::now() - last_log_).count() < 2.0) return;
  last_log_ = Clock::now();
  const double mb = static_cast<double>(bytes_read_.load()) / 1e6;
  std::fprintf(stderr, "gmlp prepare: %s%.1f MB read in %.1f s (%.1f MB/s), %lld blocks done\n",
               final ? "done: " : "", mb, elapsed, elapsed > 0 ? mb / elapsed : 0.0,
               static_cast<long long>(blocks_done_.load()));
}

absl::Status Preparer::ReadAll(BoundedQueue<Block>* queue) {
  tokenizer::CorpusOptions corpus;
  corpus.strict_utf8 = options_.strict_utf8;
  corpus.max_piece_bytes = options_.max_piece_bytes;
  corpus.format = options_.format;
  corpus.text_field = options_.text_field;
  int64_t global_block = 0;  // numbers blocks across files, for --part in block mode
  int64_t bytes_before = 0;
  for (int64_t f = 0; f < static_cast<int64_t>(files_.size()); ++f) {
    if (by_file_ && !OwnsFile(f)) continue;
    GMLP_ASSIGN_OR_RETURN(const bool go_on,
                          ReadFileBlocks(f, corpus, queue, &global_block, &bytes_before));
    if (!go_on) return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Preparer::ReadFileBlocks(int64_t f, const tokenizer::CorpusOptions& corpus,
                                              BoundedQueue<Block>* queue, int64_t* global_block,
                                              int64_t* bytes_before) {
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::CorpusReader> reader,
                        tokenizer::CorpusReader::Open(files_[f], corpus));
  Block block;
  block.file = f;
  int64_t block_bytes = 0;
  int64_t block_pieces = 0;
  bool owned = by_file_ || (*global_block) % part_.count == part_.index;
  // Hands a finished block to the workers (or drops it when another part owns it). False when
  // the queue was closed.
  auto dispatch = [&]() -> bool {
    if (block_pieces == 0) return true;
    const int64_t next_index = block.index + 1;
    if (owned && !queue->Push(std::move(block))) return false;
    ++(*global_block);
    block = Block();
    block.file = f;
    block.index = next_index;
    block_bytes = 0;
    block_pieces = 0;
    owned = by_file_ || (*global_block) % part_.count == part_.index;
    return true;
  };
  std::string text;
  bool new_document = false;
  bool valid = false;
  int64_t doc = -1;
  while (true) {
    if (failed_.load()) return false;  // a worker's error is reported instead
    GMLP_ASSIGN_OR_RETURN(bool more, reader->Next(&text, &new_document));
    if (!more) break;
    if (new_document || doc < 0) {
      new_document = true;
      ++doc;
      valid = IsValidDocument(f, doc);
      ++block.documents;
      if (valid) ++block.valid_documents;
    }
    if (owned) {
      block.pieces.push_back({static_cast<uint32_t>(block.text.size()),
                              static_cast<uint32_t>(text.size()), new_document, valid});
      block.text += text;
    }
    ++block_pieces;
    block_bytes += static_cast<int64_t>(text.size());
    bytes_read_.store(*bytes_before + reader->stats().bytes);
    if (block_bytes >= options_.shard_input_bytes && !dispatch()) return false;
    Progress(false);
  }
  if (!dispatch()) return false;
  CountFile(f, reader->stats(), bytes_before);
  return true;
}

void Preparer::CountFile(int64_t f, const tokenizer::CorpusStats& stats, int64_t* bytes_before) {
  *bytes_before += stats.bytes;
  bytes_read_.store(*bytes_before);
  if (OwnsFile(f)) {
    input_bytes_ += stats.bytes;
    invalid_utf8_lines_ += stats.invalid_utf8_lines;
  }
  if (stats.invalid_utf8_lines > 0 && options_.progress) {
    std::fprintf(stderr,
                 "gmlp prepare: %s: skipped %lld lines of invalid UTF-8 (--strict_utf8 makes "
                 "this an error naming the first)\n",
                 files_[f].c_str(), static_cast<long long>(stats.invalid_utf8_lines));
  }
}

nlohmann::json Preparer::RecordFor(const Block& block, const BlockResult& r) const {
  nlohmann::json shards = nlohmann::json::array();
  for (const ShardEntry& s : r.shards) shards.push_back(s.ToJson());
  return {{"settings", settings_},
          {"input_file", files_[block.file]},
          {"input_file_bytes", file_bytes_[block.file]},
          {"file_index", block.file},
          {"block", block.index},
          {"documents", r.documents},
          {"valid_documents", r.valid_documents},
          {"text_bytes", r.text_bytes},
          {"shards", shards}};
}

std::optional<BlockResult> Preparer::TryReuse(const Block& block, const std::string& record_path) {
  if (!PathExists(record_path)) return std::nullopt;
  absl::StatusOr<nlohmann::json> record = ReadJsonFile(record_path, "it is written again");
  if (!record.ok()) return std::nullopt;
  const nlohmann::json& j = *record;
  try {
    if (j.at("settings") != settings_ || j.at("input_file") != files_[block.file] ||
        j.at("input_file_bytes").get<int64_t>() != file_bytes_[block.file] ||
        j.at("file_index").get<int64_t>() != block.file ||
        j.at("block").get<int64_t>() != block.index ||
        j.at("documents").get<int64_t>() != block.documents) {
      return std::nullopt;
    }
    BlockResult r;
    r.file = block.file;
    r.index = block.index;
    r.documents = block.documents;
    r.valid_documents = block.valid_documents;
    r.text_bytes = j.at("text_bytes").get<int64_t>();
    r.skipped = true;
    for (const nlohmann::json& s : j.at("shards")) {
      ShardEntry e = ShardEntry::FromJson(s);
      absl::StatusOr<std::string> actual = FileChecksum(JoinPath(options_.output, e.file));
      if (!actual.ok() || *actual != e.checksum) return std::nullopt;
      r.shards.push_back(std::move(e));
    }
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

absl::StatusOr<BlockResult> Preparer::Process(const Block& block) {
  const std::string record_path =
      JoinPath(options_.output, BlockName("block", block.file, block.index, "json"));
  if (std::optional<BlockResult> reused = TryReuse(block, record_path)) return *reused;

  BlockResult r;
  r.file = block.file;
  r.index = block.index;
  r.documents = block.documents;
  r.valid_documents = block.valid_documents;
  r.text_bytes = static_cast<int64_t>(block.text.size());
  SequencePacker train(options_.seq_len);
  SequencePacker valid(options_.seq_len);
  std::vector<int32_t> ids;
  for (const Piece& piece : block.pieces) {
    ids.clear();
    absl::string_view rest(block.text.data() + piece.begin, piece.size);
    while (!rest.empty()) {
      const size_t cut = EncodeSpan(rest);
      absl::Status st = encoder_.Encode(rest.substr(0, cut), &ids);
      if (!st.ok()) {
        return absl::Status(st.code(), absl::StrCat(files_[block.file], ": ", st.message()));
      }
      rest.remove_prefix(cut);
    }
    SequencePacker& packer = piece.valid ? valid : train;
    if (piece.new_document) packer.StartDocument();
    packer.Add(ids.data(), ids.size());
  }
  for (auto [split, packer] : {std::pair<const char*, SequencePacker*>{"train", &train},
                               std::pair<const char*, SequencePacker*>{"valid", &valid}}) {
    packer->Finish();
    if (packer->num_sequences() == 0) continue;
    ShardEntry e;
    e.file = BlockName(split, block.file, block.index, "bin");
    e.split = split;
    e.num_sequences = packer->num_sequences();
    e.num_tokens = packer->num_tokens();
    ShardMeta meta;
    meta.seq_len = options_.seq_len;
    meta.num_sequences = e.num_sequences;
    meta.vocab_size = encoder_.vocab_size();
    meta.tokenizer_checksum = encoder_.checksum();
    GMLP_ASSIGN_OR_RETURN(e.checksum,
                          WriteShard(JoinPath(options_.output, e.file), meta, packer->ids()));
    r.shards.push_back(std::move(e));
  }
  // The record goes last: its presence with matching checksums is what marks the block complete.
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(record_path, RecordFor(block, r).dump(1) + "\n"));
  return r;
}

void Preparer::Work(BoundedQueue<Block>* queue) {
  while (std::optional<Block> block = queue->Pop()) {
    if (failed_.load()) continue;  // drain so the reader never blocks
    absl::StatusOr<BlockResult> r = Process(*block);
    if (!r.ok()) {
      SetError(r.status());
      continue;
    }
    ++blocks_done_;
    absl::MutexLock lock(&mu_);
    results_.push_back(*std::move(r));
  }
}

absl::StatusOr<PrepareResult> Preparer::Run() {
  start_ = Clock::now();
  last_log_ = start_;
  by_file_ = static_cast<int64_t>(files_.size()) >= part_.count;
  for (const std::string& f : files_) {
    GMLP_ASSIGN_OR_RETURN(int64_t size, FileSize(f));
    file_bytes_.push_back(size);
  }
  GMLP_RETURN_IF_ERROR(MakeDirs(options_.output));
  GMLP_RETURN_IF_ERROR(EncodeAll());
  PrepareResult result = Collect();
  result.seconds = SecondsSince(start_);
  GMLP_RETURN_IF_ERROR(WriteManifests(&result));
  return result;
}

absl::Status Preparer::EncodeAll() {
  int workers = options_.workers;
  if (workers <= 0) workers = std::max(1u, std::thread::hardware_concurrency());
  BoundedQueue<Block> queue(static_cast<size_t>(workers));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) threads.emplace_back([this, &queue] { Work(&queue); });
  absl::Status read_status = ReadAll(&queue);
  queue.Close();
  for (std::thread& t : threads) t.join();
  Progress(true);
  GMLP_RETURN_IF_ERROR(read_status);
  {
    absl::MutexLock lock(&mu_);
    GMLP_RETURN_IF_ERROR(error_);
  }
  return absl::OkStatus();
}

PrepareResult Preparer::Collect() {
  PrepareResult result;
  Manifest& m = result.manifest;
  m.tokenizer = options_.tokenizer;
  m.tokenizer_checksum = encoder_.checksum();
  m.vocab_size = encoder_.vocab_size();
  m.seq_len = options_.seq_len;
  m.token_bytes = TokenBytesForVocab(m.vocab_size);
  m.word_starts.resize(static_cast<size_t>(m.vocab_size));
  for (int64_t id = 0; id < m.vocab_size; ++id) {
    m.word_starts[static_cast<size_t>(id)] = encoder_.IsWordStart(static_cast<int32_t>(id));
  }
  m.flags = ManifestFlags(options_);
  if (part_.count > 1) m.part = absl::StrCat(part_.index, "/", part_.count);
  m.input_bytes = input_bytes_;
  m.invalid_utf8_lines = invalid_utf8_lines_;
  {
    absl::MutexLock lock(&mu_);
    std::sort(results_.begin(), results_.end(), [](const BlockResult& a, const BlockResult& b) {
      return std::tie(a.file, a.index) < std::tie(b.file, b.index);
    });
    for (const BlockResult& r : results_) {
      for (const ShardEntry& e : r.shards) m.shards.push_back(e);
      m.documents += r.documents;
      m.valid_documents += r.valid_documents;
      result.text_bytes += r.text_bytes;
      ++(r.skipped ? result.blocks_skipped : result.blocks_written);
    }
  }
  return result;
}

absl::Status Preparer::WriteManifests(PrepareResult* result) {
  const Manifest& m = result->manifest;
  if (part_.count == 1) {
    if (m.documents == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          absl::StrJoin(files_, ", "),
          ": no text found (empty corpus); check that --input names non-empty text files"));
    }
    if (m.Totals("train").sequences == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(absl::StrJoin(files_, ", "), ": all ", m.documents,
                       " documents went to the validation split; lower --valid_fraction (now ",
                       options_.valid_fraction, ")"));
    }
    result->manifest_path = JoinPath(options_.output, kManifestFile);
    GMLP_RETURN_IF_ERROR(WriteManifest(result->manifest_path, m));
    result->merged = true;
    return absl::OkStatus();
  }
  result->manifest_path = JoinPath(options_.output, PartManifestName(part_.index, part_.count));
  GMLP_RETURN_IF_ERROR(WriteManifest(result->manifest_path, m));
  bool all_parts = true;
  for (int64_t i = 0; i < part_.count; ++i) {
    all_parts =
        all_parts && PathExists(JoinPath(options_.output, PartManifestName(i, part_.count)));
  }
  if (all_parts) {
    GMLP_ASSIGN_OR_RETURN(result->manifest, MergeParts(options_.output));
    result->manifest_path = JoinPath(options_.output, kManifestFile);
    result->merged = true;
  }
  return absl::OkStatus();
}

class TokenizerEncoder : public TextEncoder {
 public:
  explicit TokenizerEncoder(std::unique_ptr<tokenizer::Tokenizer> t) : t_(std::move(t)) {}
  absl::Status Encode(absl::string_view text, std::vector<int32_t>* out) const override {
    return t_->Encode(text, out);
  }
  int64_t vocab_size() const override { return t_->vocab_size(); }
  bool IsWordStart(int32_t id) const override { return t_->IsWordStart(id); }
  std::string checksum() const override { return t_->checksum(); }

 private:
  std::unique_ptr<tokenizer::Tokenizer> t_;
};

}  // namespace

absl::Status PrepareOptions::Validate() const {
  if (input.empty()) {
    return absl::InvalidArgumentError(
        "--input is empty; pass text files or globs, comma-separated");
  }
  if (output.empty()) return absl::InvalidArgumentError("--output is empty; name a directory");
  if (seq_len < 2 || seq_len > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--seq_len=", seq_len, ": must be in [2, 1048576] ([CLS] plus tokens)"));
  }
  if (!(valid_fraction >= 0.0 && valid_fraction < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--valid_fraction=", valid_fraction, ": must be in [0, 1)"));
  }
  if (shard_input_bytes < 1024 || shard_input_bytes > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shard_input_bytes=", shard_input_bytes, ": must be in [1024, 1073741824]"));
  }
  if (max_piece_bytes < 64 || max_piece_bytes > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_piece_bytes=", max_piece_bytes, ": must be in [64, 1073741824]"));
  }
  if (workers < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers=", workers, ": must be >= 0 (0 = all cores)"));
  }
  GMLP_RETURN_IF_ERROR(tokenizer::ValidateCorpusFormat(format, text_field));
  return ParsePart(part).status();
}

absl::StatusOr<std::unique_ptr<TextEncoder>> LoadTextEncoder(const std::string& model_path) {
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> t,
                        tokenizer::Tokenizer::Load(model_path));
  return std::unique_ptr<TextEncoder>(new TokenizerEncoder(std::move(t)));
}

absl::StatusOr<PrepareResult> Prepare(const PrepareOptions& options) {
  GMLP_RETURN_IF_ERROR(options.Validate());
  if (options.tokenizer.empty()) {
    return absl::InvalidArgumentError(
        "--tokenizer is empty; pass the .model file from `gmlp tokenizer train`");
  }
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<TextEncoder> encoder, LoadTextEncoder(options.tokenizer));
  return Prepare(options, *encoder);
}

absl::StatusOr<PrepareResult> Prepare(const PrepareOptions& options, const TextEncoder& encoder) {
  GMLP_RETURN_IF_ERROR(options.Validate());
  GMLP_ASSIGN_OR_RETURN(PartSpec part, ParsePart(options.part));
  GMLP_ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandGlobs(options.input));
  Preparer preparer(options, encoder, part, std::move(files));
  return preparer.Run();
}

namespace {

// N of the part manifests manifest.part-i-of-N.json in `output` (one N only).
absl::StatusOr<int64_t> PartCount(const std::string& output) {
  absl::StatusOr<std::vector<std::string>> found =
      ExpandGlobs({JoinPath(output, "manifest.part-*-of-*.json")});
  if (!found.ok()) {
    return absl::NotFoundError(
        absl::StrCat(output,
                     ": no part manifests (manifest.part-i-of-N.json) to merge; run `gmlp prepare "
                     "--part=i/N` for each i first"));
  }
  // Several N may be present after an earlier, differently split run: refused (the user picks).
  std::map<int64_t, std::vector<std::string>> by_count;
  for (const std::string& path : *found) {
    const std::string name = path.substr(path.find_last_of('/') + 1);
    int64_t i = 0, n = 0;
    if (std::sscanf(name.c_str(), "manifest.part-%ld-of-%ld.json", &i, &n) == 2) {
      by_count[n].push_back(path);
    }
  }
  if (by_count.size() != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(output,
                     ": part manifests from runs with different N are mixed; delete the "
                     "manifest.part-*-of-N.json files of the N you do not want, then merge"));
  }
  return by_count.begin()->first;
}

// The N part manifests, every one of them present.
absl::StatusOr<std::vector<Manifest>> ReadParts(const std::string& output, int64_t count) {
  std::vector<std::string> missing;
  std::vector<Manifest> parts;
  for (int64_t i = 0; i < count; ++i) {
    const std::string path = JoinPath(output, PartManifestName(i, count));
    if (!PathExists(path)) {
      missing.push_back(absl::StrCat(i, "/", count));
      continue;
    }
    GMLP_ASSIGN_OR_RETURN(Manifest m, ReadManifest(path));
    parts.push_back(std::move(m));
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        output, ": parts ", absl::StrJoin(missing, ", "),
        " have not finished; run `gmlp prepare --part=<each>` with the same flags, then merge"));
  }
  return parts;
}

// The parts' shards and counts as one manifest, shards in the order of a single run; each part
// must have been made with part 0's flags and tokenizer.
absl::StatusOr<Manifest> Combine(const std::vector<Manifest>& parts, const std::string& output) {
  const int64_t count = static_cast<int64_t>(parts.size());
  Manifest merged = parts[0];
  merged.part.clear();
  merged.shards.clear();
  merged.documents = merged.valid_documents = merged.input_bytes = merged.invalid_utf8_lines = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Manifest& p = parts[i];
    if (p.tokenizer_checksum != merged.tokenizer_checksum || p.seq_len != merged.seq_len ||
        p.flags != merged.flags) {
      return absl::FailedPreconditionError(absl::StrCat(
          JoinPath(output, PartManifestName(static_cast<int64_t>(i), count)),
          ": made with other flags or another tokenizer than part 0; re-run that part with "
          "the same flags"));
    }
    merged.shards.insert(merged.shards.end(), p.shards.begin(), p.shards.end());
    merged.documents += p.documents;
    merged.valid_documents += p.valid_documents;
    merged.input_bytes += p.input_bytes;
    merged.invalid_utf8_lines += p.invalid_utf8_lines;
  }
  // Same order as a single run: by (file, block), train before valid. Names are
  // "<split>-FFFFF-BBBBB.bin" with 5-letter splits.
  std::stable_sort(merged.shards.begin(), merged.shards.end(),
                   [](const ShardEntry& a, const ShardEntry& b) {
                     return std::make_pair(a.file.substr(6), a.split) <
                            std::make_pair(b.file.substr(6), b.split);
                   });
  return merged;
}

}  // namespace

absl::StatusOr<Manifest> MergeParts(const std::string& output) {
  GMLP_ASSIGN_OR_RETURN(const int64_t count, PartCount(output));
  GMLP_ASSIGN_OR_RETURN(const std::vector<Manifest> parts, ReadParts(output, count));
  GMLP_ASSIGN_OR_RETURN(Manifest merged, Combine(parts, output));
  if (merged.documents == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(output, ": no text found in any part (empty corpus); check --input"));
  }
  if (merged.Totals("train").sequences == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        output, ": every document went to the validation split; lower --valid_fraction"));
  }
  GMLP_RETURN_IF_ERROR(WriteManifest(JoinPath(output, kManifestFile), merged));
  return merged;
}

}  // namespace gmlp::data

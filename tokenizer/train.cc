// tokenizer::Train: samples sentences from the corpus (any size, any supported compression) and
// hands them to SentencePiece's trainer in the shim, with the special tokens pinned to their ids.
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/status.h"
#include "tokenizer/corpus_reader.h"
#include "tokenizer/spm_library.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::tokenizer {
namespace {

// Reservoir sampling (Vitter's algorithm R): a uniform sample of at most `capacity` sentences
// from a stream of unknown length, in memory bounded by the sample.
class SentenceReservoir {
 public:
  SentenceReservoir(int64_t capacity, uint64_t seed) : capacity_(capacity), rng_(seed) {}

  void Add(std::string* sentence) {
    ++seen_;
    if (capacity_ <= 0 || static_cast<int64_t>(sample_.size()) < capacity_) {
      sample_.push_back(std::move(*sentence));
      return;
    }
    const uint64_t j = std::uniform_int_distribution<uint64_t>(0, seen_ - 1)(rng_);
    if (j < static_cast<uint64_t>(capacity_)) sample_[j] = std::move(*sentence);
  }

  std::vector<std::string>& sample() { return sample_; }

 private:
  const int64_t capacity_;  // <= 0: keep everything
  std::mt19937_64 rng_;
  uint64_t seen_ = 0;
  std::vector<std::string> sample_;
};

struct SampleCursor {
  const std::vector<std::string>* sentences;
  size_t next = 0;
};

void AppendBytes(void* user, const char* data, size_t n) {
  static_cast<std::string*>(user)->append(data, n);
}

int NextSentence(void* user, const char** data, size_t* size) {
  auto* cursor = static_cast<SampleCursor*>(user);
  if (cursor->next >= cursor->sentences->size()) return 0;
  const std::string& s = (*cursor->sentences)[cursor->next++];
  *data = s.data();
  *size = s.size();
  return 1;
}

std::string ParentDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

absl::Status ValidateTrainOptions(const TrainOptions& o) {
  if (o.inputs.empty()) {
    return absl::InvalidArgumentError("inputs is empty; pass --input=FILE[,FILE...] (globs work)");
  }
  if (o.model_prefix.empty()) {
    return absl::InvalidArgumentError(
        "model_prefix is empty; pass --model_prefix=DIR/NAME (writes NAME.model, NAME.vocab)");
  }
  if (o.model_type != "unigram" && o.model_type != "bpe") {
    return absl::InvalidArgumentError(
        absl::StrCat("model_type is '", o.model_type, "'; use unigram or bpe"));
  }
  const int32_t min_vocab = kNumSpecialIds + (o.byte_fallback ? 256 : 0) + 1;
  if (o.vocab_size < min_vocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vocab_size is ", o.vocab_size, "; it must be at least ", min_vocab,
        o.byte_fallback ? " (5 special tokens + 256 byte pieces for byte_fallback)" : ""));
  }
  if (!(o.character_coverage > 0.0 && o.character_coverage <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("character_coverage is ", o.character_coverage,
                                                   "; use a value in (0, 1], e.g. 0.9995"));
  }
  if (o.input_sentence_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("input_sentence_size is ", o.input_sentence_size,
                                                   "; use 0 (all sentences) or more"));
  }
  if (o.num_threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_threads is ", o.num_threads, "; use 0 (all cores) or more"));
  }
  GMLP_RETURN_IF_ERROR(ValidateCorpusFormat(o.format, o.text_field));
  if (o.max_sentence_length < 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_sentence_length is ", o.max_sentence_length, "; use at least 64"));
  }
  return absl::OkStatus();
}

absl::Status Train(const TrainOptions& options) { return Train(options, nullptr); }

namespace {

// Every sentence of `files` through the reservoir (its sample is what SentencePiece trains on),
// counted in `stats`.
absl::Status SampleCorpus(const std::vector<std::string>& files, const TrainOptions& options,
                          SentenceReservoir* reservoir, TrainStats* stats) {
  CorpusOptions corpus_options;
  corpus_options.max_piece_bytes = options.max_sentence_length;
  corpus_options.strict_utf8 = options.strict_utf8;
  corpus_options.format = options.format;
  corpus_options.text_field = options.text_field;
  std::string text;
  for (const std::string& file : files) {
    GMLP_ASSIGN_OR_RETURN(std::unique_ptr<CorpusReader> reader,
                          CorpusReader::Open(file, corpus_options));
    bool new_document = false;
    for (;;) {
      GMLP_ASSIGN_OR_RETURN(const bool more, reader->Next(&text, &new_document));
      if (!more) break;
      ++stats->sentences;
      reservoir->Add(&text);
    }
    ++stats->files;
    stats->bytes += reader->stats().bytes;
    stats->documents += reader->stats().documents;
    stats->invalid_utf8_lines += reader->stats().invalid_utf8_lines;
  }
  stats->sampled_sentences = static_cast<int64_t>(reservoir->sample().size());
  if (reservoir->sample().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the training corpus (", absl::StrJoin(files, ", "), ") has no text",
        stats->invalid_utf8_lines > 0
            ? absl::StrCat(" (", stats->invalid_utf8_lines, " lines skipped as invalid UTF-8)")
            : "",
        "; pass files with text in them"));
  }
  return absl::OkStatus();
}

// SentencePiece's training arguments. No model_prefix: the trainer hands the model back in
// memory (the files are written by Train, atomically), and the model's bytes do not depend on
// where it is written.
std::vector<std::pair<std::string, std::string>> SpmTrainArgs(const TrainOptions& o,
                                                              int32_t threads) {
  return {
      {"model_type", o.model_type},
      {"vocab_size", absl::StrCat(o.vocab_size)},
      {"character_coverage", absl::StrCat(o.character_coverage)},
      {"byte_fallback", o.byte_fallback ? "true" : "false"},
      {"num_threads", absl::StrCat(threads)},
      // The sample is already drawn; SentencePiece must take all of it, as it comes.
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"max_sentence_length", absl::StrCat(o.max_sentence_length)},
      // The fixed special ids (tokenizer.h): [PAD]=0 [UNK]=1, then the control symbols in order.
      {"pad_id", absl::StrCat(kPadId)},
      {"unk_id", absl::StrCat(kUnkId)},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      {"pad_piece", "[PAD]"},
      {"unk_piece", "[UNK]"},
      {"control_symbols", "[CLS],[SEP],[MASK]"},
  };
}

// Trains on `sample` (emptied after) and returns the serialized model.
absl::StatusOr<std::string> TrainModel(const SpmLibrary& lib, const TrainOptions& options,
                                       int32_t threads, std::vector<std::string>* sample) {
  const auto args = SpmTrainArgs(options, threads);
  std::vector<const char*> keys, values;
  for (const auto& kv : args) {
    keys.push_back(kv.first.c_str());
    values.push_back(kv.second.c_str());
  }
  SampleCursor cursor{sample};
  std::string model;
  char err[2048] = {0};
  if (lib.train(keys.data(), values.data(), keys.size(), NextSentence, &cursor, AppendBytes, &model,
                static_cast<uint32_t>(options.seed), options.verbose ? 0 : 1, err,
                sizeof(err)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SentencePiece training failed: ", err,
        "; if the vocabulary is too large for this corpus, lower --vocab_size or add text"));
  }
  sample->clear();
  sample->shrink_to_fit();
  return model;
}

// The .vocab of `model` (piece TAB score per line, in id order) as spm_train writes it.
absl::StatusOr<std::string> VocabText(const SpmLibrary& lib, const std::string& model) {
  char err[2048] = {0};
  GmlpSpmProcessor* processor = lib.load_serialized(model.data(), model.size(), err, sizeof(err));
  if (processor == nullptr) {
    return absl::InternalError(absl::StrCat("the trained model does not load: ", err));
  }
  std::string vocab;
  const int32_t n = lib.piece_size(processor);
  for (int32_t id = 0; id < n; ++id) {
    size_t size = 0;
    const char* piece = lib.id_to_piece(processor, id, &size);
    absl::StrAppend(&vocab, absl::string_view(piece, size), "\t", lib.piece_score(processor, id),
                    "\n");
  }
  lib.free(processor);
  return vocab;
}

}  // namespace

absl::Status Train(const TrainOptions& options, TrainStats* stats_out) {
  const auto start = std::chrono::steady_clock::now();
  GMLP_RETURN_IF_ERROR(ValidateTrainOptions(options));
  GMLP_ASSIGN_OR_RETURN(const std::vector<std::string> files, ExpandGlobs(options.inputs));
  // Fail before the (possibly long) read on a broken install or an unwritable output directory.
  GMLP_ASSIGN_OR_RETURN(const SpmLibrary* lib, GetSpmLibrary());
  GMLP_RETURN_IF_ERROR(MakeDirs(ParentDir(options.model_prefix)));

  TrainStats stats;
  SentenceReservoir reservoir(options.input_sentence_size, options.seed);
  GMLP_RETURN_IF_ERROR(SampleCorpus(files, options, &reservoir, &stats));
  const int32_t threads =
      options.num_threads > 0
          ? options.num_threads
          : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.on_progress) {
    options.on_progress(absl::StrFormat(
        "read %d sentences (%d documents, %.1f MB) from %d file%s; training a %s model of %d "
        "pieces on %d of them with %d threads",
        stats.sentences, stats.documents, static_cast<double>(stats.bytes) / 1e6, stats.files,
        stats.files == 1 ? "" : "s", options.model_type, options.vocab_size,
        stats.sampled_sentences, threads));
  }
  GMLP_ASSIGN_OR_RETURN(const std::string model,
                        TrainModel(*lib, options, threads, &reservoir.sample()));
  GMLP_ASSIGN_OR_RETURN(const std::string vocab, VocabText(*lib, model));
  // The .vocab first: a .model in place means its .vocab is too.
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(options.model_prefix + ".vocab", vocab));
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(options.model_prefix + ".model", model));

  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (stats_out != nullptr) *stats_out = stats;
  return absl::OkStatus();
}

}  // namespace gmlp::tokenizer

// libgmlp_spm_shim.so: SentencePiece behind the C ABI of spm_shim.h. This is the one translation
// unit that includes SentencePiece's headers; it must not include Abseil or LibTorch headers
// (SentencePiece's headers define their own absl::string_view) and is linked with neither.
#include "tokenizer/spm_shim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

// Exported by libsentencepiece.so but not declared in its installed headers.
namespace sentencepiece {
namespace logging {
void SetMinLogLevel(int v);
}  // namespace logging
}  // namespace sentencepiece

struct GmlpSpmProcessor {
  sentencepiece::SentencePieceProcessor sp;
};

namespace {

void SetError(char* err, size_t err_size, const std::string& message) {
  if (err == nullptr || err_size == 0) return;
  const size_t n = message.size() < err_size - 1 ? message.size() : err_size - 1;
  std::memcpy(err, message.data(), n);
  err[n] = '\0';
}

// A processor loaded by `load` (a callable taking the SentencePieceProcessor and returning its
// Status), or nullptr with the reason in `err`. Nothing may throw across the C ABI.
template <typename LoadFn>
GmlpSpmProcessor* NewProcessor(const LoadFn& load, char* err, size_t err_size) {
  try {
    auto p = std::make_unique<GmlpSpmProcessor>();
    const sentencepiece::util::Status st = load(p->sp);
    if (!st.ok()) {
      SetError(err, err_size, st.ToString());
      return nullptr;
    }
    return p.release();
  } catch (const std::exception& e) {
    SetError(err, err_size, e.what());
    return nullptr;
  }
}

// Feeds the caller's sentence source to the trainer. SentencePiece reads a sentence iterator as
// `for (; !it.done(); it.Next()) use(it.value());`, so the first sentence is fetched up front.
class CallbackIterator : public sentencepiece::SentenceIterator {
 public:
  CallbackIterator(GmlpSpmSentenceSource source, void* user) : source_(source), user_(user) {
    Fetch();
  }
  bool done() const override { return done_; }
  void Next() override { Fetch(); }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return status_; }

 private:
  void Fetch() {
    const char* data = nullptr;
    size_t size = 0;
    const int rc = source_(user_, &data, &size);
    if (rc == 1) {
      value_.assign(data, size);
      return;
    }
    done_ = true;
    value_.clear();
    if (rc < 0) {
      status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kDataLoss,
                                            "reading the training corpus failed");
    }
  }

  GmlpSpmSentenceSource source_;
  void* user_;
  bool done_ = false;
  std::string value_;
  sentencepiece::util::Status status_;
};

}  // namespace

extern "C" {

int gmlp_spm_abi_version(void) { return GMLP_SPM_SHIM_ABI_VERSION; }

GmlpSpmProcessor* gmlp_spm_load(const char* model_path, char* err, size_t err_size) {
  return NewProcessor(
      [&](sentencepiece::SentencePieceProcessor& sp) { return sp.Load(model_path); }, err,
      err_size);
}

void gmlp_spm_free(GmlpSpmProcessor* processor) { delete processor; }

int gmlp_spm_encode(const GmlpSpmProcessor* processor, const char* text, size_t size,
                    GmlpSpmIdSink sink, void* user, char* err, size_t err_size) {
  try {
    // One buffer per thread: no allocation per call once it has grown.
    thread_local std::vector<int> ids;
    ids.clear();
    const sentencepiece::util::Status st =
        processor->sp.Encode(absl::string_view(text, size), &ids);
    if (!st.ok()) {
      SetError(err, err_size, st.ToString());
      return -1;
    }
    static_assert(sizeof(int) == sizeof(int32_t), "ids are passed as int32_t");
    sink(user, reinterpret_cast<const int32_t*>(ids.data()), ids.size());
    return 0;
  } catch (const std::exception& e) {
    SetError(err, err_size, e.what());
    return -1;
  }
}

int gmlp_spm_decode(const GmlpSpmProcessor* processor, const int32_t* ids, size_t n,
                    GmlpSpmByteSink sink, void* user, char* err, size_t err_size) {
  try {
    const std::vector<int> v(ids, ids + n);
    std::string text;
    const sentencepiece::util::Status st = processor->sp.Decode(v, &text);
    if (!st.ok()) {
      SetError(err, err_size, st.ToString());
      return -1;
    }
    sink(user, text.data(), text.size());
    return 0;
  } catch (const std::exception& e) {
    SetError(err, err_size, e.what());
    return -1;
  }
}

int32_t gmlp_spm_piece_size(const GmlpSpmProcessor* processor) {
  return processor->sp.GetPieceSize();
}

const char* gmlp_spm_id_to_piece(const GmlpSpmProcessor* processor, int32_t id, size_t* size) {
  if (id < 0 || id >= processor->sp.GetPieceSize()) return nullptr;
  const std::string& piece = processor->sp.IdToPiece(id);
  *size = piece.size();
  return piece.data();
}

int gmlp_spm_piece_type(const GmlpSpmProcessor* processor, int32_t id) {
  if (id < 0 || id >= processor->sp.GetPieceSize()) return -1;
  int type = 0;
  if (processor->sp.IsControl(id)) type |= GMLP_SPM_PIECE_CONTROL;
  if (processor->sp.IsUnknown(id)) type |= GMLP_SPM_PIECE_UNKNOWN;
  if (processor->sp.IsByte(id)) type |= GMLP_SPM_PIECE_BYTE;
  if (processor->sp.IsUnused(id)) type |= GMLP_SPM_PIECE_UNUSED;
  return type;
}

GmlpSpmProcessor* gmlp_spm_load_serialized(const char* data, size_t size, char* err,
                                           size_t err_size) {
  return NewProcessor(
      [&](sentencepiece::SentencePieceProcessor& sp) {
        return sp.LoadFromSerializedProto(absl::string_view(data, size));
      },
      err, err_size);
}

float gmlp_spm_piece_score(const GmlpSpmProcessor* processor, int32_t id) {
  if (id < 0 || id >= processor->sp.GetPieceSize()) return 0.0f;
  return processor->sp.GetScore(id);
}

int gmlp_spm_train(const char* const* keys, const char* const* values, size_t n,
                   GmlpSpmSentenceSource source, void* source_user, GmlpSpmByteSink model_sink,
                   void* model_user, uint32_t seed, int min_log_level, char* err, size_t err_size) {
  try {
    std::unordered_map<std::string, std::string> kwargs;
    for (size_t i = 0; i < n; ++i) kwargs[keys[i]] = values[i];
    sentencepiece::SetRandomGeneratorSeed(seed);
    sentencepiece::logging::SetMinLogLevel(min_log_level);
    CallbackIterator it(source, source_user);
    std::string model;
    const sentencepiece::util::Status st =
        sentencepiece::SentencePieceTrainer::Train(kwargs, &it, &model);
    if (!st.ok()) {
      SetError(err, err_size, st.ToString());
      return -1;
    }
    model_sink(model_user, model.data(), model.size());
    return 0;
  } catch (const std::exception& e) {
    SetError(err, err_size, e.what());
    return -1;
  }
}

}  // extern "C"

// WriteHfTokenizerFiles: reads a SentencePiece .model (protobuf wire format, parsed here) and
// writes the three files transformers' AutoTokenizer loads, following transformers'
// convert_slow_tokenizer.SpmConverter.build_tokenizer_from_spm_proto.
#include "export/hf_tokenizer.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/file_util.h"
#include "common/status.h"

namespace gmlp::exporter {
namespace {

// Key order as written (tokenizers' own files read the same way, and diffs stay readable).
using Json = nlohmann::ordered_json;

// The word-boundary mark SentencePiece writes for a space (U+2581).
constexpr char kSpaceMark[] = "\xE2\x96\x81";

// The special pieces every gmlp model has at ids 0-4 (tokenizer/tokenizer.h).
constexpr const char* kSpecialPieces[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
constexpr int32_t kUnkId = 1, kClsId = 2, kSepId = 3;

// sentencepiece_model.proto's enums.
enum PieceType {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};
enum ModelType { kUnigram = 1, kBpe = 2 };

// What the export needs of a sentencepiece.ModelProto, with proto2's defaults for absent fields.
struct SpmModel {
  struct Piece {
    std::string piece;
    float score = 0;
    int type = kNormal;
  };
  std::vector<Piece> pieces;                // ModelProto.pieces (1)
  int model_type = kUnigram;                // TrainerSpec (2): model_type (3)
  bool byte_fallback = false;               //   byte_fallback (35)
  int32_t unk_id = 0;                       //   unk_id (40)
  bool treat_whitespace_as_suffix = false;  //   treat_whitespace_as_suffix (24)
  std::string precompiled_charsmap;         // NormalizerSpec (3): precompiled_charsmap (2)
  bool add_dummy_prefix = true;             //   add_dummy_prefix (3)
  bool remove_extra_whitespaces = true;     //   remove_extra_whitespaces (4)
  bool escape_whitespaces = true;           //   escape_whitespaces (5)
};

// ---------------------------------------------------------------------------------------------
// Protobuf wire format (https://protobuf.dev/programming-guides/encoding/): a message is a run of
// fields, each a varint key (field number << 3 | wire type) and a value: a varint (type 0), 8
// bytes (1), a varint length and that many bytes (2: strings, bytes, nested messages) or 4 bytes
// (5). Errors name the byte offset in the file.

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  size_t offset = 0;        // of the field's key in the file
  uint64_t varint = 0;      // kVarint
  uint32_t fixed32 = 0;     // kFixed32
  absl::string_view bytes;  // kLengthDelimited
  size_t bytes_offset = 0;  // of `bytes` in the file
};

class WireReader {
 public:
  // `data` starts at byte `offset` of the file.
  WireReader(absl::string_view data, size_t offset) : data_(data), base_(offset) {}

  bool done() const { return pos_ >= data_.size(); }

  absl::Status Next(Field* f) {
    f->offset = base_ + pos_;
    uint64_t key = 0;
    GMLP_RETURN_IF_ERROR(Varint(&key));
    f->number = static_cast<uint32_t>(key >> 3);
    f->wire_type = static_cast<uint32_t>(key & 7);
    if (f->number == 0 || (key >> 3) > 0x1FFFFFFF) {
      return Error(f->offset, absl::StrCat("invalid field number ", key >> 3));
    }
    switch (f->wire_type) {
      case kVarint:
        return Varint(&f->varint);
      case kFixed64:
        return Take(8, &f->bytes, "8-byte value");
      case kFixed32: {
        absl::string_view v;
        GMLP_RETURN_IF_ERROR(Take(4, &v, "4-byte value"));
        std::memcpy(&f->fixed32, v.data(), 4);  // little-endian, as is every gmlp target
        return absl::OkStatus();
      }
      case kLengthDelimited: {
        const size_t at = base_ + pos_;
        uint64_t length = 0;
        GMLP_RETURN_IF_ERROR(Varint(&length));
        if (length > data_.size() - pos_) {
          return Error(at, absl::StrCat("length ", length, " of field ", f->number,
                                        " runs past the end of its message (", data_.size() - pos_,
                                        " bytes left)"));
        }
        f->bytes_offset = base_ + pos_;
        return Take(static_cast<size_t>(length), &f->bytes, "");
      }
      default:
        return Error(f->offset,
                     absl::StrCat("unsupported wire type ", f->wire_type, " of field ", f->number));
    }
  }

 private:
  absl::Status Varint(uint64_t* v) {
    const size_t start = base_ + pos_;
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Error(start, "truncated varint");
      const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
      *v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (b < 0x80) return absl::OkStatus();
    }
    return Error(start, "varint longer than 10 bytes");
  }

  absl::Status Take(size_t n, absl::string_view* out, absl::string_view what) {
    if (n > data_.size() - pos_) {
      return Error(base_ + pos_, absl::StrCat("truncated ", what));
    }
    *out = data_.substr(pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }

  static absl::Status Error(size_t offset, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(what, " at byte ", offset));
  }

  absl::string_view data_;
  size_t base_;
  size_t pos_ = 0;
};

// Calls `on_field` for each field of the message `data` (at byte `offset` of the file).
absl::Status ForEachField(absl::string_view data, size_t offset,
                          const std::function<absl::Status(const Field&)>& on_field) {
  WireReader reader(data, offset);
  while (!reader.done()) {
    Field f;
    GMLP_RETURN_IF_ERROR(reader.Next(&f));
    GMLP_RETURN_IF_ERROR(on_field(f));
  }
  return absl::OkStatus();
}

// A known field with another wire type than its declaration's is a corrupt file.
absl::Status Expect(const Field& f, uint32_t wire_type, absl::string_view name) {
  if (f.wire_type == wire_type) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name, " (field ", f.number, ") has wire type ",
                                                 f.wire_type, ", not ", wire_type, ", at byte ",
                                                 f.offset));
}

absl::Status ParsePiece(const Field& message, SpmModel::Piece* p) {
  return ForEachField(message.bytes, message.bytes_offset, [&](const Field& f) -> absl::Status {
    switch (f.number) {
      case 1:
        GMLP_RETURN_IF_ERROR(Expect(f, kLengthDelimited, "SentencePiece.piece"));
        p->piece = std::string(f.bytes);
        break;
      case 2:
        GMLP_RETURN_IF_ERROR(Expect(f, kFixed32, "SentencePiece.score"));
        std::memcpy(&p->score, &f.fixed32, 4);
        break;
      case 3:
        GMLP_RETURN_IF_ERROR(Expect(f, kVarint, "SentencePiece.type"));
        p->type = static_cast<int>(f.varint);
        break;
    }
    return absl::OkStatus();
  });
}

absl::Status ParseTrainerSpec(const Field& message, SpmModel* m) {
  return ForEachField(message.bytes, message.bytes_offset, [&](const Field& f) -> absl::Status {
    switch (f.number) {
      case 3:
        GMLP_RETURN_IF_ERROR(Expect(f, kVarint, "TrainerSpec.model_type"));
        m->model_type = static_cast<int>(f.varint);
        break;
      case 24:
        GMLP_RETURN_IF_ERROR(Expect(f, kVarint, "TrainerSpec.treat_whitespace_as_suffix"));
        m->treat_whitespace_as_suffix = f.varint != 0;
        break;
      case 35:
        GMLP_RETURN_IF_ERROR(Expect(f, kVarint, "TrainerSpec.byte_fallback"));
        m->byte_fallback = f.varint != 0;
        break;
      case 40:  // int32: a negative value is a 10-byte varint of its 64-bit two's complement
        GMLP_RETURN_IF_ERROR(Expect(f, kVarint, "TrainerSpec.unk_id"));
        m->unk_id = static_cast<int32_t>(f.varint);
        break;
    }
    return absl::OkStatus();
  });
}

absl::Status ParseNormalizerSpec(const Field& message, SpmModel* m) {
  return ForEachField(message.bytes, message.bytes_offset, [&](const Field& f) -> absl::Status {
    switch (f.number) {
      case 2:
        GMLP_RETURN_IF_ERROR(Expect(f, kLengthDelimited, "NormalizerSpec.precompiled_charsmap"));
        m->precompiled_charsmap = std::string(f.bytes);
        break;
      case 3:
        GMLP_RETURN_IF_ERROR(Expect(f, kVarint, "NormalizerSpec.add_dummy_prefix"));
        m->add_dummy_prefix = f.varint != 0;
        break;
      case 4:
        GMLP_RETURN_IF_ERROR(Expect(f, kVarint, "NormalizerSpec.remove_extra_whitespaces"));
        m->remove_extra_whitespaces = f.varint != 0;
        break;
      case 5:
        GMLP_RETURN_IF_ERROR(Expect(f, kVarint, "NormalizerSpec.escape_whitespaces"));
        m->escape_whitespaces = f.varint != 0;
        break;
    }
    return absl::OkStatus();
  });
}

// Parses a ModelProto. Fields the export does not use are skipped; a message given twice is
// merged, as protobuf does (its later scalar fields win).
absl::Status ParseModel(absl::string_view bytes, SpmModel* m) {
  return ForEachField(bytes, 0, [&](const Field& f) -> absl::Status {
    switch (f.number) {
      case 1:
        GMLP_RETURN_IF_ERROR(Expect(f, kLengthDelimited, "ModelProto.pieces"));
        m->pieces.emplace_back();
        return ParsePiece(f, &m->pieces.back());
      case 2:
        GMLP_RETURN_IF_ERROR(Expect(f, kLengthDelimited, "ModelProto.trainer_spec"));
        return ParseTrainerSpec(f, m);
      case 3:
        GMLP_RETURN_IF_ERROR(Expect(f, kLengthDelimited, "ModelProto.normalizer_spec"));
        return ParseNormalizerSpec(f, m);
    }
    return absl::OkStatus();
  });
}

// ---------------------------------------------------------------------------------------------
// Checks that the model is one `gmlp tokenizer train` writes and this export reproduces.

bool IsValidUtf8(absl::string_view s) {
  try {
    (void)Json(std::string(s)).dump();  // the writer below refuses invalid UTF-8 the same way
    return true;
  } catch (const Json::exception&) {
    return false;
  }
}

// DataLoss (the file is not a sound model) or FailedPrecondition (a model this export refuses),
// the message without the file name.
absl::Status CheckModel(const SpmModel& m) {
  if (m.pieces.size() < std::size(kSpecialPieces)) {
    return absl::DataLossError(absl::StrCat("only ", m.pieces.size(), " pieces"));
  }
  for (size_t id = 0; id < m.pieces.size(); ++id) {
    const SpmModel::Piece& p = m.pieces[id];
    if (p.piece.empty() || !IsValidUtf8(p.piece)) {
      return absl::DataLossError(
          absl::StrCat("piece ", id, p.piece.empty() ? " is empty" : " is not valid UTF-8"));
    }
    if (p.type < kNormal || p.type > kByte) {
      return absl::DataLossError(absl::StrCat("piece ", id, " has type ", p.type));
    }
    if (p.type == kUserDefined || p.type == kUnused) {
      return absl::FailedPreconditionError(absl::StrCat(
          "piece ", id, " '", p.piece, "' is ", p.type == kUnused ? "unused" : "user-defined",
          ", which `gmlp tokenizer train` never writes and this export does not reproduce"));
    }
  }
  for (int32_t id = 0; id < static_cast<int32_t>(std::size(kSpecialPieces)); ++id) {
    const SpmModel::Piece& p = m.pieces[id];
    const int type = id == kUnkId ? kUnknown : kControl;
    if (p.piece != kSpecialPieces[id] || p.type != type) {
      return absl::FailedPreconditionError(absl::StrCat(
          "id ", id, " is '", p.piece, "' of type ", p.type, ", not ", kSpecialPieces[id],
          " of type ", type, "; only models `gmlp tokenizer train` writes are exported"));
    }
  }
  if (m.unk_id != kUnkId) {
    return absl::FailedPreconditionError(
        absl::StrCat("its unk_id is ", m.unk_id, ", not ", kUnkId, " ([UNK])"));
  }
  if (m.model_type != kUnigram && m.model_type != kBpe) {
    return absl::FailedPreconditionError(
        absl::StrCat("its model_type is ", m.model_type,
                     " (3 = word, 4 = char); only unigram and bpe models are exported"));
  }
  if (!m.escape_whitespaces || m.treat_whitespace_as_suffix) {
    return absl::FailedPreconditionError(
        "it does not mark a word's start with U+2581 (escape_whitespaces off or "
        "treat_whitespace_as_suffix on); the Metaspace pre-tokenizer cannot reproduce that");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// tokenizer.json, as tokenizers 0.2x serializes a Tokenizer.

Json Replace(Json pattern, const std::string& content) {
  return Json{{"type", "Replace"}, {"pattern", std::move(pattern)}, {"content", content}};
}
Json Regex(const std::string& re) { return Json{{"Regex", re}}; }
Json Literal(const std::string& s) { return Json{{"String", s}}; }

// SentencePiece's normalizer: the precompiled charsmap (NFKC and friends, tabs and newlines to
// spaces), then, on its output, leading, trailing and repeated spaces dropped
// (remove_extra_whitespaces counts only the space), spaces escaped as U+2581, and the dummy
// prefix. The prefix itself is added by the Metaspace pre-tokenizer, which skips it when the text
// already starts with U+2581 and SentencePiece does not: so such a start is doubled here.
Json Normalizer(const SpmModel& m) {
  Json steps = Json::array();
  if (!m.precompiled_charsmap.empty()) {
    steps.push_back(Json{{"type", "Precompiled"},
                         {"precompiled_charsmap", absl::Base64Escape(m.precompiled_charsmap)}});
  }
  if (m.remove_extra_whitespaces) {
    steps.push_back(Replace(Regex("\\A +| +\\z"), ""));
    steps.push_back(Replace(Regex(" {2,}"), " "));
  }
  steps.push_back(Replace(Literal(" "), kSpaceMark));
  if (m.add_dummy_prefix) {
    steps.push_back(
        Replace(Regex(absl::StrCat("\\A", kSpaceMark)), absl::StrCat(kSpaceMark, kSpaceMark)));
  }
  return Json{{"type", "Sequence"}, {"normalizers", std::move(steps)}};
}

// The whole normalized text is one pre-token (split: false), so the model sees all of it as
// SentencePiece does; "always" prepends the mark to every stretch of text between added tokens.
Json PreTokenizer(const SpmModel& m) {
  if (!m.add_dummy_prefix) return nullptr;
  return Json{{"type", "Metaspace"},
              {"replacement", kSpaceMark},
              {"prepend_scheme", "always"},
              {"split", false}};
}

// `[CLS] a [SEP]` and `[CLS] a [SEP] b [SEP]`, type ids 0 then 1 (finetune::PackExample).
Json PostProcessor() {
  auto special = [](const std::string& token, int type_id) {
    return Json{{"SpecialToken", {{"id", token}, {"type_id", type_id}}}};
  };
  auto sequence = [](const std::string& id, int type_id) {
    return Json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
  };
  auto special_token = [](const std::string& token, int32_t id) {
    return Json{{"id", token}, {"ids", {id}}, {"tokens", {token}}};
  };
  return Json{
      {"type", "TemplateProcessing"},
      {"single", {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)}},
      {"pair",
       {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0), sequence("B", 1),
        special("[SEP]", 1)}},
      {"special_tokens",
       {{"[CLS]", special_token("[CLS]", kClsId)}, {"[SEP]", special_token("[SEP]", kSepId)}}}};
}

// Marks back to spaces, byte pieces back to bytes, and the dummy prefix's space dropped.
Json Decoder(const SpmModel& m) {
  Json steps = Json::array({Replace(Literal(kSpaceMark), " ")});
  if (m.byte_fallback) steps.push_back(Json{{"type", "ByteFallback"}});
  if (m.add_dummy_prefix) {
    // Strip works on each token: fuse them first so that only the text's start is stripped.
    steps.push_back(Json{{"type", "Fuse"}});
    steps.push_back(Json{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  } else if (m.byte_fallback) {
    steps.push_back(Json{{"type", "Fuse"}});
  }
  return Json{{"type", "Sequence"}, {"decoders", std::move(steps)}};
}

// The vocabulary with SentencePiece's scores, as float32 values exactly (a double holds them).
// Control, unknown and byte pieces join the Unigram trie, unlike in SentencePiece: the header's
// second mismatch class.
Json UnigramModel(const SpmModel& m) {
  Json vocab = Json::array();
  for (const SpmModel::Piece& p : m.pieces) {
    vocab.push_back(Json::array({p.piece, static_cast<double>(p.score)}));
  }
  return Json{{"type", "Unigram"},
              {"unk_id", m.unk_id},
              {"vocab", std::move(vocab)},
              {"byte_fallback", m.byte_fallback}};
}

// SentencePiece's BPE merges, at each step, the adjacent pair whose concatenation is the
// best-scoring normal piece. As merges: every split of a normal piece into two normal pieces,
// ranked by the piece's score (highest first), then id, then the left part (transformers'
// SentencePieceExtractor order). Splits are at character boundaries.
Json BpeModel(const SpmModel& m) {
  std::unordered_map<std::string, int32_t> normal;
  for (int32_t id = 0; id < static_cast<int32_t>(m.pieces.size()); ++id) {
    if (m.pieces[id].type == kNormal) normal.emplace(m.pieces[id].piece, id);
  }
  struct Merge {
    float score;
    int32_t id;
    std::string left, right;
  };
  std::vector<Merge> merges;
  for (const auto& [piece, id] : normal) {
    for (size_t cut = 1; cut < piece.size(); ++cut) {
      if ((static_cast<uint8_t>(piece[cut]) & 0xC0) == 0x80) continue;  // inside a character
      std::string left = piece.substr(0, cut), right = piece.substr(cut);
      if (normal.count(left) > 0 && normal.count(right) > 0) {
        merges.push_back({m.pieces[id].score, id, std::move(left), std::move(right)});
      }
    }
  }
  std::sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    return std::tie(b.score, a.id, a.left) < std::tie(a.score, b.id, b.left);
  });
  Json vocab = Json::object(), merge_list = Json::array();
  for (int32_t id = 0; id < static_cast<int32_t>(m.pieces.size()); ++id) {
    vocab[m.pieces[id].piece] = id;
  }
  for (const Merge& merge : merges) merge_list.push_back(Json::array({merge.left, merge.right}));
  return Json{{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", m.pieces[m.unk_id].piece},
              {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr},
              {"fuse_unk", true},  // SentencePiece too emits a run of unknown characters as one
              {"byte_fallback", m.byte_fallback},
              {"ignore_merges", false},
              {"vocab", std::move(vocab)},
              {"merges", std::move(merge_list)}};
}

Json TokenizerJson(const SpmModel& m) {
  // The specials are added tokens, so a text's "[MASK]" is the mask token (header: second class).
  Json added = Json::array();
  for (int32_t id = 0; id < static_cast<int32_t>(std::size(kSpecialPieces)); ++id) {
    added.push_back(Json{{"id", id},
                         {"content", kSpecialPieces[id]},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", true}});
  }
  return Json{{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", std::move(added)},
              {"normalizer", Normalizer(m)},
              {"pre_tokenizer", PreTokenizer(m)},
              {"post_processor", PostProcessor()},
              {"decoder", Decoder(m)},
              {"model", m.model_type == kBpe ? BpeModel(m) : UnigramModel(m)}};
}

Json SpecialTokensMap() {
  return Json{{"pad_token", "[PAD]"},
              {"unk_token", "[UNK]"},
              {"cls_token", "[CLS]"},
              {"sep_token", "[SEP]"},
              {"mask_token", "[MASK]"}};
}

// PreTrainedTokenizerFast takes tokenizer.json as it is (transformers 5's BertTokenizerFast
// would build a WordPiece model of its own instead); model_input_names adds token_type_ids.
Json TokenizerConfig(int64_t model_max_length) {
  Json config = Json{{"tokenizer_class", "PreTrainedTokenizerFast"},
                     {"model_max_length", model_max_length},
                     {"model_input_names", {"input_ids", "token_type_ids", "attention_mask"}},
                     {"padding_side", "right"},
                     {"truncation_side", "right"},
                     {"clean_up_tokenization_spaces", false}};
  const Json specials = SpecialTokensMap();
  for (const auto& [key, value] : specials.items()) config[key] = value;
  return config;
}

}  // namespace

absl::Status WriteHfTokenizerFiles(const std::string& spm_model_path, const std::string& out_dir,
                                   int64_t model_max_length) {
  if (model_max_length < 2) {
    return absl::InvalidArgumentError(absl::StrCat("model_max_length is ", model_max_length,
                                                   "; it must hold at least [CLS] and [SEP]"));
  }
  if (!IsDirectory(out_dir)) {
    return absl::NotFoundError(absl::StrCat(out_dir,
                                            ": no such directory to write the "
                                            "Hugging Face tokenizer files into"));
  }
  GMLP_ASSIGN_OR_RETURN(const std::string bytes, ReadFile(spm_model_path));
  SpmModel model;
  absl::Status st = ParseModel(bytes, &model);
  if (st.ok()) st = CheckModel(model);
  if (absl::IsFailedPrecondition(st)) {
    return absl::FailedPreconditionError(absl::StrCat(spm_model_path, ": ", st.message()));
  }
  if (!st.ok()) {
    return absl::DataLossError(absl::StrCat(spm_model_path, ": not a SentencePiece model (",
                                            st.message(), ", ", bytes.size(), "-byte file)"));
  }
  GMLP_RETURN_IF_ERROR(
      WriteFileAtomic(JoinPath(out_dir, "tokenizer.json"), TokenizerJson(model).dump(2) + "\n"));
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(out_dir, "tokenizer_config.json"),
                                       TokenizerConfig(model_max_length).dump(2) + "\n"));
  return WriteFileAtomic(JoinPath(out_dir, "special_tokens_map.json"),
                         SpecialTokensMap().dump(2) + "\n");
}

}  // namespace gmlp::exporter

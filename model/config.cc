// EncoderConfig validation, JSON (de)serialization and the named presets.
#include "model/config.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/field_json.h"
#include "common/status.h"
#include "model/arch.h"

namespace gmlp::model {
namespace {

absl::Status Invalid(absl::string_view msg) { return InvalidConfig(msg); }

constexpr int64_t kMaxDimension = int64_t{1} << 20;
constexpr int64_t kMaxTensorElements = int64_t{1} << 31;

}  // namespace

absl::Status InvalidConfig(absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat("encoder config: ", msg));
}

absl::Status CheckPositive(const char* name, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return InvalidConfig(absl::StrCat(name, " must be > 0, got ", value));
}

absl::Status CheckOneOf(const char* name, const std::string& value,
                        const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return absl::OkStatus();
  return InvalidConfig(
      absl::StrCat(name, " must be one of ", absl::StrJoin(allowed, "|"), ", got \"", value, "\""));
}

absl::Status EncoderConfig::Validate() const {
  const ArchSpec* spec = FindArch(arch);
  if (spec == nullptr) GMLP_RETURN_IF_ERROR(CheckOneOf("arch", arch, ArchNames()));
  // Every arch's, though each reads only its own: they are saved in config.json, where a value
  // no arch accepts would wait to break the run that switches arch.
  GMLP_RETURN_IF_ERROR(CheckOneOf("sgu", sgu, SguVariants()));
  GMLP_RETURN_IF_ERROR(CheckOneOf("attn_input", attn_input, AttnInputs()));
  GMLP_RETURN_IF_ERROR(CheckOneOf("position", position, PositionSchemes()));
  GMLP_RETURN_IF_ERROR(CheckPositive("vocab_size", vocab_size));
  GMLP_RETURN_IF_ERROR(CheckPositive("max_seq_len", max_seq_len));
  GMLP_RETURN_IF_ERROR(CheckPositive("type_vocab_size", type_vocab_size));
  GMLP_RETURN_IF_ERROR(CheckPositive("d_model", d_model));
  GMLP_RETURN_IF_ERROR(CheckPositive("n_layers", n_layers));
  GMLP_RETURN_IF_ERROR(CheckPositive("d_ffn", d_ffn));
  // Sizes LibTorch could not allocate, or whose products overflow into negative dimensions
  // (attn_size 2^62 did), are refused here, naming the key; so is a negative size of another
  // arch (0 stays allowed there: the blocks check their own sizes are > 0).
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"vocab_size", vocab_size},
                                    {"max_seq_len", max_seq_len},
                                    {"type_vocab_size", type_vocab_size},
                                    {"d_model", d_model},
                                    {"n_layers", n_layers},
                                    {"d_ffn", d_ffn},
                                    {"n_heads", n_heads},
                                    {"attn_size", attn_size},
                                    {"token_mlp_dim", token_mlp_dim}}) {
    if (value < 0 || value > kMaxDimension) {
      return Invalid(
          absl::StrCat(name, " must be in [1, ", kMaxDimension, "] (2^20), got ", value));
    }
  }
  // The largest weight matrices and per-sequence activations (every dimension <= 2^20, so
  // these products fit in int64).
  for (const auto& [name, elements] :
       {std::pair<const char*, int64_t>{"vocab_size x d_model", vocab_size * d_model},
        {"d_model x d_ffn", d_model * d_ffn},
        {"max_seq_len x max_seq_len", max_seq_len * max_seq_len},
        {"max_seq_len x d_ffn", max_seq_len * d_ffn},
        {"max_seq_len x token_mlp_dim", max_seq_len * token_mlp_dim},
        {"d_ffn x attn_size", d_ffn * attn_size}}) {
    if (elements > kMaxTensorElements) {
      return Invalid(absl::StrCat(name, " = ", elements, " elements, more than ",
                                  kMaxTensorElements, " (2^31) in one tensor"));
    }
  }
  if (!(dropout >= 0.0 && dropout < 1.0)) {
    return Invalid(absl::StrCat("dropout must be in [0, 1), got ", dropout));
  }
  if (!(layer_norm_eps > 0.0 && layer_norm_eps <= 1.0)) {
    return Invalid(absl::StrCat("layer_norm_eps must be in (0, 1], got ", layer_norm_eps));
  }
  if (!(init_std >= 0.0 && init_std <= 1.0)) {
    return Invalid(absl::StrCat("init_std must be in [0, 1], got ", init_std));
  }
  if (!(sgu_init_eps >= 0.0 && sgu_init_eps <= 1.0)) {
    return Invalid(absl::StrCat("sgu_init_eps must be in [0, 1], got ", sgu_init_eps));
  }
  return spec->block.validate(*this);
}

nlohmann::json EncoderConfig::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  ForEachField(*this, [&j](const char* name, const auto& field, const char*) { j[name] = field; });
  return j;
}

absl::StatusOr<EncoderConfig> EncoderConfig::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) {
    return Invalid(absl::StrCat("expected a JSON object, got ", j.type_name()));
  }
  EncoderConfig c;
  // Keys absent from `j` keep their defaults, so configs written before a knob existed load.
  for (const auto& item : j.items()) {
    absl::Status st = Invalid(
        absl::StrCat("unknown key '", item.key(), "' (a config from a newer gmlp, or a typo)"));
    ForEachField(c, [&](const char* name, auto& field, const char*) {
      if (item.key() != name) return;
      const std::string problem = ReadJsonValue(item.value(), &field);
      st = problem.empty() ? absl::OkStatus() : Invalid(absl::StrCat("\"", name, "\"", problem));
    });
    GMLP_RETURN_IF_ERROR(st);
  }
  GMLP_RETURN_IF_ERROR(c.Validate());
  return c;
}

namespace {

// Families share d_model and are balanced by depth, as the paper does (its gMLP-base is deeper
// and narrower than BERT-base): gMLP/aMLP keep d_ffn = 6 d, the Transformer and the mixer's
// channel MLP 4 d; FNet, whose mixing has no parameters, takes the Transformer's d and depth with
// d_ffn = 6 d. Non-embedding counts at n = 128 agree within 10% inside a family (tested).
struct PresetRow {
  const char* name;
  const char* arch;
  int64_t d_model, n_layers, d_ffn, n_heads, token_mlp_dim;
};

constexpr PresetRow kPresets[] = {
    // name              arch           d    L   d_ffn  heads token_mlp
    {"transformer-tiny", "transformer", 128, 4, 512, 2, 0},
    {"gmlp-tiny", "gmlp", 128, 5, 768, 0, 0},
    {"amlp-tiny", "amlp", 128, 4, 768, 0, 0},
    {"mixer-tiny", "mixer", 128, 4, 512, 0, 256},
    {"fnet-tiny", "fnet", 128, 4, 768, 0, 0},
    {"transformer-mini", "transformer", 192, 4, 768, 3, 0},
    {"gmlp-mini", "gmlp", 192, 5, 1152, 0, 0},
    {"amlp-mini", "amlp", 192, 4, 1152, 0, 0},
    {"mixer-mini", "mixer", 192, 5, 768, 0, 256},
    {"fnet-mini", "fnet", 192, 4, 1152, 0, 0},
    {"transformer-small", "transformer", 256, 6, 1024, 4, 0},
    {"gmlp-small", "gmlp", 256, 8, 1536, 0, 0},
    {"amlp-small", "amlp", 256, 7, 1536, 0, 0},
    {"mixer-small", "mixer", 256, 8, 1024, 0, 256},
    {"fnet-small", "fnet", 256, 6, 1536, 0, 0},
    // The paper's BERT-setting shapes (Liu et al. 2021, Sec. 4): BERT-base, gMLP-base and
    // aMLP-base (gMLP-base + a 64-wide tiny attention), at BERT's vocabulary and length.
    {"transformer-base", "transformer", 768, 12, 3072, 12, 0},
    {"gmlp-base", "gmlp", 512, 48, 3072, 0, 0},
    {"amlp-base", "amlp", 512, 48, 3072, 0, 0},
    {"mixer-base", "mixer", 768, 12, 3072, 0, 512},
    // FNet-base: BERT-base's shape with the feed-forward widened to 6 d (the paper's FNet-Base
    // keeps 4 d and so has fewer parameters than BERT-base), at the family's parameter count.
    {"fnet-base", "fnet", 768, 12, 4608, 0, 0},
};

}  // namespace

absl::StatusOr<EncoderConfig> Preset(absl::string_view name) {
  for (const PresetRow& row : kPresets) {
    if (name != row.name) continue;
    EncoderConfig c;
    c.arch = row.arch;
    c.d_model = row.d_model;
    c.n_layers = row.n_layers;
    c.d_ffn = row.d_ffn;
    if (row.n_heads > 0) c.n_heads = row.n_heads;
    if (row.token_mlp_dim > 0) c.token_mlp_dim = row.token_mlp_dim;
    if (absl::EndsWith(name, "-base")) {
      c.vocab_size = 30522;
      c.max_seq_len = 512;
    }
    GMLP_RETURN_IF_ERROR(c.Validate());
    return c;
  }
  return absl::NotFoundError(absl::StrCat("unknown encoder preset '", name,
                                          "'; known: ", absl::StrJoin(PresetNames(), ", ")));
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const PresetRow& row : kPresets) names.push_back(row.name);
  return names;
}

}  // namespace gmlp::model

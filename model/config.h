// EncoderConfig: the one source of truth for an encoder's architecture. Saved in every
// checkpoint (as JSON, keys = field names) and read back on resume and finetuning.
#ifndef GMLP_MODEL_CONFIG_H_
#define GMLP_MODEL_CONFIG_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmlp::model {

struct EncoderConfig {
  // A name in the arch table (model/arch.h): transformer | gmlp | amlp | mixer | fnet. "amlp" is
  // gMLP with the tiny attention switched on (same code path, see gmlp.h).
  std::string arch = "gmlp";
  int64_t vocab_size = 8192;
  int64_t max_seq_len = 128;    // n: the spatial projection is n x n; shorter inputs are allowed
  int64_t type_vocab_size = 2;  // segment ids
  int64_t d_model = 128;
  int64_t n_layers = 4;
  // gMLP/aMLP: output width of U (Z is d_ffn wide; split halves are d_ffn/2).
  // Transformer: feed-forward hidden width. Mixer: channel-MLP hidden width.
  int64_t d_ffn = 768;
  int64_t n_heads = 2;               // transformer only
  std::string sgu = "split";         // split | multiplicative | additive | linear (gmlp/amlp)
  int64_t attn_size = 64;            // amlp: tiny attention head size
  std::string attn_input = "block";  // amlp: "block" (LN(x), the paper) or "expanded" (Z)
  int64_t token_mlp_dim = 256;       // mixer: hidden width of the MLP over the sequence axis
  bool pre_ln = false;               // transformer: BERT is post-LN
  // transformer: "learned" (BERT's position embeddings) or "alibi" (no position embeddings; each
  // head's attention scores get -slope * |i - j|, Press et al. 2022, bidirectional as MosaicBERT).
  std::string position = "learned";
  double dropout = 0.1;
  double layer_norm_eps = 1e-12;
  double init_std = 0.02;  // normal init of dense and embedding weights
  // SGU spatial weight W ~ U(-sgu_init_eps / n, sgu_init_eps / n), b = 1 (paper Sec. 2.1).
  double sgu_init_eps = 1e-3;

  // The field list, once: calls visit(name, field, help) for every field, in this order, with
  // `self` an EncoderConfig or a const one. ToJson and FromJson (and so the checkpoint's
  // "model" section and `--model_overrides`) are made from it.
  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    visit("arch", self.arch, "transformer | gmlp | amlp | mixer");
    visit("vocab_size", self.vocab_size, "token ids");
    visit("max_seq_len", self.max_seq_len, "longest input; gMLP's spatial projection is n x n");
    visit("type_vocab_size", self.type_vocab_size, "segment ids");
    visit("d_model", self.d_model, "hidden width");
    visit("n_layers", self.n_layers, "blocks");
    visit("d_ffn", self.d_ffn, "gMLP/aMLP: width of U; Transformer, mixer: feed-forward width");
    visit("n_heads", self.n_heads, "Transformer: attention heads");
    visit("sgu", self.sgu, "gMLP/aMLP: split | multiplicative | additive | linear");
    visit("attn_size", self.attn_size, "aMLP: tiny attention head size");
    visit("attn_input", self.attn_input, "aMLP: block (LN(x)) | expanded (Z)");
    visit("token_mlp_dim", self.token_mlp_dim, "mixer: hidden width of the token MLP");
    visit("pre_ln", self.pre_ln, "Transformer: pre-LN instead of BERT's post-LN");
    visit("position", self.position, "Transformer: learned (BERT) | alibi (distance bias)");
    visit("dropout", self.dropout, "dropout rate");
    visit("layer_norm_eps", self.layer_norm_eps, "LayerNorm epsilon");
    visit("init_std", self.init_std, "std of the normal init of dense and embedding weights");
    visit("sgu_init_eps", self.sgu_init_eps, "SGU spatial weight ~ U(-eps/n, eps/n)");
  }

  absl::Status Validate() const;
  nlohmann::json ToJson() const;
  // Reads the keys present in `j` over the defaults (so configs written before a knob existed
  // load); InvalidArgument names an unknown key or one of the wrong type, or what Validate finds.
  static absl::StatusOr<EncoderConfig> FromJson(const nlohmann::json& j);
};

// Named presets, e.g. "gmlp-tiny", "amlp-small", "transformer-mini", "mixer-tiny",
// "gmlp-base" (paper shapes). `vocab_size`/`max_seq_len` are left at the preset's values; callers
// override them from the data.
absl::StatusOr<EncoderConfig> Preset(absl::string_view name);
std::vector<std::string> PresetNames();

// For the blocks' Validate (model/arch.h): InvalidArgument "encoder config: <msg>", the check
// that an integer field is > 0 ...
absl::Status InvalidConfig(absl::string_view msg);
absl::Status CheckPositive(const char* name, int64_t value);
// ... and the check that a string field is one of `allowed`, naming them.
absl::Status CheckOneOf(const char* name, const std::string& value,
                        const std::vector<std::string>& allowed);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_CONFIG_H_

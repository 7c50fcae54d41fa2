// The arch table (see arch.h): one row per architecture, each with the checks of the fields only
// it reads and its per-block parameter and FLOP formulas just above it. Torch-free: the blocks'
// constructors are declared here and defined in their files (gmlp.cc, ...); a build without
// LibTorch (the fuzz targets, tests/fuzz) defines GMLP_ARCH_TABLE_WITHOUT_BLOCKS and gets the
// table without them.
#include "model/arch.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace gmlp::model {

#ifndef GMLP_ARCH_TABLE_WITHOUT_BLOCKS
std::shared_ptr<EncoderBlockImpl> MakeTransformerBlock(const EncoderConfig& config);
std::shared_ptr<EncoderBlockImpl> MakeGmlpBlock(const EncoderConfig& config);
std::shared_ptr<EncoderBlockImpl> MakeAmlpBlock(const EncoderConfig& config);
std::shared_ptr<EncoderBlockImpl> MakeMixerBlock(const EncoderConfig& config);
std::shared_ptr<EncoderBlockImpl> MakeFnetBlock(const EncoderConfig& config);
#define GMLP_BLOCK_MAKER(maker) &maker
#else
#define GMLP_BLOCK_MAKER(maker) nullptr
#endif

int64_t GateWidth(const EncoderConfig& config) {
  return config.sgu == "split" ? config.d_ffn / 2 : config.d_ffn;
}

namespace {

bool AlwaysFinalNorm(const EncoderConfig&) { return true; }  // pre-LN blocks
bool NoFinalNorm(const EncoderConfig&) { return false; }     // post-LN blocks
bool LearnedPositions(const EncoderConfig&) { return true; }
// Blocks that are position-aware themselves (the SGU's and the token MLP's n x n weights).
bool NoPositionEmbeddings(const EncoderConfig&) { return false; }

// --- transformer (transformer.cc): learned positions unless ALiBi; a final LayerNorm only when
// pre-LN (BERT is post-LN).
namespace transformer {

absl::Status Validate(const EncoderConfig& c) {
  GMLP_RETURN_IF_ERROR(CheckPositive("n_heads", c.n_heads));
  if (c.d_model % c.n_heads != 0) {
    return InvalidConfig(
        absl::StrCat("d_model (", c.d_model, ") must be divisible by n_heads (", c.n_heads, ")"));
  }
  return absl::OkStatus();
}

int64_t Params(const EncoderConfig& c) {
  const int64_t d = c.d_model, f = c.d_ffn;
  // attn_qkv (d -> 3d), attn_out, ffn_in, ffn_out, two LayerNorms.
  return LinearParams(d, 3 * d) + LinearParams(d, d) + LinearParams(d, f) + LinearParams(f, d) +
         2 * LayerNormParams(d);
}

double Flops(const EncoderConfig& c, double n) {
  const double d = c.d_model, f = c.d_ffn;
  // Projections q,k,v,o: 2 * 4 d^2. Scores q k^T and probs @ v: each 2 n d per token.
  // Feed-forward: 2 * 2 d f.
  return 8.0 * d * d + 4.0 * n * d + 4.0 * d * f;
}

bool FinalNormIfPreLn(const EncoderConfig& c) { return c.pre_ln; }
bool Positions(const EncoderConfig& c) { return c.position == "learned"; }

}  // namespace transformer

// --- gmlp and amlp (gmlp.cc): no position embeddings, a final LayerNorm. The tiny attention's
// width is the row's: none for gMLP, attn_size for aMLP; nothing reads the arch's name.
namespace gmlp_family {

template <bool kAmlp>
int64_t AttnSize(const EncoderConfig& c) {
  return kAmlp ? c.attn_size : 0;
}

template <bool kAmlp>
absl::Status Validate(const EncoderConfig& c) {
  if (c.sgu == "split" && c.d_ffn % 2 != 0) {
    return InvalidConfig(absl::StrCat("sgu=split halves Z, so d_ffn must be even, got ", c.d_ffn));
  }
  if (!(c.sgu_init_eps >= 0.0)) {
    return InvalidConfig(absl::StrCat("sgu_init_eps must be >= 0, got ", c.sgu_init_eps));
  }
  if (kAmlp) GMLP_RETURN_IF_ERROR(CheckPositive("attn_size", c.attn_size));
  return absl::OkStatus();
}

int64_t AttnInputWidth(const EncoderConfig& c) {
  return c.attn_input == "block" ? c.d_model : c.d_ffn;
}

template <bool kAmlp>
int64_t Params(const EncoderConfig& c) {
  const int64_t d = c.d_model, f = c.d_ffn, g = GateWidth(c), n_max = c.max_seq_len;
  const int64_t a = AttnSize<kAmlp>(c);
  // norm; U (as in_z1 + in_z2 for split: 2 (d g + g) = d f + f, the same count); sgu_norm;
  // W (n_max^2) and b (n_max); V (g -> d); aMLP: attn_qkv (in -> 3a), attn_out (a -> g).
  int64_t params = LayerNormParams(d) + LinearParams(d, f) + LayerNormParams(g) + n_max * n_max +
                   n_max + LinearParams(g, d);
  if (a > 0) params += LinearParams(AttnInputWidth(c), 3 * a) + LinearParams(a, g);
  return params;
}

template <bool kAmlp>
double Flops(const EncoderConfig& c, double n) {
  const double d = c.d_model, f = c.d_ffn, g = static_cast<double>(GateWidth(c));
  const double a = static_cast<double>(AttnSize<kAmlp>(c));
  // U: 2 d f. Spatial projection W (n x n) on g channels: 2 n g per token. V: 2 g d.
  double flops = 2.0 * d * f + 2.0 * n * g + 2.0 * g * d;
  if (a > 0) {
    const double in = static_cast<double>(AttnInputWidth(c));
    // q,k,v: 2 in 3a. Scores and probs @ v: 2 n a each. Output projection: 2 a g.
    flops += 6.0 * in * a + 4.0 * n * a + 2.0 * a * g;
  }
  return flops;
}

}  // namespace gmlp_family

// --- mixer (mixer.cc): no position embeddings (the token MLP is position-aware), a final
// LayerNorm.
namespace mixer {

absl::Status Validate(const EncoderConfig& c) {
  return CheckPositive("token_mlp_dim", c.token_mlp_dim);
}

int64_t Params(const EncoderConfig& c) {
  const int64_t d = c.d_model, f = c.d_ffn, t = c.token_mlp_dim, n_max = c.max_seq_len;
  // token MLP over positions (t x n_max + t, n_max x t + n_max), channel MLP, two LayerNorms.
  return (t * n_max + t) + (n_max * t + n_max) + LinearParams(d, f) + LinearParams(f, d) +
         2 * LayerNormParams(d);
}

double Flops(const EncoderConfig& c, double n) {
  const double d = c.d_model, f = c.d_ffn, t = c.token_mlp_dim;
  // Token MLP: (t x n) then (n x t) GEMMs on every channel: 2 t d + 2 t d per token.
  // Channel MLP: 2 * 2 d f.
  return 4.0 * t * d + 4.0 * d * f;
}

}  // namespace mixer

// --- fnet (fnet.cc): learned position embeddings (the paper's), no final LayerNorm (post-LN).
namespace fnet {

absl::Status Validate(const EncoderConfig&) { return absl::OkStatus(); }

int64_t Params(const EncoderConfig& c) {
  const int64_t d = c.d_model, f = c.d_ffn;
  // ffn_in, ffn_out, two LayerNorms; the Fourier mixing has no parameters.
  return LinearParams(d, f) + LinearParams(f, d) + 2 * LayerNormParams(d);
}

double Flops(const EncoderConfig& c, double n) {
  const double d = c.d_model, f = c.d_ffn;
  // Hidden-axis DFT as two (d x d) products: 4 d^2 per token. Sequence-axis DFT as two (n x n)
  // products on every channel: 4 n d per token. Feed-forward: 2 * 2 d f.
  return 4.0 * d * d + 4.0 * n * d + 4.0 * d * f;
}

}  // namespace fnet

}  // namespace

const std::vector<ArchSpec>& ArchTable() {
  namespace gf = gmlp_family;
  // One row per architecture reads better than clang-format's one field per line.
  // clang-format off
  static const auto* const kTable = new std::vector<ArchSpec>{
      // name, label, has_sgu, has_tiny_attention, has_position_schemes,
      // block: {make, position_embeddings, final_norm, validate, params, flops}
      {"transformer", "Transformer", false, false, true,
       {GMLP_BLOCK_MAKER(MakeTransformerBlock), &transformer::Positions,
        &transformer::FinalNormIfPreLn, &transformer::Validate, &transformer::Params,
        &transformer::Flops}},
      {"gmlp", "gMLP", true, false, false,
       {GMLP_BLOCK_MAKER(MakeGmlpBlock), &NoPositionEmbeddings, &AlwaysFinalNorm,
        &gf::Validate<false>, &gf::Params<false>, &gf::Flops<false>}},
      // gMLP + tiny attention (gmlp.h)
      {"amlp", "aMLP", true, true, false,
       {GMLP_BLOCK_MAKER(MakeAmlpBlock), &NoPositionEmbeddings, &AlwaysFinalNorm,
        &gf::Validate<true>, &gf::Params<true>, &gf::Flops<true>}},
      {"mixer", "MLP-Mixer", false, false, false,
       {GMLP_BLOCK_MAKER(MakeMixerBlock), &NoPositionEmbeddings, &AlwaysFinalNorm,
        &mixer::Validate, &mixer::Params, &mixer::Flops}},
      {"fnet", "FNet", false, false, false,
       {GMLP_BLOCK_MAKER(MakeFnetBlock), &LearnedPositions, &NoFinalNorm, &fnet::Validate,
        &fnet::Params, &fnet::Flops}},
  };
  // clang-format on
  return *kTable;
}

const ArchSpec* FindArch(absl::string_view name) {
  for (const ArchSpec& a : ArchTable()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::vector<std::string> ArchNames() {
  std::vector<std::string> names;
  for (const ArchSpec& a : ArchTable()) names.push_back(a.name);
  return names;
}

std::string ArchLabel(absl::string_view name) {
  const ArchSpec* a = FindArch(name);
  return a != nullptr ? a->label : std::string(name);
}

int ArchRank(absl::string_view name) {
  const std::vector<ArchSpec>& table = ArchTable();
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].name == name) return static_cast<int>(i);
  }
  return static_cast<int>(table.size());
}

const std::vector<std::string>& SguVariants() {
  static const auto* const kVariants =
      new std::vector<std::string>{"split", "multiplicative", "additive", "linear"};
  return *kVariants;
}

const std::vector<std::string>& PositionSchemes() {
  static const auto* const kSchemes = new std::vector<std::string>{"alibi", "learned"};
  return *kSchemes;
}

const std::vector<std::string>& AttnInputs() {
  static const auto* const kInputs = new std::vector<std::string>{"block", "expanded"};
  return *kInputs;
}

}  // namespace gmlp::model

// The arch table: every encoder architecture in one row (name, label, which of the knobs only
// some archs read it reads, and its block: constructor, checks, parameter and FLOP formulas).
// Config validation, the encoder factory, the parameter/FLOP counts, the study and its report all
// read it, so a new encoder is a block file pair plus one row here (see model/README.md, "Adding
// an encoder"). The table is torch-free: arch.cc holds each row's checks and formulas, and only
// the constructors live in the block files (LibTorch), so the config parsers build and are fuzzed
// without LibTorch (tests/fuzz; there the table has no constructors).
#ifndef GMLP_MODEL_ARCH_H_
#define GMLP_MODEL_ARCH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "model/config.h"

namespace gmlp::model {

class EncoderBlockImpl;

// An arch's block: its constructor (from the block's file), the two choices of the encoder body
// around it, the checks of the fields only it reads, and its per-block formulas (arch.cc).
struct BlockSpec {
  // Builds one block; `config` has passed Validate(). Null in torch-free builds.
  std::shared_ptr<EncoderBlockImpl> (*make)(const EncoderConfig& config);
  bool (*position_embeddings)(const EncoderConfig& config);  // the embeddings add positions
  bool (*final_norm)(const EncoderConfig& config);           // a LayerNorm follows the last block
  // Checks of the fields only this arch reads (the shared ones are EncoderConfig::Validate's).
  absl::Status (*validate)(const EncoderConfig& config);
  // Parameters of one block, and its forward matmul FLOPs per token at sequence length n.
  int64_t (*params)(const EncoderConfig& config);
  double (*flops)(const EncoderConfig& config, double n);
};

struct ArchSpec {
  std::string name;         // EncoderConfig::arch, preset prefix ("gmlp" in "gmlp-tiny")
  std::string label;        // for people: report tables and plot legends ("gMLP")
  bool has_sgu;             // reads EncoderConfig::sgu (the gMLP family)
  bool has_tiny_attention;  // reads EncoderConfig::attn_size and attn_input (aMLP)
  // reads EncoderConfig::position and pre_ln (the Transformer): the study runs one cell per
  // position scheme
  bool has_position_schemes;
  BlockSpec block;
};

// Every architecture, in the order reports list them (the Transformer baseline first).
const std::vector<ArchSpec>& ArchTable();
// nullptr for an unknown name.
const ArchSpec* FindArch(absl::string_view name);
std::vector<std::string> ArchNames();
// The label of `name`, or `name` itself when it is not in the table.
std::string ArchLabel(absl::string_view name);
// Position of `name` in the table (unknown names last).
int ArchRank(absl::string_view name);

// Parameter counts of LayerNorm and a biased linear map, for the blocks' formulas.
inline int64_t LayerNormParams(int64_t dim) { return 2 * dim; }
inline int64_t LinearParams(int64_t in, int64_t out) { return in * out + out; }
// Width of the gMLP family's gate (V's input) for the configured SGU variant.
int64_t GateWidth(const EncoderConfig& config);

// The SGU variants of the gMLP family (EncoderConfig::sgu), "split" (the paper's) first.
const std::vector<std::string>& SguVariants();
// The Transformer's position schemes (EncoderConfig::position): "alibi", "learned" (BERT's).
const std::vector<std::string>& PositionSchemes();
// aMLP's tiny-attention inputs (EncoderConfig::attn_input): "block" (LN(x)), "expanded" (Z).
const std::vector<std::string>& AttnInputs();

}  // namespace gmlp::model

#endif  // GMLP_MODEL_ARCH_H_

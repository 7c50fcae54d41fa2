// The arch table: every encoder architecture in one row (name, label, constructor, checks,
// parameter and FLOP formulas, whether it has a Spatial Gating Unit). Config validation, the
// encoder factory, the parameter/FLOP counts, the study and its report all read it, so a new
// encoder is a block file pair plus one row here (see model/README.md, "Adding an encoder").
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

class EncoderImpl;

// What an arch's block file supplies to its row: the checks of the fields only it reads, the
// parameters of one block, and its forward matmul FLOPs per token at sequence length n.
struct ArchFormulas {
  absl::Status (*validate)(const EncoderConfig& config);
  int64_t (*block_params)(const EncoderConfig& config);
  double (*block_flops)(const EncoderConfig& config, double n);
};

struct ArchSpec {
  std::string name;   // EncoderConfig::arch, preset prefix ("gmlp" in "gmlp-tiny")
  std::string label;  // for people: report tables and plot legends ("gMLP")
  bool has_sgu;       // reads EncoderConfig::sgu (the gMLP family)
  bool position_embeddings;
  // Builds the encoder; `config` has passed Validate().
  std::shared_ptr<EncoderImpl> (*make)(const EncoderConfig& config);
  // Checks of the fields only this arch reads (the shared ones are EncoderConfig::Validate's).
  absl::Status (*validate)(const EncoderConfig& config);
  // Parameters of one block, and whether a final LayerNorm follows the blocks.
  int64_t (*block_params)(const EncoderConfig& config);
  bool (*final_norm)(const EncoderConfig& config);
  // Forward matmul FLOPs per token of one block at sequence length n.
  double (*block_flops)(const EncoderConfig& config, double n);
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

// The SGU variants of the gMLP family (EncoderConfig::sgu), "split" (the paper's) first.
const std::vector<std::string>& SguVariants();

}  // namespace gmlp::model

#endif  // GMLP_MODEL_ARCH_H_

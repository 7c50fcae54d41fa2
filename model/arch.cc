// The arch table (see arch.h). One row per architecture; each block file supplies its BlockSpec.
#include "model/arch.h"

#include "model/fnet.h"
#include "model/gmlp.h"
#include "model/mixer.h"
#include "model/transformer.h"

namespace gmlp::model {

const std::vector<ArchSpec>& ArchTable() {
  static const auto* const kTable = new std::vector<ArchSpec>{
      // name, label, has_sgu, has_tiny_attention, has_position_schemes, block
      {"transformer", "Transformer", false, false, true, TransformerBlockSpec()},
      {"gmlp", "gMLP", true, false, false, GmlpBlockSpec()},
      {"amlp", "aMLP", true, true, false, AmlpBlockSpec()},  // gMLP + tiny attention (gmlp.h)
      {"mixer", "MLP-Mixer", false, false, false, MixerBlockSpec()},
      {"fnet", "FNet", false, false, false, FnetBlockSpec()},
  };
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

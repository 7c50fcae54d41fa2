// The arch table (see arch.h). One row per architecture; each row reads its block's statics.
#include "model/arch.h"

#include "model/gmlp.h"
#include "model/mixer.h"
#include "model/stacked_encoder.h"
#include "model/transformer.h"

namespace gmlp::model {
namespace {

template <typename Block>
ArchSpec Row(const char* name, const char* label, bool has_sgu, const ArchFormulas& f) {
  return {name,
          label,
          has_sgu,
          Block::kPositionEmbeddings,
          [](const EncoderConfig& c) -> std::shared_ptr<EncoderImpl> {
            return std::make_shared<StackedEncoderImpl<Block>>(c);
          },
          f.validate,
          f.block_params,
          &Block::HasFinalNorm,
          f.block_flops};
}

}  // namespace

const std::vector<ArchSpec>& ArchTable() {
  static const auto* const kTable = new std::vector<ArchSpec>{
      Row<TransformerBlockImpl>("transformer", "Transformer", /*has_sgu=*/false,
                                TransformerFormulas()),
      Row<GmlpBlockImpl>("gmlp", "gMLP", /*has_sgu=*/true, GmlpFormulas()),
      Row<GmlpBlockImpl>("amlp", "aMLP", /*has_sgu=*/true, GmlpFormulas()),  // + tiny attention
      Row<MixerBlockImpl>("mixer", "MLP-Mixer", /*has_sgu=*/false, MixerFormulas()),
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

}  // namespace gmlp::model

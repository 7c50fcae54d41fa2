// The encoders the paper's hypothesis is about, found in the arch table by what each row reads
// rather than by name, so study/ spells no architecture: the baseline (the row with position
// schemes: the Transformer), the gating encoder (an SGU without tiny attention: gMLP) and the
// gating encoder with tiny attention (aMLP).
#ifndef GMLP_STUDY_ROLES_H_
#define GMLP_STUDY_ROLES_H_

#include <string>

namespace gmlp::study {

struct StudyRoles {
  std::string baseline;          // its cells are the ones every other encoder is compared with
  std::string gating;            // the --sgu_variants ablation, and "gmlp" in the verdicts
  std::string gating_attention;  // "amlp" in the verdicts
};

// The first row of model::ArchTable() that fits each role.
const StudyRoles& Roles();

}  // namespace gmlp::study

#endif  // GMLP_STUDY_ROLES_H_

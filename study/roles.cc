#include "study/roles.h"

#include "model/arch.h"

namespace gmlp::study {

const StudyRoles& Roles() {
  static const StudyRoles roles = [] {
    StudyRoles r;
    for (const model::ArchSpec& a : model::ArchTable()) {
      if (r.baseline.empty() && a.has_position_schemes) r.baseline = a.name;
      if (r.gating.empty() && a.has_sgu && !a.has_tiny_attention) r.gating = a.name;
      if (r.gating_attention.empty() && a.has_sgu && a.has_tiny_attention) {
        r.gating_attention = a.name;
      }
    }
    return r;
  }();
  return roles;
}

}  // namespace gmlp::study

// The registry of reference blocks (see model_reference.h).
#include "tests/model_reference.h"

#include <map>

namespace gmlp::model::testing {
namespace {

std::map<std::string, ReferenceBlock>& Registry() {
  static auto* const registry = new std::map<std::string, ReferenceBlock>();
  return *registry;
}

}  // namespace

bool RegisterReferenceBlock(const std::string& arch, ReferenceBlock block) {
  Registry()[arch] = block;
  return true;
}

ReferenceBlock FindReferenceBlock(const std::string& arch) {
  const auto it = Registry().find(arch);
  return it == Registry().end() ? nullptr : it->second;
}

}  // namespace gmlp::model::testing

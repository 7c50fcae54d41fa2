// Which gmlp made an output: "0.1.0+g<commit>" (with "-dirty" for uncommitted changes), taken
// from git at build time (cmake/version.cmake); "0.1.0+unknown" outside a git checkout.
#ifndef GMLP_COMMON_VERSION_H_
#define GMLP_COMMON_VERSION_H_

namespace gmlp {

const char* GmlpVersion();

}  // namespace gmlp

#endif  // GMLP_COMMON_VERSION_H_

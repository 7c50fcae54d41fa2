// Status helpers shared by every library: the RETURN_IF_ERROR / ASSIGN_OR_RETURN pattern that
// Abseil 20220623 lacks (sentencepiece's src/common.h does the same), prefixed so they never
// clash with c10's bare macros.
#ifndef GMLP_COMMON_STATUS_H_
#define GMLP_COMMON_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GMLP_STATUS_CONCAT_INNER_(a, b) a##b
#define GMLP_STATUS_CONCAT_(a, b) GMLP_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define GMLP_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::absl::Status gmlp_status_ = (expr);        \
    if (!gmlp_status_.ok()) return gmlp_status_; \
  } while (0)

// `GMLP_ASSIGN_OR_RETURN(auto x, MakeX());` assigns the value of an absl::StatusOr or returns
// its error from the enclosing function.
#define GMLP_ASSIGN_OR_RETURN(lhs, expr) \
  GMLP_ASSIGN_OR_RETURN_IMPL_(GMLP_STATUS_CONCAT_(gmlp_statusor_, __LINE__), lhs, expr)
#define GMLP_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)   \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // GMLP_COMMON_STATUS_H_

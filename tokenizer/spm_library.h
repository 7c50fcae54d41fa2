// The process-wide handle on libgmlp_spm_shim.so (spm_shim.h), loaded once with
// dlmopen(LM_ID_NEWLM) so that SentencePiece and its protobuf live in a link namespace of their
// own, apart from LibTorch's. Internal to gmlp::tokenizer; other stages use Tokenizer and Train.
#ifndef GMLP_TOKENIZER_SPM_LIBRARY_H_
#define GMLP_TOKENIZER_SPM_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenizer/spm_shim.h"

namespace gmlp::tokenizer {

// The shim's entry points, resolved with dlsym.
struct SpmLibrary {
  decltype(&gmlp_spm_load) load;
  decltype(&gmlp_spm_free) free;
  decltype(&gmlp_spm_encode) encode;
  decltype(&gmlp_spm_decode) decode;
  decltype(&gmlp_spm_piece_size) piece_size;
  decltype(&gmlp_spm_id_to_piece) id_to_piece;
  decltype(&gmlp_spm_piece_type) piece_type;
  decltype(&gmlp_spm_load_serialized) load_serialized;
  decltype(&gmlp_spm_piece_score) piece_score;
  decltype(&gmlp_spm_train) train;
  std::string path;  // where the shim was loaded from
};

// Loads the shim on first use (thread-safe) and returns it; later calls return the same library,
// or the same error. Looks for libgmlp_spm_shim.so in this order: $GMLP_SPM_SHIM (a file path),
// the directory of the running executable, the build directory this library was compiled for.
absl::StatusOr<const SpmLibrary*> GetSpmLibrary();

// The candidate paths GetSpmLibrary() tries, in order (for error messages and tests).
std::vector<std::string> SpmShimCandidates();

}  // namespace gmlp::tokenizer

#endif  // GMLP_TOKENIZER_SPM_LIBRARY_H_

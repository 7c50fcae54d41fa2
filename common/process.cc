#include "common/process.h"

#include <malloc.h>

namespace gmlp {

void KeepFreedMemoryInProcess() {
  ::mallopt(M_MMAP_THRESHOLD, 1 << 30);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace gmlp

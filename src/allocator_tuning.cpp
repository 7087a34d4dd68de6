#include "src/allocator_tuning.h"

#include <cstddef>  // defines __GLIBC__ on glibc systems

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gpusim::cli {

void tune_allocator() {
#if defined(__GLIBC__)
  constexpr int kKeep = 256 << 20;  // bytes: more than a generate run's working set
  mallopt(M_TRIM_THRESHOLD, kKeep);
  mallopt(M_TOP_PAD, 16 << 20);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);  // large vectors from the heap too, so they are reused
#endif
}

}  // namespace gpusim::cli

#include "src/allocator_tuning.h"

#include <cstddef>  // defines __GLIBC__ on glibc systems

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// jemalloc's start-up options (read by jemalloc where it is linked, src/CMakeLists.txt; an unused
// symbol otherwise): transparent huge pages for its memory. A replayed trace fills tens of MiB
// once (the text, the parser's index); in 2 MiB pages that is a third of the page faults and 20-30%
// less wall time on a VM. Model runs are unchanged (measured: decode and prefill jobs within noise).
extern "C" {
const char* malloc_conf = "thp:always";
}

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

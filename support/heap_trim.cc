#include "support/heap_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kiln::support {

void ReleaseFreeHeapMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace kiln::support

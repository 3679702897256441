#include "support/check.h"

#include <cstdio>
#include <cstdlib>

namespace kiln::support {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  message_ << file << ":" << line << ": internal error: check failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", message_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace kiln::support

// Internal invariant checks. KILN_CHECK aborts with a message; use it only for conditions a
// user cannot cause (a bug in Kiln). Anything a user can get wrong returns absl::Status.
#pragma once

#include <sstream>
#include <string>

namespace kiln::support {

// Collects a streamed message and aborts when destroyed. Created only by the macros below.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return message_; }

 private:
  std::ostringstream message_;
};

// Lets the macro's ternary form discard a stream expression.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace kiln::support

#define KILN_CHECK(condition)                   \
  (condition) ? (void)0                         \
              : ::kiln::support::Voidify() &    \
                    ::kiln::support::CheckFailure(__FILE__, __LINE__, #condition).stream()

#define KILN_CHECK_OP(a, op, b) KILN_CHECK((a)op(b)) << "(" << (a) << " vs " << (b) << ") "
#define KILN_CHECK_EQ(a, b) KILN_CHECK_OP(a, ==, b)
#define KILN_CHECK_NE(a, b) KILN_CHECK_OP(a, !=, b)
#define KILN_CHECK_LT(a, b) KILN_CHECK_OP(a, <, b)
#define KILN_CHECK_LE(a, b) KILN_CHECK_OP(a, <=, b)
#define KILN_CHECK_GE(a, b) KILN_CHECK_OP(a, >=, b)
#define KILN_UNREACHABLE() KILN_CHECK(false) << "unreachable "

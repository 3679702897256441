// Gives the C library's free heap memory back to the operating system.
//
// glibc keeps freed memory in its arenas (up to eight per core, one per thread that
// allocated), so a long-running server's resident memory stays at its busiest level after a
// burst of requests handled on many threads. A server calls this once it goes idle.
#pragma once

namespace kiln::support {

// Returns the free memory of every arena to the system (glibc's malloc_trim); does nothing
// with another C library. Takes a few milliseconds; call it when idle, not per request.
void ReleaseFreeHeapMemory();

}  // namespace kiln::support

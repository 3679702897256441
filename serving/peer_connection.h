// PeerConnection: the TCP connection an HTTP request came in on, found from its two
// addresses, so that a handler which cannot see the socket can still tell whether the
// client has hung up. Debian's cpp-httplib 0.11 hands a non-streaming handler no connection
// state (a streaming reply notices at its next write, but a whole reply is written only at
// the end): without this, a request whose client went away would run to its end, holding
// its KV pages.
//
// Find scans the process's file descriptors for the TCP socket whose local and peer
// addresses are the request's (Linux: /proc/self/fd; a connection is uniquely named by
// its two endpoints while it is open, and httplib keeps it open during the handler).
// HungUp asks the kernel without blocking and without consuming anything: the peer closed
// (end of stream or reset), or the socket is in error. A client that half-closes its side
// after sending the request (shutdown(SHUT_WR); no common HTTP client does) reads as hung up.
#pragma once

#include <optional>
#include <string>

namespace kiln::serving {

class PeerConnection {
 public:
  // Nullopt when no such socket is open (or the addresses do not parse).
  static std::optional<PeerConnection> Find(const std::string& local_address, int local_port,
                                            const std::string& remote_address, int remote_port);

  bool HungUp() const;
  int fd() const { return fd_; }

 private:
  explicit PeerConnection(int fd) : fd_(fd) {}
  int fd_;  // not owned: httplib closes it
};

}  // namespace kiln::serving

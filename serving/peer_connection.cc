#include "serving/peer_connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kiln::serving {
namespace {

// An IPv4 or IPv6 address and port as a socket address; false when `address` parses as
// neither.
bool ToSocketAddress(const std::string& address, int port, sockaddr_storage* out) {
  std::memset(out, 0, sizeof(*out));
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    return true;
  }
  return false;
}

// Family, address and port equal (an IPv4 peer of an IPv6 socket appears as ::ffff:a.b.c.d
// in both httplib's text and the kernel's answer, so no mapping is needed).
bool SameEndpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

}  // namespace

std::optional<PeerConnection> PeerConnection::Find(const std::string& local_address, int local_port,
                                                   const std::string& remote_address, int remote_port) {
  sockaddr_storage local{}, remote{};
  if (!ToSocketAddress(local_address, local_port, &local) || !ToSocketAddress(remote_address, remote_port, &remote)) {
    return std::nullopt;
  }
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  std::optional<PeerConnection> found;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat info {};
    if (fstat(static_cast<int>(fd), &info) != 0 || !S_ISSOCK(info.st_mode)) continue;
    sockaddr_storage mine{}, peer{};
    socklen_t mine_size = sizeof(mine), peer_size = sizeof(peer);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&mine), &mine_size) != 0 ||
        getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) {
      continue;  // not connected (the listening socket, a closed one)
    }
    if (SameEndpoint(mine, local) && SameEndpoint(peer, remote)) {
      found = PeerConnection(static_cast<int>(fd));
      break;
    }
  }
  closedir(dir);
  return found;
}

bool PeerConnection::HungUp() const {
  pollfd probe{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&probe, 1, 0) < 0) return false;  // interrupted: ask again next time
  if (probe.revents & (POLLHUP | POLLERR | POLLNVAL | POLLRDHUP)) return true;
  if (!(probe.revents & POLLIN)) return false;
  // Readable: either bytes (a pipelined next request: still there) or the end of the stream.
  char byte;
  const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace kiln::serving

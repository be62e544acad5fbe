// Test-only pieces of a fake MySQL/MariaDB server on loopback, for tests of what the client
// sends before and during the login (cleartext_auth_test.cc, tls_enforce_test.cc).
//
// Shapes: Packet(seq, body) is one protocol packet (3-byte little-endian length, sequence id,
// body); PutLe appends `n` bytes of `v`, least significant first; ReadPacket reads until one
// whole packet has arrived, the peer closes, or `ms` pass. LoopbackServer listens on
// 127.0.0.1 (an ephemeral port) and runs `serve(fd, &received)` on the one connection it
// accepts, on a thread of its own. Source: MariaDB's "Client/Server Protocol: Connection"
// (packet framing, Handshake v10).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace sluice::fake_server {

inline std::string Packet(uint8_t seq, const std::string& body) {
  std::string p;
  p.push_back(static_cast<char>(body.size() & 0xff));
  p.push_back(static_cast<char>((body.size() >> 8) & 0xff));
  p.push_back(static_cast<char>((body.size() >> 16) & 0xff));
  p.push_back(static_cast<char>(seq));
  return p + body;
}

inline void PutLe(std::string* s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// One packet (or whatever arrives) within `ms`; "" when the client closes or sends nothing.
inline std::string ReadPacket(int fd, int ms) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() >= 4) {
      size_t len = static_cast<uint8_t>(out[0]) | (static_cast<uint8_t>(out[1]) << 8) |
                   (static_cast<uint8_t>(out[2]) << 16);
      if (out.size() >= len + 4) break;
    }
  }
  return out;
}

inline void Send(int fd, const std::string& bytes) { (void)!::write(fd, bytes.data(), bytes.size()); }

class LoopbackServer {
 public:
  using Serve = std::function<void(int fd, std::string* received)>;
  explicit LoopbackServer(Serve serve) : serve_(std::move(serve)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listen_fd_, 1), 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~LoopbackServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  uint16_t port() const { return port_; }
  // Every byte the client sent; waits until the connection is done.
  std::string Received() {
    if (thread_.joinable()) thread_.join();
    return received_;
  }

 private:
  void Run() {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) return;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    serve_(fd, &received_);
    ::close(fd);
  }

  Serve serve_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::string received_;
};

}  // namespace sluice::fake_server

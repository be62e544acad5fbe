// TcpProxy: a loopback TCP proxy the test controls, for fault injection between sluice and
// the server. It listens on 127.0.0.1 (a free port), forwards every connection to
// 127.0.0.1:target_port, and on ResetAll() aborts every open connection with a TCP reset
// (SO_LINGER 0), as a network failure or a killed middlebox would.
// Thread safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::testing {

class TcpProxy {
 public:
  explicit TcpProxy(uint16_t target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  uint16_t port() const { return port_; }
  // New connections go to 127.0.0.1:`port` from now on (a failover behind one address).
  void set_target(uint16_t port) { target_port_ = port; }
  // Resets every connection open now; returns how many were reset.
  int ResetAll();
  // Connections accepted so far.
  int accepted() const { return accepted_.load(); }
  // Bytes forwarded from the server to clients so far.
  uint64_t server_bytes() const { return server_bytes_.load(); }

 private:
  struct Pair {
    int client = -1;
    int server = -1;
    std::atomic<bool> done{false};
    TcpProxy* owner = nullptr;
    std::thread pump;
  };
  void AcceptLoop();
  static void Pump(Pair* p);

  std::atomic<uint16_t> target_port_;
  uint16_t port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<uint64_t> server_bytes_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Pair>> pairs_;  // guarded by mu_
};

}  // namespace sluice::testing

#include "tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace sluice::testing {
namespace {

void Abort(int fd) {
  if (fd < 0) return;
  linger l{1, 0};  // close() then sends RST
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::shutdown(fd, SHUT_RDWR);
}

}  // namespace

TcpProxy::TcpProxy(uint16_t target_port) : target_port_(target_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 64) != 0)
    return;
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  ResetAll();
  std::vector<std::unique_ptr<Pair>> pairs;
  {
    std::lock_guard lock(mu_);
    pairs.swap(pairs_);
  }
  for (auto& p : pairs)
    if (p->pump.joinable()) p->pump.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void TcpProxy::AcceptLoop() {
  while (!stop_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(target_port_.load());
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(s);
      Abort(c);
      ::close(c);
      continue;
    }
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ++accepted_;
    auto p = std::make_unique<Pair>();
    p->client = c;
    p->server = s;
    p->owner = this;
    Pair* raw = p.get();
    std::lock_guard lock(mu_);
    // Reap finished pairs.
    for (auto it = pairs_.begin(); it != pairs_.end();) {
      if ((*it)->done) {
        (*it)->pump.join();
        it = pairs_.erase(it);
      } else {
        ++it;
      }
    }
    p->pump = std::thread([raw] { Pump(raw); });
    pairs_.push_back(std::move(p));
  }
}

void TcpProxy::Pump(Pair* p) {
  char buf[65536];
  pollfd fds[2] = {{p->client, POLLIN, 0}, {p->server, POLLIN, 0}};
  bool open = true;
  while (open) {
    if (::poll(fds, 2, 200) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && open; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        open = false;
        break;
      }
      int to = i == 0 ? p->server : p->client;
      if (i == 1) p->owner->server_bytes_ += static_cast<uint64_t>(n);
      ssize_t off = 0;
      while (off < n) {
        ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
        if (w <= 0) {
          open = false;
          break;
        }
        off += w;
      }
    }
  }
  // Under the lock, so ResetAll never touches a closed (possibly reused) descriptor.
  std::lock_guard lock(p->owner->mu_);
  Abort(p->client);
  Abort(p->server);
  ::close(p->client);
  ::close(p->server);
  p->done = true;
}

int TcpProxy::ResetAll() {
  std::lock_guard lock(mu_);
  int n = 0;
  for (auto& p : pairs_) {
    if (p->done) continue;
    Abort(p->client);
    Abort(p->server);
    ++n;
  }
  return n;
}

}  // namespace sluice::testing

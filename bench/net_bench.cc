// braid-net-bench: what a plain TCP socket pair reaches between two hosts, the reference for the
// network transport's figures (bench/NOTES.md). No braid code moves the bytes: plain POSIX sockets.
//
//   braid-net-bench server PORT                 (on one host)
//   braid-net-bench client HOST PORT [BYTES [REPEATS]]    (on the other; 128M, 5)
//
// The client prints the one-way latency of an 8-byte message (half the median round trip of 2000
// ping-pongs, TCP_NODELAY), once with both ends blocking in recv() and once with both polling (as
// braid's transport waits: the stricter reference for its latency), the time of a round in which
// both ends send 8 bytes and then receive the other's (polling: as a two-rank 8-byte all-reduce
// moves its data), and the rate each way while both ends send BYTES to each other at once
// (one socket, each side sending and receiving in its own thread): the best of REPEATS exchanges
// (a single one moved by 40% between runs on the 2-core VM; the best is the stricter reference for
// braid's mean), and their mean.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

void sendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) die("send");
    p += k;
    n -= static_cast<size_t>(k);
  }
}

// `spin`: polls the socket without sleeping (as braid's transport does while it waits) instead of
// blocking in recv(), which adds the wake-up of a sleeping thread to every message.
void recvAll(int fd, char* p, size_t n, bool spin = false) {
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, spin ? MSG_DONTWAIT : 0);
    if (k < 0 && spin && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (k <= 0) die("recv");
    p += k;
    n -= static_cast<size_t>(k);
  }
}

void noDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

size_t parseBytes(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return static_cast<size_t>(v);
}

// Both ends: send `bytes` while receiving `bytes`.
double exchange(int fd, size_t bytes) {
  std::vector<char> out(1 << 20, 'x'), in(1 << 20);
  auto t0 = Clock::now();
  std::thread sender([&] {
    for (size_t left = bytes; left > 0;) {
      size_t n = std::min(left, out.size());
      sendAll(fd, out.data(), n);
      left -= n;
    }
  });
  for (size_t left = bytes; left > 0;) {
    size_t n = std::min(left, in.size());
    recvAll(fd, in.data(), n);
    left -= n;
  }
  sender.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr int kPings = 2000;

int server(int port) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(l, 1) != 0) die("bind/listen");
  int fd = accept(l, nullptr, nullptr);
  if (fd < 0) die("accept");
  noDelay(fd);
  uint64_t bytes = 0, repeats = 0;
  recvAll(fd, reinterpret_cast<char*>(&bytes), sizeof(bytes));
  recvAll(fd, reinterpret_cast<char*>(&repeats), sizeof(repeats));
  char msg[8];
  for (bool spin : {false, true}) {
    for (int i = 0; i < kPings; ++i) {
      recvAll(fd, msg, sizeof(msg), spin);
      sendAll(fd, msg, sizeof(msg));
    }
  }
  for (int i = 0; i < kPings; ++i) {  // the exchange rounds (client())
    sendAll(fd, msg, sizeof(msg));
    recvAll(fd, msg, sizeof(msg), true);
  }
  for (uint64_t i = 0; i < repeats; ++i) exchange(fd, bytes);
  close(fd);
  close(l);
  return 0;
}

int client(const char* host, int port, size_t bytes, int repeats) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, std::to_string(port).c_str(), &hints, &res) != 0) die("getaddrinfo");
  int fd = -1;
  for (int attempt = 0; attempt < 200; ++attempt) {  // the server may still be starting
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  freeaddrinfo(res);
  if (fd < 0) die("connect");
  noDelay(fd);
  uint64_t b = bytes, r = static_cast<uint64_t>(repeats);
  sendAll(fd, reinterpret_cast<const char*>(&b), sizeof(b));
  sendAll(fd, reinterpret_cast<const char*>(&r), sizeof(r));
  double oneWay[2] = {0, 0};  // blocking, polling
  char msg[8] = {};
  for (bool spin : {false, true}) {
    std::vector<double> rtt;
    for (int i = 0; i < kPings; ++i) {
      auto t0 = Clock::now();
      sendAll(fd, msg, sizeof(msg));
      recvAll(fd, msg, sizeof(msg), spin);
      rtt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::sort(rtt.begin(), rtt.end());
    oneWay[spin ? 1 : 0] = rtt[rtt.size() / 2] / 2;
  }
  // Exchange rounds, as a two-rank all-reduce of 8 B moves its data: both ends send, then both
  // receive (polling), round after round; the time per round, as braid-perf times its calls.
  auto e0 = Clock::now();
  for (int i = 0; i < kPings; ++i) {
    sendAll(fd, msg, sizeof(msg));
    recvAll(fd, msg, sizeof(msg), true);
  }
  const double round = std::chrono::duration<double, std::micro>(Clock::now() - e0).count() / kPings;
  double best = 0, sum = 0;
  for (int i = 0; i < repeats; ++i) {
    double seconds = exchange(fd, bytes);
    best = i == 0 ? seconds : std::min(best, seconds);
    sum += seconds;
  }
  std::printf("tcp one-way latency (8 B, half the median round trip of %d): %.1f us\n", kPings, oneWay[0]);
  std::printf("tcp one-way latency polling (8 B, half the median round trip of %d, both ends polling): %.1f us\n",
              kPings, oneWay[1]);
  std::printf("tcp 8-byte exchange rounds (both ends send, then receive, polling; mean of %d): %.1f us\n", kPings,
              round);
  std::printf("tcp both directions at once, %zu bytes each way, best of %d (mean %.3f GB/s): %.3f GB/s each way\n",
              bytes, repeats, bytes / (sum / repeats) / 1e9, bytes / best / 1e9);
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "server") == 0) return server(std::atoi(argv[2]));
  if (argc >= 4 && std::strcmp(argv[1], "client") == 0) {
    return client(argv[2], std::atoi(argv[3]), argc > 4 ? parseBytes(argv[4]) : size_t{128} << 20,
                  argc > 5 ? std::max(1, std::atoi(argv[5])) : 5);
  }
  std::fprintf(stderr, "usage: braid-net-bench server PORT | client HOST PORT [BYTES [REPEATS]]\n");
  return 2;
}

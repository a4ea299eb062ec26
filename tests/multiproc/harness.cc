#include "harness.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

extern char** environ;

namespace braid::test {
namespace {

std::vector<std::string> mergedEnvironment(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    vars[kv.substr(0, kv.find('='))] = kv;
  }
  for (const std::string& kv : extra) vars[kv.substr(0, kv.find('='))] = kv;
  std::vector<std::string> out;
  for (auto& [name, kv] : vars) out.push_back(kv);
  return out;
}

struct Child {
  pid_t pid = -1;
  int outFd = -1;
  bool exited = false;
};

pid_t spawn(const ProcSpec& spec, int* outFd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<std::string> env = mergedEnvironment(spec.env);
  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return -1;
  }
  *outFd = fds[0];
  return pid;
}

}  // namespace

std::vector<ProcResult> runProcesses(const std::vector<ProcSpec>& specs, int timeoutMs) {
  std::vector<ProcResult> results(specs.size());
  std::vector<Child> children(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    children[i].pid = spawn(specs[i], &children[i].outFd);
    if (children[i].pid < 0) {
      results[i].output = "spawn failed: " + specs[i].argv[0];
      children[i].exited = true;
    }
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  // Drain output until every pipe closes (the child and anything it started have exited) or time is up.
  while (true) {
    std::vector<pollfd> fds;
    std::vector<size_t> owners;
    for (size_t i = 0; i < children.size(); ++i) {
      if (children[i].outFd >= 0) {
        fds.push_back({children[i].outFd, POLLIN, 0});
        owners.push_back(i);
      }
    }
    if (fds.empty()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    int n = poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) break;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Child& c = children[owners[k]];
      char buf[4096];
      ssize_t got = read(c.outFd, buf, sizeof(buf));
      if (got > 0) {
        results[owners[k]].output.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close(c.outFd);
        c.outFd = -1;
      }
    }
  }
  for (size_t i = 0; i < children.size(); ++i) {
    Child& c = children[i];
    if (c.outFd >= 0) close(c.outFd);
    if (c.pid < 0) continue;
    // A child may close its output before it exits (mpirun does): reap it until the deadline.
    int status = 0;
    pid_t done = waitpid(c.pid, &status, WNOHANG);
    while (done == 0 && std::chrono::steady_clock::now() < deadline) {
      usleep(1000);
      done = waitpid(c.pid, &status, WNOHANG);
    }
    if (done == 0) {
      results[i].timedOut = true;
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &status, 0);
    }
    if (WIFEXITED(status)) results[i].exitCode = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) results[i].signal = WTERMSIG(status);
  }
  return results;
}

std::string toHex(const void* data, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

bool fromHex(const std::string& hex, void* data, size_t n) {
  if (hex.size() != 2 * n) return false;
  auto* p = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    unsigned v = 0;
    if (sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
    p[i] = static_cast<unsigned char>(v);
  }
  return true;
}

namespace {

// Whether a TCP port of the loopback address can be bound now.
bool bindable(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

// The lowest port the kernel hands to connect()s and bind(0) (ip_local_port_range).
int ephemeralLow() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768;
  range >> low;
  return low;
}

}  // namespace

// Not a port the kernel hands out: a port from bind(0), free a moment ago, was taken before the
// test's rank 0 bound it by a connect() of a test running beside it (every connect takes an
// ephemeral port): "Address already in use" in 1 of 43 loaded reruns of the multiproc tier. So a
// random port below the ephemeral range that can be bound now, and bind(0)'s only if none is found.
int freeTcpPort() {
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  const int low = std::min(ephemeralLow(), 65535) - 1;
  const int first = 10000;
  for (int tries = 0; low > first && tries < 200; ++tries) {
    int port = first + static_cast<int>(rng() % static_cast<unsigned>(low - first));
    if (bindable(port)) return port;
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string selfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

}  // namespace braid::test

#include "netns.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace braid::test {
namespace {

constexpr const char* kPrefix = "braidmh";

// Runs a shell command, its output into `*out`; the exit status.
int shell(const std::string& command, std::string* out) {
  std::string full = command + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[512];
  while (fgets(buf, sizeof(buf), p) != nullptr) {
    if (out != nullptr) *out += buf;
  }
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> namespaces() {
  std::vector<std::string> out;
  if (DIR* d = opendir("/var/run/netns")) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) == 0) out.push_back(e->d_name);
    }
    closedir(d);
  }
  return out;
}

// The full path of `ip` (the harness spawns without a PATH search).
std::string ipPath() {
  std::string out;
  if (shell("command -v ip", &out) != 0) return "/usr/sbin/ip";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

bool canMakeNamespaces(std::string* why) {
  if (geteuid() != 0) {
    *why = "network namespaces need root (CI runs as root)";
    return false;
  }
  std::string out;
  if (shell("command -v ip && command -v unshare", &out) != 0) {
    *why = "ip (iproute2) or unshare (util-linux) is missing";
    return false;
  }
  return true;
}

void NetnsHosts::sweepStale() {
  for (const std::string& name : namespaces()) {
    // braidmh<pid>x...
    long pid = std::strtol(name.c_str() + std::strlen(kPrefix), nullptr, 10);
    if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) shell("ip netns del " + name, nullptr);
  }
}

NetnsHosts::NetnsHosts(int hosts, bool deadEndsFirst) : hosts_(hosts) {
  sweepStale();
  tag_ = std::to_string(getpid());
  prefix_ = kPrefix + tag_ + "x";
  std::string sw = prefix_ + "sw";
  if (!run("ip netns add " + sw)) return;
  made_.push_back(sw);
  if (!run("ip -n " + sw + " link add br0 type bridge") || !run("ip -n " + sw + " link set br0 up")) return;
  for (int h = 0; h < hosts; ++h) {
    std::string name = ns(h);
    std::string a = "a" + tag_ + "h" + std::to_string(h + 1), s = "s" + tag_ + "h" + std::to_string(h + 1);
    if (!run("ip netns add " + name)) return;
    made_.push_back(name);
    if (deadEndsFirst && !addDeadEnd(h, "dead0")) return;
    // Made inside the switch's namespace, so nothing appears in this machine's own.
    if (!run("ip -n " + sw + " link add " + a + " type veth peer name " + s) ||
        !run("ip -n " + sw + " link set " + a + " netns " + name) ||
        !run("ip -n " + name + " link set " + a + " name eth0") ||
        !run("ip -n " + name + " addr add " + address(h) + "/24 dev eth0") ||
        !run("ip -n " + name + " link set eth0 up") || !run("ip -n " + name + " link set lo up") ||
        !run("ip -n " + sw + " link set " + s + " master br0") || !run("ip -n " + sw + " link set " + s + " up")) {
      return;
    }
  }
}

std::string NetnsHosts::fileInHost(int h, const std::string& path) const {
  std::string out;
  return shell("ip netns exec " + ns(h) + " cat " + path, &out) == 0 ? out : std::string();
}

bool NetnsHosts::addDeadEnd(int h, const std::string& ifname) {
  std::string name = ns(h);
  std::string a = "d" + tag_ + "h" + std::to_string(h + 1), b = "e" + tag_ + "h" + std::to_string(h + 1);
  // Both ends in the host: the interface leads to a stub that no other host is on.
  return run("ip -n " + name + " link add " + a + " type veth peer name " + b) &&
         run("ip -n " + name + " link set " + a + " name " + ifname) &&
         run("ip -n " + name + " addr add 10.78." + std::to_string(h) + ".1/24 dev " + ifname) &&
         run("ip -n " + name + " link set " + ifname + " up") && run("ip -n " + name + " link set " + b + " up");
}

NetnsHosts::~NetnsHosts() {
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) shell("ip netns del " + *it, nullptr);
}

std::string NetnsHosts::ns(int h) const { return prefix_ + "h" + std::to_string(h + 1); }

std::vector<std::string> NetnsHosts::inHost(int h, const std::vector<std::string>& argv) const {
  static const std::string ip = ipPath();
  std::vector<std::string> out = {
      ip, "netns", "exec", ns(h), "unshare", "-u", "sh", "-c", "hostname " + hostName(h) + " && exec \"$0\" \"$@\""};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

bool NetnsHosts::run(const std::string& command) {
  std::string out;
  if (shell(command, &out) == 0) return true;
  if (error_.empty()) error_ = "'" + command + "' failed: " + out;
  return false;
}

}  // namespace braid::test

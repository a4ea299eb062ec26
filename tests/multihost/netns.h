// Separate hosts on one machine: network namespaces joined by veth pairs through a bridge, each
// host with its own interfaces, addresses and (through `unshare -u`) host name. Needs root.
//
//   namespace <prefix>sw:  bridge br0 ---- s<tag>h1 ... s<tag>hN   (no address)
//   namespace <prefix>h1:  lo, eth0 = 10.77.0.1/24 (the veth's other end)
//   ...
//
// Every name carries this process's id, so that concurrent tests never meet; the destructor
// removes every namespace it made (its veths go with them), and the constructor first removes
// those of test processes that no longer exist (a test killed before it could clean up).
#pragma once

#include <string>
#include <vector>

namespace braid::test {

class NetnsHosts {
 public:
  /// `hosts` namespaces (and the switch). ok() says whether it worked; error() why not. With
  /// `deadEndsFirst` every host gets, before its eth0, an interface dead0 (10.78.<h>.1/24) that
  /// reaches no other host: the first one a default interface choice by order would take.
  explicit NetnsHosts(int hosts, bool deadEndsFirst = false);
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int hosts() const { return hosts_; }
  /// The namespace of host `h` (0-based) and its eth0 address.
  std::string ns(int h) const;
  std::string address(int h) const { return "10.77.0." + std::to_string(h + 1); }
  std::string hostName(int h) const { return "braidhost" + std::to_string(h + 1); }
  /// Adds an interface `name` to host `h` (10.78.<h>.1/24) that reaches no other host.
  bool addDeadEnd(int h, const std::string& name = "eth1");

  /// argv that runs `argv` inside host `h`'s namespace under its own host name.
  std::vector<std::string> inHost(int h, const std::vector<std::string>& argv) const;
  /// The contents of `path` as host h sees it (its own /sys/class/net), "" if it cannot be read.
  std::string fileInHost(int h, const std::string& path) const;

  /// Removes namespaces named for test processes that are gone.
  static void sweepStale();

 private:
  bool run(const std::string& command);
  std::string prefix_;
  std::string tag_;
  int hosts_ = 0;
  std::vector<std::string> made_;
  std::string error_;
};

/// True when this process may make namespaces (root); else the tier skips, saying why.
bool canMakeNamespaces(std::string* why);

}  // namespace braid::test

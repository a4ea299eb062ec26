// The network a communicator uses between hosts: an ncclNet v11 table (net_abi.h) with its
// per-communicator context, found by NCCL's rules, and errors that say which network failed how.
//
// Which network (Network::open):
//   BRAID_NET_PLUGIN, else NCCL_NET_PLUGIN:
//     unset        libnccl-net.so if the loader finds one (its absence is no error)
//     none         no plugin
//     a,b,...      each value in turn, as a file name, then as libnccl-net-<value>.so
//   A plugin is used when it exports ncclNetPlugin_v11 (or v10, v9, v8, adapted), its init succeeds
//   and it reports at least one device; otherwise the reason is logged and the next one is tried.
//   The built-in socket network (socket_net.h) comes last and is always there.
//   BRAID_NET, else NCCL_NET: only a network of that name (case-insensitive) is taken; "Socket"
//   also names the built-in one. None of that name is an error listing what was found.
//
// The INFO log says which network, from where, and each device's name, ptrSupport and speed.
// Every failed call becomes a Status naming the network, the call, the code and what the plugin
// logged on this thread as it failed (plugins are given braid's logger at init).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "transport/net/net_abi.h"

namespace braid::network {

/// The files to try for a plugin spec (NCCL_NET_PLUGIN's value), in order. `*optional` is set
/// when the spec was empty: the default file may well be missing.
std::vector<std::string> pluginCandidates(const std::string& spec, bool* optional);

/// True when `name` (a network's name) is what BRAID_NET / NCCL_NET asks for.
bool networkNameMatches(const std::string& wanted, const std::string& name, bool builtIn);

/// What a plugin logged at WARN on this thread since the last call (cleared by the call).
std::string takePluginWarnings();
/// The logger braid gives every network: braid's log, and the thread's last warnings.
void pluginLogger(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

class Network {
 public:
  /// The network chosen by the rules above, initialised for communicator `commId`.
  static Status open(uint64_t commId, std::unique_ptr<Network>* out);
  /// `table` as it is (the built-in network; tests), initialised for `commId`.
  static Status fromTable(const NetV11& table, const std::string& origin, uint64_t commId,
                          std::unique_ptr<Network>* out);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  const NetV11& api() const { return table_; }
  void* context() const { return ctx_; }
  const std::string& name() const { return name_; }
  /// "built-in", or the file and the ABI version it was loaded as.
  const std::string& origin() const { return origin_; }
  bool builtIn() const { return builtIn_; }
  int deviceCount() const { return static_cast<int>(props_.size()); }
  const NetPropertiesV11& properties(int dev) const { return props_[static_cast<size_t>(dev)]; }
  /// "BraidSocket/0 (eth0, ptrSupport HOST, 10000 Mb/s)"
  std::string describeDevice(int dev) const;

  /// ok for ncclSuccess; else an error naming this network, `call`, the code and what it logged.
  Status check(ncclResult_t result, const std::string& call) const;

 private:
  Network() = default;
  static Status init(const NetV11& table, const std::string& origin, bool builtIn, uint64_t commId,
                     std::unique_ptr<Network>* out);

  NetV11 table_{};
  void* ctx_ = nullptr;
  std::string name_;
  std::string origin_;
  bool builtIn_ = false;
  std::vector<NetPropertiesV11> props_;
};

}  // namespace braid::network

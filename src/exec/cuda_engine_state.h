// The CUDA engine's state, shared by its two halves: set-up (cuda_engine.cc: the arena, the peers'
// mappings, the connection table) and launch (cuda_launch.cc: kernel arguments, batches, send/recv).
// Internal to src/exec.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "exec/call_ledger.h"
#include "exec/cuda_engine.h"
#include "transport/cuda_check.h"
#include "transport/device_links.h"
#include "transport/shm/shm_device.h"
#include "transport/transport.h"

namespace braid::exec {

using transport::cudaCheck;

// Makes `device` current for the scope and restores the caller's device after.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) cudaSetDevice(device);
  }
  ~DeviceScope() {
    int now = -1;
    if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

// Where each (channel, connId, peer) block of one rank's arena starts, and its one-shot region.
struct ArenaLayout {
  std::map<std::tuple<int, int, int>, size_t> blocks;
  size_t oneShot = 0;
  size_t ce = 0;  // the copy-engine region (device/ce_work.h), where options.ceSlotBytes > 0
  size_t bytes = 0;
};

// Channels that carry send/recv: a message of a few MB fills them, and each holds a FIFO to every rank.
constexpr int kMaxP2pChannels = 16;

struct CudaEngine::State {
  State() = default;
  ~State();  // the whole teardown (cuda_engine.cc)
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  CudaEngineOptions o;
  size_t blockBytes = 0;
  size_t llOff = 0;
  size_t ll128Off = 0;
  std::vector<std::vector<std::vector<int>>> peers;  // [rank][connection id]: its peers there
  std::vector<ArenaLayout> layouts;                  // per rank
  char* arena = nullptr;                             // device address (of host memory, with hostMemory)
  std::string shmName;                               // hostMemory: this rank's segment, until connected() unlinks it
  transport::SharedArenas ownArena;                  // hostMemory: this rank's segment, mapped and registered
  std::vector<char*> peerBases;                      // per rank: its arena mapped here (null if not a neighbour)
  device::PeerConn* table = nullptr;                 // device
  int* ringOrder = nullptr;                          // device
  int* hostRanks = nullptr;                          // device: the geometry's levels (WorkArgs::hosts)
  int* hostStart = nullptr;                          // device
  device::OneShotArgs oneShot;
  // Mapped one-shot regions and every rank in this process, or on this host reached by peer
  // pointers or CUDA IPC (windowsAcrossProcesses: direct calls on windows only, cuda_windows.cc).
  bool direct = false;
  bool windowsAcrossProcesses = false;
  std::vector<transport::PeerIdentity> identities;  // every rank's, from connect
  // The copy-engine path (cuda_ce.cc): the reducer's most CTAs (0: not offered), every rank's
  // region as mapped here, a side stream and a join event per peer, the fork event.
  int ceCtas = 0;
  char* ceRegions[device::kMaxOneShotRanks] = {};
  std::vector<cudaStream_t> ceStreams;
  std::vector<cudaEvent_t> ceJoined;
  cudaEvent_t ceFork = nullptr;
  void releaseCopyEngines();
  void unblockCopyEngines();
  // The same host's ranks compare their collectives here (exec/call_ledger.h); its block holds the
  // kernels' abort flag, registered with CUDA as mapped memory so that the kernels read it.
  CallLedger ledger;
  bool ledgerRegistered = false;
  // Across hosts: the ledger's links with ranks of other hosts (their FIFOs owned by the network's
  // connections), a thread each (CallLedger::serveLink).
  struct Link {
    int peer = -1;
    transport::HostFifo* out = nullptr;
    transport::HostFifo* in = nullptr;
  };
  std::vector<Link> ledgerLinks;
  std::vector<std::thread> ledgerThreads;
  std::atomic<bool> ledgerStop{false};
  int* abortHost = nullptr;  // in the ledger's block
  int* abortDevice = nullptr;
  cudaEvent_t lastDone = nullptr;  // the previous call's kernel, for ordering calls on other streams
  cudaEvent_t joined = nullptr;    // joins the streams of a one-shot launch's calls
  void* lastStream = nullptr;
  cudaStream_t setup = nullptr;  // set-up copies and fills (cuda_engine.cc: onSetupStream)
  std::mutex mu;                 // one launch at a time
  // The transports that reach the peers (transport/device_links.h), by the selection table's kind;
  // the network's is made at create (it listens before the offers are exchanged).
  std::unique_ptr<transport::DeviceTransport> transports[transport::kNumKinds];
  unsigned char netHandle[128] = {0};
  // BRAID_TIMEOUT (cuda_watch.cc): the kernels' record, and what each recent launch ran.
  device::KernelWatch* watchHost = nullptr;  // mapped host memory
  device::KernelWatch* watchDevice = nullptr;
  struct LaunchNote {
    uint64_t launch = 0;
    CallNote note;
    std::string what;  // the launch's NVTX range: kernel, type, op, count, channels
  };
  static constexpr size_t kNotes = 64;
  std::atomic<uint64_t> launches{0};  // launch numbers handed out
  mutable std::mutex notesMu;
  std::array<LaunchNote, kNotes> notes;

  int p2pChannels() const { return std::min(o.channels, kMaxP2pChannels); }
  // The connection ids channel c holds.
  std::vector<int> connIdsOf(int c) const;
  // Where each block of `rank`'s arena lies (the same computation on every rank).
  ArenaLayout layoutOf(int rank) const;
  // Block (channel c, connection id k, peer) of `owner`'s arena, as mapped here.
  char* block(int owner, int c, int k, int peer) const;

  // Before each kernel captured into a CUDA graph on `stream`: the transports learn that a graph of
  // this rank's kernels lives (DeviceTransport::captured).
  Status captured(cudaStream_t stream);
  // Around an eager launch, on this thread at once (DeviceTransport::eagerLaunch).
  void eagerLaunch(bool begin);
  // The transports, after the last kernel: the ledger's threads and the network's proxy stop,
  // mappings close.
  void closeTransports();

  // cuda_watch.cc. Allocates the kernels' record (create, with o.watch); frees it (destructor).
  Status openWatch();
  void closeWatch();
  // The next launch's number for `a` (0 and no record without the watchdog), noting its call.
  void noteLaunch(device::KernelArgs* a, const CallNote& note, const char* what);
};

}  // namespace braid::exec

// The CUDA executor: one GPU rank's FIFOs and the launch of a call's kernel on the caller's stream.
// How a peer is reached is the transports' (transport/device_links.h). No CUDA type appears here,
// so core includes it on every build; without CUDA support create() says so.
//
// Set-up is in two steps around the bootstrap's all-gather: create() allocates this rank's arena
// (every FIFO it receives on, and the counters it owns) and exported() offers it to the peers;
// connect() takes every rank's identity and offer, has the transport the selection table gives
// each peer reach it, and builds the device table of connections. The layout of every rank's arena follows from the
// geometry and the channel count alone, so each rank knows where its slots are in a peer's arena without asking.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algo/call.h"
#include "algo/geometry.h"
#include "algo/p2p.h"
#include "braid/braid.h"
#include "core/status.h"
#include "device/ce_work.h"
#include "device/device_work.h"
#include "exec/launch_plan.h"
#include "net/socket_address.h"
#include "transport/device_links.h"
#include "transport/host_fifo.h"
#include "transport/p2p/cuda_ipc.h"
#include "transport/transport.h"

namespace braid::exec {

struct CudaEngineOptions {
  int rank = 0;
  int nranks = 1;
  int device = 0;
  int channels = 1;                     // the most a call may use (rings)
  int fullChannels = 1;                 // channels 0..fullChannels-1 hold every algorithm's FIFOs;
                                        // the others the ring's only
  int threads = 512;                    // per CTA (lanes split it, at most 1024 in all)
  size_t simpleSlotBytes = 512 * 1024;  // Simple: data per FIFO slot
  size_t llSlotBytes = 32 * 1024;       // LL: data per FIFO slot (the slot holds twice this)
  size_t ll128SlotBytes = 1024 * 120;   // LL128: data per FIFO slot, a multiple of 120 (128 per line)
  size_t oneShotBytes = 0;              // the largest one-shot block (0: no one-shot buffers)
  int oneShotChannels = 0;              // the most CTAs a one-shot call may have (<= kMaxOneShotChannels)
  size_t ceSlotBytes = 0;               // the copy-engine path's slots (0: not offered; cuda_ce.cc)
  algo::Geometry geometry;
  bool hostMemory = false;  // FIFOs in pinned, mapped shared host memory instead of GPU memory
  uint64_t commKey = 0;     // Comm::instanceKey: names the shared-memory arena (hostMemory)
  // Some ranks are on other hosts: this rank listens on the network for `netAddress`'s interface
  // (the bootstrap's) and reaches them through a proxy (transport/net/net_device.h). A connection that fails
  // aborts this rank's kernels and is told to onNetworkFailure (on a proxy thread).
  bool spansHosts = false;
  net::SocketAddress netAddress;
  int64_t timeoutMs = 0;
  std::function<void(const std::string& why)> onNetworkFailure;
  // BRAID_TIMEOUT: the kernels tell a record in mapped host memory where they wait (cuda_watch.cc).
  bool watch = false;
  // Names a call's tag in the call ledger's mismatch errors (exec/call_ledger.h).
  std::string (*describeTag)(const transport::CallTag&) = nullptr;
};

/// Which call of the communicator a launch runs, for the watchdog's report (BRAID_TIMEOUT).
struct CallNote {
  transport::CallTag tag;    // as on host memory: the collective's fields, or kind kP2pTagKind
  uint64_t seq = 0;          // the communicator's call number (collectives and send/recv groups), from 1
  uint32_t collectives = 0;  // collectives made up to this one
};

/// What the watchdog reads of a rank's GPU work (CudaEngine::watchSample).
struct GpuWatchSample {
  bool busy = false;        // the latest launch has not completed
  bool notStarted = false;  // ... and the kernel after the last one that ended has not begun
  uint64_t progress = 0;    // changes whenever a kernel begins or ends or a long wait's record changes
  CallNote note;            // the call of the kernel the GPU is in (or waits to begin)
  int waitingOn = -1;       // the peer the first waiting lane waits for
  uint64_t step = 0;        // what that lane awaits
  std::string detail;       // the kernel, and each waiting lane, readable
};

/// One GPU call: the call as the tuner planned it (algo/call.h; a direct one runs the direct
/// kernel, device/direct.cuh, on the CTAs planned), and what its launch needs besides.
struct CudaCall : algo::Call {
  CallNote note;  // its tag goes to the call ledger; the rest to BRAID_TIMEOUT
  // Direct across processes: what each rank, in the one-shot regions' order (k: rank (rank + k) %
  // nranks), adds to this rank's input and output addresses to reach them (its mapping of the
  // window holding them; 0 within one process).
  int64_t inputShift[device::kMaxOneShotRanks] = {};
  int64_t outputShift[device::kMaxOneShotRanks] = {};
};

/// A window as offered to the other processes of its host (CudaEngine::offerWindow), in the
/// bootstrap's all-gather: the CUDA IPC handle of the allocation holding it.
struct WindowOffer {
  unsigned char ipc[transport::kIpcHandleBytes] = {0};  // cudaIpcMemHandle_t
  uint64_t allocation = 0;                              // the allocation's first byte, in the offering process
  uint64_t base = 0;                                    // the window's first byte, in the offering process
  int32_t ok = 0;                                       // 0: the memory has no IPC handle (not cudaMalloc's, say)
  int32_t pad = 0;
};

class CudaEngine {
 public:
  static Status create(const CudaEngineOptions& options, std::unique_ptr<CudaEngine>* out);
  ~CudaEngine();
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;

  /// What the peers need to reach this rank (each transport's part).
  transport::DeviceOffer exported() const;
  /// Reaches every neighbour through the transport the selection table gives it (peer pointers or
  /// CUDA IPC, mapped host memory, the network) and uploads the connection table. Logs each ring
  /// connection's path at INFO.
  Status connect(const std::vector<transport::PeerIdentity>& identities,
                 const std::vector<transport::DeviceOffer>& offers);

  /// After every rank connected (a bootstrap barrier): removes the host-memory arena's name.
  void connected();

  /// Whether device `a` can reach device `b`'s memory directly (true for a == b).
  static bool peerAccess(int a, int b);

  /// Queues `n` calls in order, each on its stream; returns once launched. Consecutive calls of one
  /// kernel (collective and algorithm), protocol and stream share a launch, up to
  /// device::kMaxBatchCalls of them; one-shot calls while their data fits in one one-shot block
  /// together (exec/launch_plan.h).
  Status runBatch(const CudaCall* calls, size_t n);

  /// Queues a group's sends and receives as one kernel on `stream`: offsets and counts in bytes from
  /// sendBase and recvBase (at most device::kMaxP2pOps of each).
  Status runP2p(std::vector<algo::P2pOp> sends, std::vector<algo::P2pOp> recvs, const void* sendBase, void* recvBase,
                void* stream, const CallNote& note = CallNote{});

  /// Copies `bytes` from `src` to `dst` (device or mapped memory) on `stream`, no kernel: a
  /// one-rank communicator's out-of-place collective.
  Status copy(void* dst, const void* src, size_t bytes, void* stream);

  /// A pre-multiplied sum's input: `*out` gets scratch (cudaMallocAsync on `stream`) holding `n`
  /// elements of `src` times the scalar, `*hostScalar` (taken now) or else `*deviceScalar` (read by
  /// the kernel as it runs, so a CUDA graph replays the current value). releaseScratch frees it on
  /// the stream after the call that reads it.
  Status premultiply(const void* src, size_t n, braidDataType_t type, const void* hostScalar, const void* deviceScalar,
                     void* stream, void** out);
  /// `*out` gets scratch (cudaMallocAsync on `stream`) into which `bytes` of `src` are copied on the
  /// stream: an in-place all-to-all's input, read after the receives have overwritten the buffer.
  Status stage(const void* src, size_t bytes, void* stream, void** out);
  /// Frees premultiply's or stage's scratch on `stream`, after the call that reads it.
  Status releaseScratch(void* scratch, void* stream);

  /// Makes every kernel of this rank that waits on a peer give up (braidCommAbort).
  void abort();

  /// True once a rank of this host found mismatched collectives in the call ledger and stopped
  /// the kernels (exec/call_ledger.h); `*why` names both calls.
  bool stopped(Status* why) const;

  /// With options.watch: where this rank's GPU work stands, from any thread (the watchdog's). Takes
  /// no lock a launch holds, so a launch that blocks does not block it. Calls captured into a CUDA
  /// graph are not seen (their replays record no completion here).
  void watchSample(GpuWatchSample* out) const;

  int channels() const;

  /// Whether calls on registered buffers may run direct (CudaCall::direct): every rank reaches the
  /// others' memory (the one-shot's regions are mapped) and lives in this process, or, with
  /// windowsAcrossProcesses(), on this host.
  bool directCalls() const;
  /// Some ranks live in other processes of this host, every one reached by peer pointers or CUDA
  /// IPC: direct calls run on windows alone, each exported when it is registered (a collective:
  /// offerWindow, the bootstrap's all-gather, openWindow).
  bool windowsAcrossProcesses() const;
  /// The most CTAs a copy-engine call's reducer may use: kMaxCeCtas, or fewer where ranks share a
  /// GPU (all must be resident); 0 where the path is not offered (no slots, ranks on other hosts
  /// or not reaching each other's GPU memory, or the driver lacks stream memory operations).
  int copyEngineCtas() const;
  /// What every rank agreed on (the fewest any offers): calls use at most `ctas`, 0 none.
  void limitCopyEngines(int ctas);
  /// This rank's window at `base` as the other processes can map it.
  Status offerWindow(const void* base, WindowOffer* out) const;
  /// Maps the windows of `offers` (one per rank) that other processes offer; `*seenAt` gets, per
  /// rank, where its window starts in this process. A failure maps nothing.
  Status openWindow(const std::vector<WindowOffer>& offers, std::vector<uint64_t>* seenAt);
  /// Ends openWindow's mappings once the calls this rank queued so far are over.
  Status closeWindow(const std::vector<WindowOffer>& offers);
  /// Waits until the calls this rank queued so far are over (graphs aside).
  Status waitQueued();
  /// For another process's registered buffer (core/export_service.h): maps the allocation of CUDA
  /// IPC handle `ipc` on this rank's device (counted, as a window's); `*at` gets where it lies here.
  Status importAllocation(const unsigned char* ipc, uint64_t* at);
  /// Drops one importAllocation mapping of `ipc`.
  void releaseAllocation(const unsigned char* ipc);

 private:
  struct State;
  explicit CudaEngine(std::unique_ptr<State> state);
  device::KernelArgs kernelArgs(const algo::CallShape& shape, device::Proto proto) const;
  Status checkPlan(const CudaCall& call) const;
  Status launch(void* stream, const char* range, const std::function<int()>& launchFn);
  Status openLedgers(const std::vector<transport::PeerIdentity>& ids);
  Status linkLedgers(const std::vector<transport::PeerIdentity>& ids);
  Status enterLedger(const CudaCall* calls, size_t n);
  Status launchRun(const CudaCall* calls, const LaunchKey* keys, size_t n);
  Status launchDirect(const CudaCall& call);
  Status launchCopyEngine(const CudaCall& call);
  Status openCopyEngines();  // connect's last step (cuda_ce.cc)
  std::unique_ptr<State> s_;
};

/// The largest one-shot block (bytes) `nranks` ranks reserve for when `wanted` is asked: 0 outside
/// 2..kMaxOneShotRanks ranks; otherwise `wanted`, lowered so that a rank's region (4 x nranks x the
/// block) stays within 32 MiB.
inline size_t oneShotBlockLimit(int nranks, size_t wanted) {
  if (nranks < 2 || nranks > device::kMaxOneShotRanks) return 0;
  const size_t budget = size_t{32} << 20;
  const size_t cap = budget / (static_cast<size_t>(device::kOneShotParities) * 2 * nranks) / 1024 * 1024;
  return wanted < cap ? wanted : cap;
}

/// The copy-engine slot (bytes) `nranks` ranks reserve for when `wanted` is asked: 0 outside
/// 2..kMaxOneShotRanks ranks or below 64 KiB; otherwise `wanted` in whole 64 KiB, lowered so that a
/// rank's slots (2 x (nranks - 1) x kCeDepth of them) stay within 32 MiB.
inline size_t ceSlotLimit(int nranks, size_t wanted) {
  constexpr size_t kUnit = 64 * 1024;
  if (nranks < 2 || nranks > device::kMaxOneShotRanks) return 0;
  const size_t cap = (size_t{32} << 20) / (2 * static_cast<size_t>(nranks - 1) * device::kCeDepth);
  const size_t slot = (wanted < cap ? wanted : cap) / kUnit * kUnit;
  return slot;
}

/// Elements of `type` one slot carries: the chunk every Prims operation moves.
inline size_t slotElems(const CudaEngineOptions& options, device::Proto proto, size_t elemSize) {
  const size_t bytes = proto == device::Proto::kLL      ? options.llSlotBytes
                       : proto == device::Proto::kLL128 ? options.ll128SlotBytes
                                                        : options.simpleSlotBytes;
  return bytes / elemSize > 0 ? bytes / elemSize : 1;
}

}  // namespace braid::exec

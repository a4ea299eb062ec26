// Comm: one rank's communicator. It owns everything it uses (bootstrap connections, later the
// transports and executors) and frees it in its destructor.
//
// Lifetime:   start() ──► kInitializing ──► kReady ──► finalize() ──► kFinalized
//                               │                 ╲
//                               ▼                  abort() from any thread: every wait fails fast
//                            kFailed (asyncError holds why; also entered when a call fails midway)
// A non-blocking init (config.blocking = false) runs in a thread the Comm owns and joins.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/config.h"
#include "core/export_service.h"
#include "core/host_engine.h"
#include "core/plan.h"
#include "core/registrations.h"
#include "core/status.h"
#include "core/watchdog.h"
#include "exec/cuda_engine.h"

namespace braid::core {

/// Device selection at init.
constexpr int kCurrentDevice = -2;  // a CUDA comm uses the caller's current device

struct InitArgs {
  bootstrap::UniqueIdBytes id{};
  int rank = 0;
  int nranks = 1;
  CommConfig config;
  int cudaDevice = kCurrentDevice;  // or an explicit device (init-all, launcher local rank)
};

class Comm : public std::enable_shared_from_this<Comm> {
 public:
  enum class State { kInitializing, kReady, kFailed, kFinalized };

  /// Creates the communicator; with config.blocking it returns once init is done (or failed).
  static Status start(const InitArgs& args, std::shared_ptr<Comm>* out);

  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int cudaDevice() const { return cudaDevice_; }  // -1: host memory
  const CommConfig& config() const { return config_; }
  uint64_t idHash() const { return idHash_; }
  /// The id's hash mixed with a random value of rank 0's, agreed at init: names this communicator's
  /// shared memory, so that two jobs that derive the same id (a fixed MASTER_ADDR:MASTER_PORT, one
  /// after another, or a killed job's leftovers) never open each other's segments.
  uint64_t instanceKey() const { return instanceKey_; }

  State state() const { return state_.load(std::memory_order_acquire); }

  /// OK when the communicator can take calls; otherwise says why not (initializing, failed, ...).
  Status checkUsable() const;

  /// braidCommGetAsyncError: ok, kInProgress while initializing, or the error that stopped it.
  Status asyncError() const;

  /// Ranks with the same color form a new communicator, ordered by (key, rank). Called by every
  /// rank; `out` stays empty for BRAID_SPLIT_NOCOLOR.
  Status split(int color, int key, const CommConfig& config, std::shared_ptr<Comm>* out);

  /// braidCommShrink: every rank not in `excluded` (unique, in range, not this rank; any order) calls
  /// it; they form a new communicator, ranked in this one's order, without exchanging anything with
  /// the excluded ranks, so it completes when those are dead or hung. Allowed on a communicator
  /// that failed (a dead peer, the watchdog). `abortFirst` (BRAID_SHRINK_ABORT) first ends this
  /// communicator's calls in flight, as abort() does, but keeps the bootstrap for the exchange.
  Status shrink(const std::vector<int>& excluded, const CommConfig& config, bool abortFirst,
                std::shared_ptr<Comm>* out);

  Status finalize();

  /// Makes every wait in flight on this communicator fail promptly (any thread).
  void abort();
  bool aborted() const { return abortFlag_.load(std::memory_order_acquire); }

  bootstrap::Bootstrap& bootstrap() { return *bootstrap_; }
  /// BRAID_TIMEOUT's watch of this rank (null when off).
  const CallWatch* watch() const { return watch_.get(); }

  /// Runs a collective: on host buffers it returns when done; on a GPU it is queued on
  /// request.stream.
  Status collective(const CollRequest& request);

  /// Runs a group's collectives on this communicator in order. On a GPU, consecutive calls of one
  /// kernel, protocol and stream share one launch (CudaEngine::runBatch).
  Status collectives(const std::vector<CollRequest>& requests);

  /// braidRedOpCreatePreMulSum / braidRedOpDestroy: this communicator's pre-multiplied sums.
  /// `immediate`: *scalar is read now; else `scalar` is read by each call as it runs.
  Status createPreMulSum(const void* scalar, braidDataType_t type, bool immediate, braidRedOp_t* out);
  Status destroyRedOp(braidRedOp_t op);
  /// A call whose op is one of this communicator's pre-multiplied sums (for its type) becomes a sum
  /// with the scalar in `r`; an op from braidNumOps up that is not is an error naming it.
  Status resolvePreMul(CollRequest* r) const;

  /// braidCommRegister / braidCommWindowRegister: this communicator's registered buffers.
  Registrations& registrations() { return registrations_; }
  /// braidCommWindowRegister / Deregister. Where direct calls run across the processes of this host
  /// (CudaEngine::windowsAcrossProcesses) each is a collective: the window is exported to every
  /// other process, or, if any rank's memory cannot be, kept to the FIFOs on every rank
  /// (comm_windows.cc). `refused` is the caller's verdict on the arguments: a rank whose window is
  /// refused still takes part in the exchange (offering nothing, so every rank keeps the FIFOs),
  /// then returns it, so a bad argument on one rank is an error there and no hang elsewhere.
  Status registerWindow(void* buff, size_t size, const Status& refused, void** handle);
  Status deregisterWindow(void* handle);
  /// braidCommRegister / Deregister. Where direct calls run across the processes of this host, the
  /// buffer's allocation is exported to every other process as it is registered, through their
  /// export services (core/export_service.h), and unexported as it is deregistered, once this
  /// rank's queued calls are over (comm_buffers.cc). A buffer that cannot be exported keeps its
  /// calls to the FIFOs, said at INFO.
  Status registerBuffer(void* buff, size_t size, void** handle);
  Status deregisterBuffer(void* handle);

  /// A copy of `bytes` at `src` that a call reads after its own output has overwritten `src` (an
  /// in-place all-to-all): on host memory made now; on a GPU made on `stream` in scratch that is
  /// freed on `stream` when the last holder of `*out` lets go (after the launch that reads it).
  Status stageInput(const void* src, size_t bytes, void* stream, std::shared_ptr<void>* out);

  /// Runs sends and receives together (one group's worth on this communicator).
  Status p2p(const std::vector<P2pRequest>& requests);

  /// The tuner's predicted time of a call (0 where this communicator has no tuner yet).
  double estimateUs(const CollRequest& request) const;
  double estimateUs(const P2pRequest& request) const;
  /// This communicator's tuner: the host engine's, or the GPU plan's (null without a plan).
  const tune::Tuner* tuner() const;

 private:
  explicit Comm(const InitArgs& args);
  Status init(const bootstrap::UniqueIdBytes& id);
  Status exchangePeerInfo();
  Status dumpTopology();
  Status planGpu();
  Status connectGpu();
  exec::CudaCall gpuCall(const CollRequest& request);
  bool directBuffers(const CollRequest& request, exec::CudaCall* call);
  bool exportedShifts(const void* p, size_t bytes, int64_t* shifts);
  Status startExportService();
  void stopExportService();
  Status runGpuP2p(const std::vector<P2pRequest>& requests);
  Status oneRankCall(const CollRequest& request);
  Status preMultiply(CollRequest* r, std::vector<std::vector<char>>* hostCopies,
                     std::vector<std::pair<void*, void*>>* deviceCopies);
  Status failOnRemoteError(Status s);
  Status startWatch(uint16_t* port);
  void startGpuWatch();
  exec::CallNote gpuNote(const CollRequest* collective);
  Status hostResult(Status s);
  Status gpuResult(Status s);
  bool gpuStopped(Status* why) const;
  void abortCalls();                                  // abort() but the bootstrap
  static constexpr uint32_t kShrinkTag = 0x53480000;  // "SH": + the shrink's number
  void runInit(const bootstrap::UniqueIdBytes& id);

  const int rank_;
  const int nranks_;
  const CommConfig config_;
  int cudaDevice_ = -1;
  uint64_t idHash_ = 0;
  uint64_t instanceKey_ = 0;
  std::vector<transport::PeerIdentity> identities_;  // every rank's, from init's one exchange

  mutable std::atomic<State> state_{State::kInitializing};  // (gpuStopped, const, may fail it)
  std::atomic<bool> abortFlag_{false};                      // the calls' waits
  std::atomic<bool> bootstrapAbort_{false};                 // the bootstrap's waits: abort() only, not shrink
  uint32_t shrinks_ = 0;                                    // numbers the shrinks' messages
  mutable std::mutex errorMu_;
  mutable Status error_;  // why the comm failed (state kFailed; also set by gpuStopped, const)

  // BRAID_CHECK, read when the Comm is made: each call is compared across ranks before it runs
  // (core/call_check.h). Checked calls hold checkMu_ from the exchange to the end of the run: the
  // bootstrap takes one caller at a time, and a rank runs its calls in the order it checked them.
  // callSeq_ numbers them.
  const bool checkCalls_;
  std::mutex checkMu_;
  uint64_t callSeq_ = 0;

  struct PreMulOp {
    braidDataType_t type = braidFloat32;
    uint64_t value = 0;             // the scalar's bytes, read at creation (immediate)
    const void* pointer = nullptr;  // or where each call reads it
  };
  mutable std::mutex opsMu_;
  std::map<int, PreMulOp> ops_;
  Registrations registrations_;
  // Windows exported across processes, by handle: one export per registration of the handle (the
  // offers, to close the mappings; shift[q]: where rank q sees the window, less where it is here).
  struct WindowExport {
    std::vector<exec::WindowOffer> offers;
    std::vector<int64_t> shift;
  };
  // Buffers exported across processes, by handle: one export per registration of the handle (the
  // IPC handle and the ranks asked to map it, to unexport; shift as a window's).
  struct BufferExport {
    unsigned char ipc[transport::kIpcHandleBytes] = {};
    std::vector<int> asked;
    std::vector<int64_t> shift;
  };
  std::mutex windowsMu_;  // windows_ and buffers_
  std::map<const void*, std::vector<WindowExport>> windows_;
  std::map<const void*, std::vector<BufferExport>> buffers_;
  std::vector<net::SocketAddress> exportServices_;                // every rank's export service (port 0: none)
  std::string exportBuffer(const void* buff, BufferExport* out);  // "" or why it cannot be
  Status unexport(const BufferExport& e);
  // Takes the last export of `handle` from `exports` (windows_ or buffers_); false if it has none.
  template <typename Export>
  bool takeExport(std::map<const void*, std::vector<Export>>* exports, const void* handle, Export* out) {
    std::lock_guard<std::mutex> lock(windowsMu_);
    auto it = exports->find(handle);
    if (it == exports->end()) return false;
    *out = std::move(it->second.back());
    it->second.pop_back();
    if (it->second.empty()) exports->erase(it);
    return true;
  }
  int nextOp_ = braidNumOps;
  // A GPU communicator's calls and collectives queued (each launch notes its call: its tag goes to
  // the call ledger, the rest to BRAID_TIMEOUT's watchdog), and the peers' watch listeners until the engine exists
  // (connectGpu starts the watch).
  uint64_t gpuCalls_ = 0;
  uint32_t gpuCollectives_ = 0;
  std::vector<net::SocketAddress> watchListeners_;

  std::unique_ptr<HostEngine> host_;       // host-memory communicators
  CommPlan plan_;                          // GPU communicators: machine, rings, tuner
  std::unique_ptr<exec::CudaEngine> gpu_;  // GPU communicators: connections and kernel launch
  // GPU communicators: maps other processes' registered buffers for this rank. After gpu_, so that
  // it stops (and drops the mappings peers left) before the engine goes.
  std::unique_ptr<ExportListener> exports_;
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::thread initThread_;
  // BRAID_TIMEOUT: last, so that it goes first and its callback and sampler never outlive the
  // members they use.
  std::unique_ptr<CallWatch> watch_;
};

/// Resolves DeviceKind::kAuto and checks a CUDA request against the machine; `device` gets the
/// CUDA device to bind (-1 for host memory).
Status resolveDevice(DeviceKind kind, int requested, int* device);

}  // namespace braid::core

// The CUDA engine's copy-engine path (device/ce_work.h has the scheme): a side stream per peer
// whose copies push this rank's chunks into the peer's slots, ordered by 32-bit words through
// stream memory operations (cuStreamWriteValue32 / cuStreamWaitValue32, on this rank's own words
// only), and the reducer kernel on the call's stream. The side streams fork from the call's stream
// and join it again, so the call is one piece of the stream's order, eager or captured in a CUDA
// graph.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/log.h"
#include "exec/ce_program.h"
#include "exec/cuda_device.h"
#include "exec/cuda_engine.h"
#include "exec/cuda_engine_state.h"

namespace braid::exec {
namespace {

using WriteValue = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using WaitValue = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

template <class Fn>
Fn driverEntry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

struct MemOps {
  WriteValue write = driverEntry<WriteValue>("cuStreamWriteValue32");
  WaitValue wait = driverEntry<WaitValue>("cuStreamWaitValue32");
};

const MemOps& memOps() {
  static const MemOps ops;
  return ops;
}

Status driverCheck(const char* what, CUresult r) {
  if (r == CUDA_SUCCESS) return Status::ok();
  return internalError(std::string(what) + " failed: CUresult " + std::to_string(static_cast<int>(r)));
}

// Where a rank's copy-engine regions lie and how its slots are cut.
struct CeLayout {
  char* const* regions;  // by rank, as mapped here
  int rank;
  int nranks;
  size_t slotBytes;
};

// One peer's side of a call: the ops of cePeerProgram, queued on this rank's stream for peer q.
class PeerProgram {
 public:
  PeerProgram(const CeLayout& l, const CudaCall& call, cudaStream_t st)
      : l_(l), call_(call), st_(st), es_(device::elemSizeOf(call.type)) {
    words_ = reinterpret_cast<device::CeWords*>(l.regions[l.rank]);
  }

  Status run(const std::vector<CeOp>& ops) {
    for (const CeOp& op : ops) BRAID_RETURN_IF_ERROR(queue(op));
    return Status::ok();
  }

 private:
  Status queue(const CeOp& op) {
    const auto word = reinterpret_cast<CUdeviceptr>(ceWordIn(words_, op.word, op.peer));
    switch (op.kind) {
      case CeOp::Kind::kWait:
        return driverCheck("cuStreamWaitValue32 (a copy-engine call)",
                           memOps().wait(st_, word, op.value, CU_STREAM_WAIT_VALUE_GEQ));
      case CeOp::Kind::kRaise:
        return driverCheck("cuStreamWriteValue32 (a copy-engine call)",
                           memOps().write(st_, word, op.value, CU_STREAM_WRITE_VALUE_DEFAULT));
      case CeOp::Kind::kCopy: break;
    }
    if (op.elems == 0) return Status::ok();
    char* dst = l_.regions[op.peer] + device::ceSlotOffset(op.gather, device::ceSlotOwner(l_.rank, op.peer, l_.nranks),
                                                           static_cast<int>(op.chunk % device::kCeDepth), l_.nranks,
                                                           l_.slotBytes);
    const char* src = static_cast<const char*>(op.fromOutput ? call_.recvbuff : call_.sendbuff) + op.srcElem * es_;
    return cudaCheck("cudaMemcpyAsync (a copy-engine chunk)",
                     cudaMemcpyAsync(dst, src, op.elems * es_, cudaMemcpyDeviceToDevice, st_));
  }

  const CeLayout& l_;
  const CudaCall& call_;
  cudaStream_t st_;
  const size_t es_;
  device::CeWords* words_ = nullptr;
};

}  // namespace

int CudaEngine::copyEngineCtas() const { return s_->ceCtas; }

void CudaEngine::limitCopyEngines(int ctas) { s_->ceCtas = std::min(s_->ceCtas, std::max(0, ctas)); }

// connect's last step: the path is offered where every rank of the communicator is on this host and
// its arena is mapped here (peer pointers or CUDA IPC), with slots reserved and the driver's stream
// memory operations at hand.
Status CudaEngine::openCopyEngines() {
  State& s = *s_;
  const int n = s.o.nranks, me = s.o.rank;
  if (s.o.ceSlotBytes == 0 || !s.direct || s.o.hostMemory || s.o.spansHosts || n < 2 || n > device::kMaxOneShotRanks)
    return Status::ok();
  for (int q = 0; q < n; ++q) {
    if (s.peerBases[q] == nullptr) return Status::ok();
  }
  if (memOps().write == nullptr || memOps().wait == nullptr) {
    BRAID_WARN(log::Subsys::kInit, "rank ", me,
               ": the CUDA driver offers no stream memory operations (cuStreamWaitValue32): no copy-engine path");
    return Status::ok();
  }
  // (Ranks of one process that share a GPU reserved no slots: Comm's init says why.) A side stream
  // waiting for a word holds its hardware queue, and a stream of this rank's own queued behind it
  // only waits longer; but for the copies to overlap, the rank's side streams, call stream, set-up
  // stream and the legacy stream need queues of their own.
  const int queues = n + 2;
  if (cudaHardwareQueues() < queues) {
    BRAID_WARN(log::Subsys::kInit, "rank ", me, ": no copy-engine path: its streams need ", queues,
               " hardware queues and CUDA_DEVICE_MAX_CONNECTIONS=", cudaHardwareQueues(),
               " gives fewer (set it before the process's first CUDA call)");
    return Status::ok();
  }
  // The kernels raise words in their peers' blocks with system-scope atomics (ce.cuh), which need
  // native peer atomics: without them (PCIe, mostly) an abort could leave a stream waiting forever,
  // so no path. Each peer's GPU is found by its bus id (processes may number their GPUs apart).
  for (int q = 0; q < n; ++q) {
    const transport::PeerIdentity& id = s.identities[q];  // (set before this step)
    if (std::strncmp(id.busId, s.identities[me].busId, sizeof(id.busId)) == 0) continue;
    int dev = -1, atomics = 0;
    if (cudaDeviceGetByPCIBusId(&dev, id.busId) != cudaSuccess ||
        cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, s.o.device, dev) != cudaSuccess)
      atomics = 0;
    if (atomics == 0) {
      cudaGetLastError();
      BRAID_WARN(log::Subsys::kInit, "rank ", me, ": no copy-engine path: the GPUs at ", s.identities[me].busId,
                 " and ", id.busId, " (rank ", q, ") have no native peer atomics");
      return Status::ok();
    }
  }
  for (int q = 0; q < n; ++q) s.ceRegions[q] = s.peerBases[q] + s.layouts[q].ce;
  s.ceStreams.assign(n, nullptr);
  s.ceJoined.assign(n, nullptr);
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaStreamCreateWithFlags (copy-engine pushes)",
                                    cudaStreamCreateWithFlags(&s.ceStreams[q], cudaStreamNonBlocking)));
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaEventCreate (copy-engine pushes)",
                                    cudaEventCreateWithFlags(&s.ceJoined[q], cudaEventDisableTiming)));
  }
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaEventCreate (copy-engine pushes)", cudaEventCreateWithFlags(&s.ceFork, cudaEventDisableTiming)));
  s.ceCtas = device::kMaxCeCtas;
  BRAID_INFO(log::Subsys::kInit, "copy-engine path: ", device::kCeDepth, " slots of ", s.o.ceSlotBytes >> 10,
             " KiB per peer each way, a reducer of up to ", s.ceCtas, " CTAs");
  return Status::ok();
}

void CudaEngine::State::releaseCopyEngines() {
  for (cudaStream_t st : ceStreams) {
    if (st != nullptr) cudaStreamDestroy(st);
  }
  for (cudaEvent_t e : ceJoined) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  if (ceFork != nullptr) cudaEventDestroy(ceFork);
  ceStreams.clear();
  ceJoined.clear();
  ceFork = nullptr;
}

// After an abort: this rank's side streams may wait for words a peer will never raise. Raising
// them all (on the set-up stream, which waits for none of them) lets the streams drain; the data
// they move is of no use any more. A call queued behind is released by its own kernel, which sees
// the abort at its start (ce.cuh).
void CudaEngine::State::unblockCopyEngines() {
  if (ceCtas == 0 || memOps().write == nullptr) return;
  DeviceScope scope(o.device);  // (the watchdog's thread may have another device current)
  auto* w = reinterpret_cast<device::CeWords*>(ceRegions[o.rank]);
  auto raise = [&](uint32_t* word) {
    const CUresult r =
        memOps().write(setup, reinterpret_cast<CUdeviceptr>(word), 0x7fffffffu, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS)
      BRAID_WARN(log::Subsys::kColl, "rank ", o.rank, ": releasing the copy-engine streams after an abort: CUresult ",
                 static_cast<int>(r));
  };
  for (int q = 0; q < o.nranks; ++q) {
    raise(&w->freed[q]);
    raise(&w->gfreed[q]);
    raise(&w->done[q]);
  }
  raise(&w->reduced);
}

Status CudaEngine::launchCopyEngine(const CudaCall& call) {
  State& s = *s_;
  const int n = s.o.nranks, me = s.o.rank;
  if (s.ceCtas == 0 || !algo::copyEngineRuns(call.coll) || call.nChannels < 1 || call.nChannels > s.ceCtas) {
    return internalError(std::string(algo::collName(call.coll)) + " by the copy engines on " +
                         std::to_string(call.nChannels) + " CTAs: the engine offers " + std::to_string(s.ceCtas));
  }
  const size_t es = device::elemSizeOf(call.type);
  device::CeKernelArgs k;
  k.base = kernelArgs(call, device::Proto::kSimple);
  k.base.nLanes = 1;
  k.base.laneThreads = std::min(s.o.threads, device::kMaxBlockThreads / 2) / 32 * 32;
  k.call.input = call.sendbuff;
  k.call.output = call.recvbuff;
  k.call.count = call.count;
  k.call.nChannels = call.nChannels;
  k.call.type = call.type;
  k.call.op = call.op;
  k.call.postOp = call.postOp;
  k.call.root = call.root;
  k.plan = device::cePlan(call.coll, call.count, es, n, s.o.ceSlotBytes, call.root);
  k.slotBytes = s.o.ceSlotBytes;
  for (int q = 0; q < n; ++q) k.regions[q] = s.ceRegions[q];
  char range[160];
  std::snprintf(range, sizeof(range), "%s %s %s count %zu root %d ch %d chunks %u", device::ceKernelName(),
                algo::collName(call.coll), call.op == braidAvg ? "avg" : "", call.count, call.root, call.nChannels,
                k.plan.chunks);
  s.noteLaunch(&k.base, call.note, range);
  auto stream = static_cast<cudaStream_t>(call.stream);
  const CeLayout layout{s.ceRegions, me, n, s.o.ceSlotBytes};
  return launch(call.stream, range, [&]() -> int {
    // Fork: each side stream after what the call's stream holds so far (the inputs' writers).
    if (cudaError_t e = cudaEventRecord(s.ceFork, stream); e != cudaSuccess) return e;
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      if (cudaError_t e = cudaStreamWaitEvent(s.ceStreams[q], s.ceFork, 0); e != cudaSuccess) return e;
    }
    // The reducer first, so that its CTAs hold their SMs before a kernel queued after it does.
    if (int e = device::launchCeKernel(call.nChannels, k, stream); e != 0) return e;
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      Status pushed = PeerProgram(layout, call, s.ceStreams[q]).run(cePeerProgram(k.plan, me, q, n));
      if (!pushed.isOk()) {
        BRAID_WARN(log::Subsys::kColl, "rank ", me, ": ", pushed.message());
        return cudaErrorUnknown;
      }
      if (cudaError_t e = cudaEventRecord(s.ceJoined[q], s.ceStreams[q]); e != cudaSuccess) return e;
      if (cudaError_t e = cudaStreamWaitEvent(stream, s.ceJoined[q], 0); e != cudaSuccess) return e;
    }
    // Join, then clear the words this rank's streams waited on: the next call starts from 0.
    return static_cast<int>(cudaMemsetAsync(s.ceRegions[me], 0, device::kCeClearedBytes, stream));
  });
}

}  // namespace braid::exec

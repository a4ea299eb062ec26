// The CUDA engine's launch half: a call's kernel arguments, the launches of a group's calls (one per
// run of calls of one kernel, exec/launch_plan.h), and a group's sends and receives. The set-up half
// is cuda_engine.cc.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "algo/p2p.h"
#include "core/log.h"
#include "exec/cuda_engine.h"
#include "exec/cuda_engine_state.h"
#include "exec/launch_plan.h"
#include "exec/p2p_self.h"

namespace braid::exec {
namespace {

// Send/recv messages up to this many bytes run LL on one channel; larger ones Simple on all.
constexpr size_t kP2pLlBytes = 64 * 1024;

device::KernelKind kernelKind(algo::Coll coll, algo::Algo a) {
  using device::KernelKind;
  if (a == algo::Algo::kOneShot) {
    switch (coll) {
      case algo::Coll::kAllGather: return KernelKind::kAllGatherOneShot;
      case algo::Coll::kReduceScatter: return KernelKind::kReduceScatterOneShot;
      case algo::Coll::kBroadcast: return KernelKind::kBroadcastOneShot;
      case algo::Coll::kReduce: return KernelKind::kReduceOneShot;
      default: return KernelKind::kAllReduceOneShot;
    }
  }
  // The table's row for (coll, a); a collective the algorithm does not implement runs its ring's.
  if (!algo::supports(coll, a)) a = algo::Algo::kRing;
#define BRAID_IMPL(c, al, kind, kernel, call) \
  if (coll == algo::Coll::c && a == algo::Algo::al) return KernelKind::kind;
#include "algo/algorithm_table.def"
  return KernelKind::kAllReduceRing;
}

const char* shortType(braidDataType_t t) {
  static const char* names[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16", "e4m3", "e5m2"};
  return t >= 0 && t < braidNumTypes ? names[t] : "?";
}

const char* shortOp(braidRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < braidNumOps ? names[op] : "?";
}

// Makes every stream of `waiters` wait for the work so far of every stream of `sources` (one event,
// recorded on each source in turn). Under capture the streams must belong to the same capture.
Status joinStreams(const std::vector<cudaStream_t>& sources, const std::vector<cudaStream_t>& waiters,
                   cudaEvent_t event) {
  if (sources.empty() || waiters.empty()) return Status::ok();
  for (cudaStream_t source : sources) {
    BRAID_RETURN_IF_ERROR(
        cudaCheck("cudaEventRecord (joining a one-shot launch's streams)", cudaEventRecord(event, source)));
    for (cudaStream_t waiter : waiters) {
      BRAID_RETURN_IF_ERROR(cudaCheck("cudaStreamWaitEvent (joining a one-shot launch's streams)",
                                      cudaStreamWaitEvent(waiter, event, 0)));
    }
  }
  return Status::ok();
}

}  // namespace

// Fills what every kernel of this rank needs.
device::KernelArgs CudaEngine::kernelArgs(const algo::CallShape& shape, device::Proto proto) const {
  const State& s = *s_;
  device::KernelArgs a;
  a.work = algo::workFor(s.o.geometry, s.o.rank, 0, shape);
  a.work.ring.order = s.ringOrder;
  a.work.hosts.ranks = s.hostRanks;
  a.work.hosts.start = s.hostStart;
  a.conns = s.table;
  a.simpleSlotBytes = s.o.simpleSlotBytes;
  a.llSlotLines = static_cast<int>(s.o.llSlotBytes / device::kLlDataPerLine);
  a.ll128SlotLines = static_cast<int>(s.o.ll128SlotBytes / device::kLl128DataPerLine);
  a.abortFlag = s.abortDevice;
  a.oneShot = s.oneShot;
  // LL runs half the threads: its steps synchronise more often than they move data (measured,
  // bench/NOTES.md). The one-shot has no steps: every thread streams its own lines.
  const bool halve = proto == device::Proto::kLL && shape.algo != algo::Algo::kOneShot;
  const int threads = halve ? std::max(64, s.o.threads / 2) : s.o.threads;
  const device::KernelKind kind =
      shape.coll == algo::Coll::kNumColls ? device::KernelKind::kSendRecv : kernelKind(shape.coll, shape.algo);
  a.nLanes = shape.coll == algo::Coll::kNumColls ? 2 : algo::numLanes(shape.algo);
  a.laneThreads = std::min(threads, device::maxBlockThreads(kind) / a.nLanes) / 32 * 32;
  return a;
}

// Launches on `stream` after the previous call of this communicator (another stream waits for it
// through an event, except while capturing), inside an NVTX range named `range`.
Status CudaEngine::launch(void* stream, const char* range, const std::function<int()>& launchFn) {
  State& s = *s_;
  auto cs = static_cast<cudaStream_t>(stream);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaStreamIsCapturing", cudaStreamIsCapturing(cs, &capture)));
  const bool capturing = capture != cudaStreamCaptureStatusNone;
  // Calls of one communicator run in call order even on different streams: their FIFO steps must.
  if (!capturing && s.lastStream != nullptr && s.lastStream != stream) {
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaStreamWaitEvent", cudaStreamWaitEvent(cs, s.lastDone, 0)));
  }
  nvtxRangePushA(range);
  // A captured launch tells the transports that a graph of this rank's kernels lives (a replay's
  // kernels need the proxy); an eager one tells them at once, and its end comes after lastDone's
  // record, which their probe reads. A failed launch still gets its end: the proxy may sleep again.
  Status captured = Status::ok();
  if (capturing) {
    captured = s.captured(cs);
  } else {
    s.eagerLaunch(true);
  }
  int err = captured.isOk() ? launchFn() : 0;
  nvtxRangePop();
  if (!capturing) {
    Status recorded = err == 0 ? cudaCheck("cudaEventRecord", cudaEventRecord(s.lastDone, cs)) : Status::ok();
    s.eagerLaunch(false);
    BRAID_RETURN_IF_ERROR(recorded);
  }
  BRAID_RETURN_IF_ERROR(captured);
  BRAID_RETURN_IF_ERROR(cudaCheck(range, static_cast<cudaError_t>(err)));
  if (!capturing) s.lastStream = stream == nullptr ? reinterpret_cast<void*>(1) : stream;
  BRAID_TRACE(log::Subsys::kColl, range);
  return Status::ok();
}

namespace {

// A call's parameters in a kernel's argument block: made from its record, here only.
device::CallArgs callArgs(const algo::Call& call) {
  device::CallArgs c;
  c.input = call.sendbuff;
  c.output = call.recvbuff;
  c.count = call.count;
  c.chunkElems = call.chunkElems;
  c.root = call.root;
  c.nChannels = call.nChannels;
  c.type = call.type;
  c.op = call.op;
  c.postOp = call.postOp;
  return c;
}

}  // namespace

// The call as the tuner planned it, checked against what the engine has (the tuner knows the
// engine's channels and slots: a plan outside them is a bug, not a call to clamp).
Status CudaEngine::checkPlan(const CudaCall& call) const {
  const State& s = *s_;
  const bool oneShot = call.algo == algo::Algo::kOneShot;
  const int most = oneShot ? s.o.oneShotChannels : call.algo == algo::Algo::kRing ? s.o.channels : s.o.fullChannels;
  const size_t slot = slotElems(s.o, call.proto, device::elemSizeOf(call.type));
  if (call.nChannels < 1 || call.nChannels > most || call.chunkElems < 1 || (!oneShot && call.chunkElems > slot)) {
    return internalError(std::string(algo::collName(call.coll)) + " by " + algo::algoName(call.algo) + " on " +
                         std::to_string(call.nChannels) + " channel(s) in chunks of " +
                         std::to_string(call.chunkElems) + " elements: outside the engine's " + std::to_string(most) +
                         " channel(s) and " + std::to_string(slot) + "-element slots");
  }
  if (oneShot && call.count * device::elemSizeOf(call.type) > s.o.oneShotBytes) {
    return internalError("one-shot " + std::string(algo::collName(call.coll)) + " of " + std::to_string(call.count) +
                         " elements per block exceeds its " + std::to_string(s.o.oneShotBytes) + "-byte buffers");
  }
  return Status::ok();
}

// Each collective into the call ledger (exec/call_ledger.h) before any is launched: a mismatch
// with a neighbour on this host fails the batch.
Status CudaEngine::enterLedger(const CudaCall* calls, size_t n) {
  State& s = *s_;
  void* known = nullptr;
  bool capturing = false;
  for (size_t i = 0; i < n; ++i) {
    if (i == 0 || calls[i].stream != known) {
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      BRAID_RETURN_IF_ERROR(cudaCheck("cudaStreamIsCapturing",
                                      cudaStreamIsCapturing(static_cast<cudaStream_t>(calls[i].stream), &capture)));
      known = calls[i].stream;
      capturing = capture != cudaStreamCaptureStatusNone;
    }
    BRAID_RETURN_IF_ERROR(s.ledger.enter(calls[i].note.tag, capturing));
  }
  return Status::ok();
}

// The calls in order: runs of FIFO and one-shot calls as launch_plan.h cuts them; a direct or
// copy-engine call launches alone, between them.
Status CudaEngine::runBatch(const CudaCall* calls, size_t n) {
  State& s = *s_;
  std::lock_guard<std::mutex> lock(s.mu);
  DeviceScope scope(s.o.device);
  std::vector<LaunchKey> keys(n);
  BRAID_RETURN_IF_ERROR(enterLedger(calls, n));
  // Direct and copy-engine calls launch alone, between the runs of the others.
  auto alone = [](const CudaCall& c) { return c.direct || c.algo == algo::Algo::kCopyEngine; };
  for (size_t i = 0; i < n; ++i) {
    const CudaCall& c = calls[i];
    if (alone(c)) continue;
    BRAID_RETURN_IF_ERROR(checkPlan(c));
    keys[i].kernel = static_cast<int>(kernelKind(c.coll, c.algo));
    keys[i].proto = static_cast<int>(c.proto);
    keys[i].stream = c.stream;
    keys[i].oneShot = c.algo == algo::Algo::kOneShot;
    keys[i].oneShotWords = (c.count * device::elemSizeOf(c.type) + 7) / 8;
  }
  size_t begin = 0;
  for (size_t i = 0; i <= n; ++i) {
    if (i < n && !alone(calls[i])) continue;
    BRAID_RETURN_IF_ERROR(launchRun(calls + begin, keys.data() + begin, i - begin));
    if (i < n) BRAID_RETURN_IF_ERROR(calls[i].direct ? launchDirect(calls[i]) : launchCopyEngine(calls[i]));
    begin = i + 1;
  }
  return Status::ok();
}

// Calls that are not direct, in launches as launch_plan.h cuts them.
Status CudaEngine::launchRun(const CudaCall* calls, const LaunchKey* keys, size_t n) {
  State& s = *s_;
  if (n == 0) return Status::ok();
  const std::vector<LaunchKey> run(keys, keys + n);
  for (const LaunchRange& r : planLaunches(run, device::kMaxBatchCalls, s.o.oneShotBytes / device::kLlDataPerLine)) {
    const CudaCall& first = calls[r.begin];
    const auto kind = static_cast<device::KernelKind>(keys[r.begin].kernel);
    const algo::CallShape& shape = first;
    device::CollKernelArgs k;
    k.base = kernelArgs(shape, first.proto);
    int channels = 0;
    size_t total = 0;
    for (size_t i = r.begin; i < r.end; ++i) {
      k.calls[k.nCalls++] = callArgs(calls[i]);
      channels = std::max(channels, calls[i].nChannels);
      total += calls[i].count;
    }
    char range[160];
    const char* name = device::kernelName(kind, first.proto, k.nCalls);
    if (k.nCalls == 1) {
      std::snprintf(range, sizeof(range), "%s %s %s count %zu ch %d", name, shortType(first.type), shortOp(first.op),
                    shape.count, channels);
    } else {
      std::snprintf(range, sizeof(range), "%s %d calls count %zu ch %d", name, k.nCalls, total, channels);
    }
    // A one-shot launch may hold calls of several streams (launch_plan.h): it runs on the first
    // call's stream after the others' work so far, and their later work waits for it.
    std::vector<cudaStream_t> others;
    for (size_t i = r.begin; i < r.end; ++i) {
      auto st = static_cast<cudaStream_t>(calls[i].stream);
      if (st != static_cast<cudaStream_t>(first.stream) && std::find(others.begin(), others.end(), st) == others.end())
        others.push_back(st);
    }
    s.noteLaunch(&k.base, first.note, range);
    const auto stream = static_cast<cudaStream_t>(first.stream);
    BRAID_RETURN_IF_ERROR(joinStreams(others, {stream}, s.joined));
    BRAID_RETURN_IF_ERROR(launch(
        first.stream, range, [&] { return device::launchCollKernel(kind, first.proto, channels, k, first.stream); }));
    BRAID_RETURN_IF_ERROR(joinStreams({stream}, others, s.joined));
  }
  return Status::ok();
}

bool CudaEngine::directCalls() const { return s_->direct; }

// A direct call (device/direct.cuh): the one-shot's regions carry the buffers' addresses.
Status CudaEngine::launchDirect(const CudaCall& call) {
  State& s = *s_;
  if (!s.direct) return internalError("a direct call on a communicator whose ranks do not reach each other's memory");
  const algo::CallShape& shape = call;  // as the tuner planned it: one lane, every thread
  if (shape.algo != algo::Algo::kOneShot || shape.nChannels < 1 || shape.nChannels > device::kMaxDirectCtas) {
    return internalError("a direct call planned as " + std::string(algo::algoName(shape.algo)) + " on " +
                         std::to_string(shape.nChannels) + " CTAs");
  }
  device::DirectKernelArgs k;
  k.base = kernelArgs(shape, device::Proto::kSimple);
  k.call = callArgs(call);
  for (int q = 0; q < device::kMaxOneShotRanks; ++q) {
    k.input[q] = reinterpret_cast<uint64_t>(call.sendbuff) + static_cast<uint64_t>(call.inputShift[q]);
    k.output[q] = reinterpret_cast<uint64_t>(call.recvbuff) + static_cast<uint64_t>(call.outputShift[q]);
  }
  char range[160];
  std::snprintf(range, sizeof(range), "%s %s %s count %zu ch %d",
                device::directKernelName(static_cast<int>(shape.coll)), shortType(call.type), shortOp(call.op),
                shape.count, shape.nChannels);
  s.noteLaunch(&k.base, call.note, range);
  return launch(call.stream, range, [&] {
    return device::launchDirectKernel(static_cast<int>(shape.coll), shape.nChannels, k, call.stream);
  });
}

Status CudaEngine::copy(void* dst, const void* src, size_t bytes, void* stream) {
  DeviceScope scope(s_->o.device);
  return cudaCheck("cudaMemcpyAsync (a one-rank collective)",
                   cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)));
}

Status CudaEngine::premultiply(const void* src, size_t n, braidDataType_t type, const void* hostScalar,
                               const void* deviceScalar, void* stream, void** out) {
  DeviceScope scope(s_->o.device);
  auto cs = static_cast<cudaStream_t>(stream);
  const size_t bytes = n * device::elemSizeOf(type);
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMallocAsync (a pre-multiplied sum's input)", cudaMallocAsync(out, bytes, cs)));
  uint64_t value = 0;
  if (hostScalar != nullptr) std::memcpy(&value, hostScalar, device::elemSizeOf(type));
  return cudaCheck("the pre-multiplication kernel",
                   static_cast<cudaError_t>(
                       device::launchPremultiply(*out, src, n, static_cast<int>(type), value, deviceScalar, stream)));
}

Status CudaEngine::stage(const void* src, size_t bytes, void* stream, void** out) {
  DeviceScope scope(s_->o.device);
  auto cs = static_cast<cudaStream_t>(stream);
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMallocAsync (an in-place all-to-all's input)", cudaMallocAsync(out, bytes, cs)));
  Status st = cudaCheck("cudaMemcpyAsync (an in-place all-to-all's input)",
                        cudaMemcpyAsync(*out, src, bytes, cudaMemcpyDefault, cs));
  if (!st.isOk()) {
    cudaFreeAsync(*out, cs);
    *out = nullptr;
  }
  return st;
}

Status CudaEngine::releaseScratch(void* scratch, void* stream) {
  DeviceScope scope(s_->o.device);
  return cudaCheck("cudaFreeAsync (scratch)", cudaFreeAsync(scratch, static_cast<cudaStream_t>(stream)));
}

Status CudaEngine::runP2p(std::vector<algo::P2pOp> sends, std::vector<algo::P2pOp> recvs, const void* sendBase,
                          void* recvBase, void* stream, const CallNote& note) {
  State& s = *s_;
  if (sends.size() > device::kMaxP2pOps || recvs.size() > device::kMaxP2pOps) {
    return invalidUsage("a group on a GPU communicator may hold at most " + std::to_string(device::kMaxP2pOps) +
                        " sends and " + std::to_string(device::kMaxP2pOps) + " receives (this one: " +
                        std::to_string(sends.size()) + " and " + std::to_string(recvs.size()) + ")");
  }
  std::vector<SelfCopy> copies;
  BRAID_RETURN_IF_ERROR(takeSelfCopies(s.o.rank, &sends, &recvs, &copies));
  std::lock_guard<std::mutex> lock(s.mu);
  DeviceScope scope(s.o.device);
  // Messages to itself: device-to-device copies on the stream, ahead of the kernel (they touch no
  // FIFO, so they need no ordering against the communicator's other streams).
  for (const SelfCopy& c : copies) {
    BRAID_RETURN_IF_ERROR(
        cudaCheck("cudaMemcpyAsync (a message to itself)",
                  cudaMemcpyAsync(static_cast<char*>(recvBase) + c.to, static_cast<const char*>(sendBase) + c.from,
                                  c.bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream))));
  }
  algo::orderP2p(s.o.rank, s.o.nranks, &sends, &recvs);
  // Both ends of a message must cut it into the same channels and steps, and a rank knows only its
  // own messages: the protocol and channels follow from each message's own size. Messages up to
  // kP2pLlBytes go in an LL kernel on one channel, the others after it in a Simple kernel on every
  // send/recv channel. Both ends put a message in the same kernel, and every rank launches its LL
  // kernel first, so neither kernel waits on the other. (Choosing by the rank's largest message let
  // the two ends of one message disagree: a hang.)
  const auto small = [](const algo::P2pOp& op) { return op.count <= kP2pLlBytes; };
  for (bool ll : {true, false}) {
    std::vector<algo::P2pOp> classSends, classRecvs;
    for (const algo::P2pOp& op : sends) {
      if (small(op) == ll) classSends.push_back(op);
    }
    for (const algo::P2pOp& op : recvs) {
      if (small(op) == ll) classRecvs.push_back(op);
    }
    if (classSends.empty() && classRecvs.empty()) continue;
    const device::Proto proto = ll ? device::Proto::kLL : device::Proto::kSimple;
    algo::Call shape;                    // the messages' bytes from their bases
    shape.coll = algo::Coll::kNumColls;  // marks send/recv: two lanes
    shape.nChannels = ll ? 1 : s.p2pChannels();
    shape.chunkElems = slotElems(s.o, proto, 1);
    shape.sendbuff = sendBase;
    shape.recvbuff = recvBase;
    shape.type = braidUint8;
    device::P2pKernelArgs p;
    p.base = kernelArgs(shape, proto);
    p.call = callArgs(shape);
    p.nSends = static_cast<int>(classSends.size());
    p.nRecvs = static_cast<int>(classRecvs.size());
    std::copy(classSends.begin(), classSends.end(), p.sends);
    std::copy(classRecvs.begin(), classRecvs.end(), p.recvs);
    char range[160];
    std::snprintf(range, sizeof(range), "%s %d send(s) %d recv(s) ch %d",
                  device::kernelName(device::KernelKind::kSendRecv, proto), p.nSends, p.nRecvs, shape.nChannels);
    s.noteLaunch(&p.base, note, range);
    BRAID_RETURN_IF_ERROR(
        launch(stream, range, [&] { return device::launchP2pKernel(proto, shape.nChannels, p, stream); }));
  }
  return Status::ok();
}

}  // namespace braid::exec

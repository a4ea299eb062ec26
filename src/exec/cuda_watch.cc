// The CUDA engine's half of the progress watchdog (BRAID_TIMEOUT, core/watchdog.h): the record the
// kernels write in mapped host memory (device::KernelWatch: each kernel's start and end, and what
// each lane's long waits wait for), the note of each launch's call, and the sample the watchdog
// reads from them.
#include <cuda_runtime.h>

#include <cstdio>
#include <new>
#include <string>

#include "exec/cuda_engine.h"
#include "exec/cuda_engine_state.h"

namespace braid::exec {
namespace {

template <class T>
T readVolatile(const T& v) {
  return *static_cast<const volatile T*>(&v);
}

const char* waitName(int32_t what) {
  switch (static_cast<device::WaitWhat>(what)) {
    case device::WaitWhat::kSlotFilled: return "to fill a receive slot";
    case device::WaitWhat::kSlotFree: return "to free a send slot";
    case device::WaitWhat::kLines: return "for its lines";
    case device::WaitWhat::kPeerStarted: return "to start the call";
    case device::WaitWhat::kPeerDone: return "to finish its reads and writes of the call";
    default: return "";
  }
}

}  // namespace

Status CudaEngine::State::openWatch() {
  if (!o.watch) return Status::ok();
  void* p = nullptr;
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaHostAlloc (the watchdog's record)",
                                  cudaHostAlloc(&p, sizeof(device::KernelWatch), cudaHostAllocMapped)));
  watchHost = new (p) device::KernelWatch();
  void* d = nullptr;
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaHostGetDevicePointer (the watchdog's record)", cudaHostGetDevicePointer(&d, p, 0)));
  watchDevice = static_cast<device::KernelWatch*>(d);
  return Status::ok();
}

void CudaEngine::State::closeWatch() {
  if (watchHost != nullptr) cudaFreeHost(watchHost);
  watchHost = nullptr;
  watchDevice = nullptr;
}

void CudaEngine::State::noteLaunch(device::KernelArgs* a, const CallNote& note, const char* what) {
  if (watchDevice == nullptr) return;
  const uint64_t launch = launches.fetch_add(1, std::memory_order_acq_rel) + 1;
  a->watch = watchDevice;
  a->launch = launch;
  std::lock_guard<std::mutex> lock(notesMu);
  LaunchNote& n = notes[launch % kNotes];
  n.launch = launch;
  n.note = note;
  n.what = what;
}

void CudaEngine::watchSample(GpuWatchSample* out) const {
  const State& s = *s_;
  *out = GpuWatchSample{};
  if (s.watchHost == nullptr) return;
  const uint64_t launched = s.launches.load(std::memory_order_acquire);
  if (launched == 0) return;
  // The calls of a communicator run one after another (CudaEngine::launch): the latest launch's
  // event completes after every earlier kernel.
  cudaEvent_t done = s.lastDone;
  {
    DeviceScope scope(s.o.device);
    out->busy = cudaEventQuery(done) == cudaErrorNotReady;
  }
  (void)cudaGetLastError();
  const device::KernelWatch& w = *s.watchHost;
  const uint64_t started = readVolatile(w.started), finished = readVolatile(w.finished);
  // CTA 0 of kernel `started` is in it; or it ended and the next launch, if any, has not begun.
  out->notStarted = out->busy && started == finished && launched > started;
  const uint64_t current = out->notStarted ? started + 1 : started;
  out->progress = started * 1000003 + finished;
  std::string lanes;
  int waiting = 0;
  for (int i = 0; i < device::kWatchedChannels * device::kWatchedLanes; ++i) {
    const device::LaneWait& l = w.lanes[i];
    const uint64_t launch = readVolatile(l.launch);
    if (launch == 0) continue;
    const uint64_t target = readVolatile(l.target), seen = readVolatile(l.seen);
    const int32_t peer = readVolatile(l.peer), what = readVolatile(l.what);
    // A wait on counters has one writer per lane (its thread 0), whose record stands still while it
    // is stuck. Lines are waited for by every thread of the lane, each with the flags it sees:
    // their records change while nothing moves, and count for the report only (an LL kernel's
    // progress is its start and end).
    if (what != static_cast<int32_t>(device::WaitWhat::kLines)) {
      out->progress = out->progress * 31 + launch * 17 + target * 13 + static_cast<uint64_t>(what) * 3 +
                      static_cast<uint64_t>(peer + 1);
    }
    if (launch != current && launch != started) continue;
    if (waiting == 0) {
      out->waitingOn = peer;
      out->step = target;
    }
    if (++waiting <= 4) {
      char line[200];
      std::snprintf(line, sizeof(line), "%schannel %d lane %d (launch %llu) waits for rank %d %s (%llu, seen %llu)",
                    waiting == 1 ? "" : "; ", i / device::kWatchedLanes, i % device::kWatchedLanes,
                    static_cast<unsigned long long>(launch), peer, waitName(what),
                    static_cast<unsigned long long>(target), static_cast<unsigned long long>(seen));
      lanes += line;
    }
  }
  if (waiting > 4) lanes += "; " + std::to_string(waiting - 4) + " more lane(s) waiting";
  std::string what = "?";
  {
    std::lock_guard<std::mutex> lock(s.notesMu);
    const State::LaunchNote& n = s.notes[current % State::kNotes];
    if (n.launch == current) {
      out->note = n.note;
      what = n.what;
    }
  }
  if (!out->busy) {
    out->detail = "GPU: idle after launch " + std::to_string(finished);
    return;
  }
  out->detail = "GPU: launch " + std::to_string(current) + " (" + what + ") " +
                (out->notStarted ? "has not begun (launch " + std::to_string(finished) +
                                       " ended): its stream waits for earlier work"
                 : started != finished ? std::string("runs")
                                       : std::string("runs (its first CTA has ended)")) +
                " (" + std::to_string(launched) + " launched)";
  if (!lanes.empty()) out->detail += "; " + lanes;
  // Where the bytes from (and to) that peer stand in a transport that holds them between the
  // kernels (the network's proxy): a slot sent but never received, or never sent.
  for (const auto& t : s.transports) {
    const std::string links = t == nullptr || out->waitingOn < 0 ? std::string() : t->describeLinks(out->waitingOn);
    if (!links.empty()) out->detail += "\n    network: " + links;
  }
}

}  // namespace braid::exec

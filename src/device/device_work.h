// What the host hands a braid kernel: plain structs shared by the CUDA executor (C++) and the
// kernels (CUDA), so this header includes no CUDA header.
//
// Connections. Rank r and peer q joined by connection id k on channel c have one FIFO in each
// direction. A FIFO lives in its receiver's GPU memory: kSteps slots for Simple (plain data) and
// kSteps slots of LL lines (16 bytes: 4 data, 4 flag, 4 data, 4 flag) and kSteps slots of LL128
// lines (128 bytes: 120 data, then an 8-byte flag). Two counters drive it:
//   tail  in the receiver's memory: slots the sender has published (Simple only; LL and LL128 lines
//         carry their own flags, step + 1)
//   head  in the sender's memory: slots the receiver has consumed (both protocols)
// Each end keeps its step count in its own memory, so a count survives from one kernel to the next
// and a CUDA graph replays correctly. Everybody polls local memory and writes remote memory.
//
// A peer on another host is reached through two FIFOs in this host's pinned, mapped memory, with a
// network proxy between them (transport/net/net_device.cc): the sender's kernel fills its outbox and the
// proxy sends each published slot; the receiver's proxy receives into its inbox and publishes, and
// its kernel reads there. Such an end has a netStride: every protocol's slot k starts at the same
// place (k x netStride), the sender writes each step's size (bytes of slot used) in the block
// beside its tail (kNetSizesAfterTail) and publishes the tail for every protocol, and the
// receiver waits for the tail for every protocol (the network delivers a slot whole, not line by
// line).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/p2p.h"
#include "algo/work.h"

namespace braid::device {

constexpr int kSteps = 8;               // slots per FIFO
constexpr int kMaxBlockThreads = 1024;  // lanes x threads per lane
constexpr size_t kLlLineBytes = 16;     // one LL store: 8 data bytes and two 4-byte flags
constexpr size_t kLlDataPerLine = 8;
constexpr size_t kLl128LineBytes = 128;  // one warp's 8 threads x 16 bytes: 15 data words and a flag
constexpr size_t kLl128DataPerLine = 120;

using Proto = algo::Proto;

/// Bytes of one element of braidDataType_t `type` (kernels get the type as an int).
BRAID_HOST_DEVICE inline size_t elemSizeOf(int type) {
  switch (type) {
    case 0:
    case 1:
    case 10:
    case 11: return 1;  // int8, uint8, fp8 e4m3, fp8 e5m2
    case 6:
    case 9: return 2;  // float16, bfloat16
    case 4:
    case 5:
    case 8: return 8;  // int64, uint64, float64
    default: return 4;
  }
}

/// The counters and buffers one end of a directed connection uses. Pointers may be remote (peer
/// memory mapped through P2P or CUDA IPC).
struct SendEnd {
  char* simple = nullptr;    // receiver's Simple slots (remote; a network peer: this rank's outbox)
  char* ll = nullptr;        // receiver's LL slots (remote)
  char* ll128 = nullptr;     // receiver's LL128 slots (remote)
  uint64_t* tail = nullptr;  // receiver's tail (remote): this end publishes here
  uint64_t* head = nullptr;  // local: the receiver writes what it consumed
  uint64_t* step = nullptr;  // local: slots this end has sent
  uint64_t netStride = 0;    // 0, or the outbox's slot stride (a network peer)
};

struct RecvEnd {
  char* simple = nullptr;      // local Simple slots
  char* ll = nullptr;          // local LL slots
  char* ll128 = nullptr;       // local LL128 slots
  uint64_t* tail = nullptr;    // local: the sender publishes here
  uint64_t* head = nullptr;    // sender's head (remote): this end reports consumption here
  uint64_t* step = nullptr;    // local: slots this end has received
  uint64_t netStride = 0;      // 0, or the inbox's slot stride (a network peer)
  uint64_t* wanted = nullptr;  // a network peer: this end writes the count it waits for (the proxy
                               // tells a peer that left with nothing more to send from a hang)
};

/// A network peer's outbox: the word holding slot k's size (bytes used) is kNetSizesAfterTail + k
/// words past the tail (transport/host_fifo.h: FifoBlock::kernelSizes, in host memory wherever
/// the slots' data lies).
constexpr size_t kNetSizesAfterTail = 24;

struct PeerConn {
  SendEnd send;
  RecvEnd recv;
};

/// Index of (channel, connId, peer) in a rank's table of PeerConn.
BRAID_HOST_DEVICE inline size_t connIndex(int channel, int connId, int peer, int nranks) {
  return (static_cast<size_t>(channel) * algo::kNumConnIds + connId) * nranks + peer;
}

/// The one-shot algorithm's buffers (oneshot.cuh). Each rank owns a region: a header (one epoch
/// counter per channel, one "call started" word per rank), then kOneShotParities x nranks blocks of
/// `lines` LL lines, block (parity, sender) for what `sender` stores there.
constexpr int kMaxOneShotRanks = 8;
constexpr int kOneShotParities = 2;
constexpr int kMaxOneShotChannels = 64;
/// Calls on registered buffers (direct.cuh) exchange their buffers' addresses in the same regions,
/// after the one-shot's words: one counter per CTA (direct calls so far), then a slot per (sender,
/// CTA) that the sender fills: the call's number, its input and output, and "done" once its reads
/// and writes of the call are over.
constexpr int kMaxDirectCtas = kMaxOneShotChannels;
constexpr int kDirectColls = 5;  // a direct kernel per algo::Coll
struct DirectSlot {
  uint64_t call;
  uint64_t input;
  uint64_t output;
  uint64_t done;
};
constexpr size_t kDirectOffset = (kMaxOneShotChannels + kMaxOneShotRanks) * sizeof(uint64_t);
constexpr size_t kDirectBytes =
    kMaxDirectCtas * sizeof(uint64_t) + kMaxOneShotRanks * kMaxDirectCtas * sizeof(DirectSlot);
constexpr size_t kOneShotHeaderBytes = kDirectOffset + kDirectBytes;
struct OneShotArgs {
  // Each rank's region as mapped here, from this rank's own on: regions[k] is rank (rank + k) % n's.
  // The own region sits at a fixed place in the parameter, so the kernel's first load needs no rank.
  char* regions[kMaxOneShotRanks] = {};
  size_t lines = 0;  // lines per block: the largest message / 8 bytes
  int channels = 0;  // epoch counters in use (the most channels a call may have)
};

/// BRAID_TIMEOUT on a GPU (core/watchdog.h): what a rank's kernels tell the watchdog, in mapped host
/// memory. Thread 0 of CTA 0 writes each kernel's launch number as it starts and as it ends; a lane
/// whose wait runs long (at each abort check of the wait, every 4096 polls) writes what it waits
/// for. Nothing else is written, so a kernel that does not wait long costs two stores.
enum class WaitWhat : int32_t {
  kNone = 0,
  kSlotFilled = 1,   // a receive slot's tail (Simple, or a network peer)
  kSlotFree = 2,     // a send slot's head: the receiver has not consumed it
  kLines = 3,        // LL / LL128 lines carrying the step's flag
  kPeerStarted = 4,  // one-shot: the peer's "call started" word
  kPeerDone = 5,     // direct call: the peer's "done" with its reads and writes of the call
};
struct LaneWait {
  uint64_t launch = 0;  // the kernel's launch number (KernelArgs::launch)
  uint64_t target = 0;  // the count (step, flag or epoch) awaited
  uint64_t seen = 0;    // the count last seen
  int32_t peer = -1;    // the rank waited for
  int32_t what = 0;     // WaitWhat
};
constexpr int kWatchedChannels = 64;  // CTAs past this share the last channel's records
constexpr int kWatchedLanes = 4;
struct KernelWatch {
  uint64_t started = 0;   // launch number of the last kernel whose CTA 0 began
  uint64_t finished = 0;  // ... and ended
  LaneWait lanes[kWatchedChannels * kWatchedLanes];
};

/// What every kernel of a communicator's rank needs: its place in the algorithms, its lanes, its
/// connections and buffers. Part of each kernel's parameter.
struct KernelArgs {
  algo::WorkArgs work;  // ring.order points to device memory; each call sets the call's fields
  int nLanes = 1;
  int laneThreads = 512;            // a multiple of 32; nLanes x laneThreads <= kMaxBlockThreads
  const PeerConn* conns = nullptr;  // device table, connIndex order
  size_t simpleSlotBytes = 0;
  int llSlotLines = 0;
  int ll128SlotLines = 0;
  const volatile int* abortFlag = nullptr;  // mapped host memory: set by braidCommAbort
  OneShotArgs oneShot;
  KernelWatch* watch = nullptr;  // mapped host memory with BRAID_TIMEOUT, else null
  uint64_t launch = 0;           // this launch's number (from 1) with BRAID_TIMEOUT
};

/// One call of a launch: its buffers, element type and operation, and the fields of its WorkArgs.
struct CallArgs {
  const void* input = nullptr;
  void* output = nullptr;
  size_t count = 0;       // WorkArgs::count
  size_t chunkElems = 1;  // one slot of the protocol, in elements of `type`
  int root = 0;
  int nChannels = 1;  // CTAs from nChannels on have no part in this call
  int type = 0;       // braidDataType_t
  int op = 0;         // braidRedOp_t
  bool postOp = false;
};

/// The WorkArgs of `call` on `channel`: the rank's, with the call's fields.
BRAID_HOST_DEVICE inline algo::WorkArgs workOf(const KernelArgs& a, const CallArgs& call, int channel) {
  algo::WorkArgs w = a.work;
  w.count = call.count;
  w.chunkElems = call.chunkElems;
  w.root = call.root;
  w.nChannels = call.nChannels;
  w.postOp = call.postOp;
  w.channel = channel;
  return w;
}

/// Most calls one collective kernel carries: a group's collectives of one kernel and protocol on one
/// stream run as one launch (CTAs of the FIFO algorithms take the calls in order; the one-shot
/// stores every call's words before it waits for any). They travel in the kernel's parameter, so a
/// CUDA graph replays them without any host memory.
constexpr int kMaxBatchCalls = 16;

/// The parameter of the collective kernels of a group's calls, and of the FIFO algorithms' kernels
/// of one call.
struct CollKernelArgs {
  KernelArgs base;
  int nCalls = 0;
  CallArgs calls[kMaxBatchCalls];
};

/// The parameter of a one-shot kernel of one call: a small parameter, read at the kernel's start.
struct OneShotKernelArgs {
  KernelArgs base;
  CallArgs call;
};

/// The parameter of a direct kernel (direct.cuh): a one-shot call, plus where each rank sees this
/// rank's input and output, in the regions' order (k: rank (rank + k) % nranks; k = 0 is this rank).
/// Within one process every rank sees the same addresses; across processes a rank sees them where
/// its CUDA IPC mapping of the window holding them lies (core/registrations.h).
struct DirectKernelArgs {
  KernelArgs base;
  CallArgs call;
  uint64_t input[kMaxOneShotRanks];
  uint64_t output[kMaxOneShotRanks];
};

/// Most sends (and most receives) one send/recv kernel carries: a group's messages travel in the
/// kernel's parameter, like a batch of collectives.
constexpr int kMaxP2pOps = 32;

/// The send/recv kernel's parameter: lane 0 sends, lane 1 receives; offsets and counts in bytes
/// from call.input (sends) and call.output (receives).
struct P2pKernelArgs {
  KernelArgs base;
  CallArgs call;
  int nSends = 0;
  int nRecvs = 0;
  algo::P2pOp sends[kMaxP2pOps];
  algo::P2pOp recvs[kMaxP2pOps];
};

/// Which kernel: the collective and the algorithm (algo/algorithm_table.def's rows, in order),
/// point-to-point, or a one-shot collective.
enum class KernelKind : int {
#define BRAID_IMPL(coll, algo, kind, kernel, call) kind,
#include "algo/algorithm_table.def"
  kSendRecv,
  kAllReduceOneShot,  // the one-shot kernels run LL only (kernels_oneshot.cu)
  kAllGatherOneShot,
  kReduceScatterOneShot,
  kBroadcastOneShot,
  kReduceOneShot,
  kNumKinds
};

/// The most threads a CTA of kernel `kind` may have, as its __launch_bounds__ says: 1024 for the
/// kernels of several lanes (tree, double binary tree, send/recv), 512 for the others. A bound of
/// 1024 caps a thread at 64 registers, and the data loops then spill; 512 allows 128.
BRAID_HOST_DEVICE constexpr int maxBlockThreads(KernelKind kind) {
  return kind == KernelKind::kAllReduceTree || kind == KernelKind::kAllReduceDoubleTree || kind == KernelKind::kSendRecv
             ? kMaxBlockThreads
             : kMaxBlockThreads / 2;
}

/// Launches collective kernel `kind` with protocol `proto` (the one-shot kernels: LL only):
/// `channels` CTAs of nLanes x laneThreads threads on `stream` (a cudaStream_t). A one-shot launch
/// of one call runs the one-call kernel (its parameter: that call alone), named as kernelName(kind,
/// proto, 1) says. Returns the cudaError_t of the launch.
int launchCollKernel(KernelKind kind, Proto proto, int channels, const CollKernelArgs& args, void* stream);
/// The same for the send/recv kernel (two lanes).
int launchP2pKernel(Proto proto, int channels, const P2pKernelArgs& args, void* stream);

/// dst[i] = src[i] x scalar for i < n elements of braidDataType_t `type` (the host's prod rules,
/// exec/host_reduce.h), on `stream`: the scalar is `*deviceScalar` read as the kernel runs, or
/// `value` (its bytes) where deviceScalar is null. Returns the cudaError_t of the launch.
int launchPremultiply(void* dst, const void* src, size_t n, int type, uint64_t value, const void* deviceScalar,
                      void* stream);

/// Launches the direct kernel of collective `coll` (an algo::Coll; direct.cuh; all-reduce, all-gather,
/// reduce-scatter, broadcast, reduce): `channels` CTAs (at most kMaxDirectCtas) of
/// args.base.laneThreads threads, every peer's buffers reached by their addresses. Returns the
/// cudaError_t of the launch.
int launchDirectKernel(int coll, int channels, const DirectKernelArgs& args, void* stream);
/// The direct kernel's name ("braid_AllGather_Direct").
const char* directKernelName(int coll);

/// The pre-multiplication kernels (premul.cu), one per type, for loadKernels.
const void* const* premultiplyKernels(int* count);

/// Loads every kernel into the current device's context now. Under CUDA's lazy loading (the default)
/// a kernel's first launch loads it, and loading may wait for the kernels already running: a kernel
/// spinning on a peer whose own launch waits behind that load would never finish (ranks sharing a
/// GPU, or one thread driving several). Then raises the device's per-thread stack limit to the most
/// local memory any kernel uses: launching a kernel that needs more than the limit makes the driver
/// grow the device's local memory, which waits until the device is idle, and a rank's kernel waiting
/// for a peer whose launch this thread has not made yet never goes idle (a group test with one
/// thread driving two ranks hung there). Returns the cudaError_t; `*localBytes` gets that most.
int loadKernels(size_t* localBytes);

/// The kernel's name as profilers show it: "braid_AllReduce_Ring_LL". One-shot kinds have a kernel
/// for one call and one for a group's (nCalls > 1).
const char* kernelName(KernelKind kind, Proto proto, int nCalls = 1);

}  // namespace braid::device

namespace braid::device {

/// A kernel's host-side handle and name.
struct KernelRef {
  const void* fn;
  const char* name;
};

/// The translation units a protocol's kernels are compiled in (kernels.cuh).
constexpr int kKernelParts = 4;
/// Writes the entries of protocol P's kernels compiled in unit `Part` into `table`, which is in
/// KernelKind order up to kSendRecv; the other entries are left as they are (kernels.cuh).
template <Proto P, int Part>
void fillKernels(KernelRef* table);
// Each unit defines its fillKernels as an explicit specialization; the language asks that every
// unit calling one sees it declared.
#define BRAID_KERNEL_PARTS(P)                \
  template <>                                \
  void fillKernels<P, 0>(KernelRef * table); \
  template <>                                \
  void fillKernels<P, 1>(KernelRef * table); \
  template <>                                \
  void fillKernels<P, 2>(KernelRef * table); \
  template <>                                \
  void fillKernels<P, 3>(KernelRef * table);
BRAID_KERNEL_PARTS(Proto::kSimple)
BRAID_KERNEL_PARTS(Proto::kLL)
BRAID_KERNEL_PARTS(Proto::kLL128)
#undef BRAID_KERNEL_PARTS
static_assert(kKernelParts == 4, "a declaration per part above");
/// A one-shot kernel, kind >= kAllReduceOneShot (kernels_oneshot.cu): of one call, or of a group's calls.
const KernelRef& kernelOneShot(KernelKind kind, bool group);
/// The direct kernel of a collective (kernels_direct.cu), by its algo::Coll.
const KernelRef& kernelDirect(int coll);

}  // namespace braid::device

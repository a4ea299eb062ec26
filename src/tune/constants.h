// The cost model's constants, each with its source. Latencies in microseconds, bandwidths in GB/s
// (each direction). "Measured" figures come from our machines (bench/NOTES.md and
// ../shared/PERFORMANCE.md); "estimate" marks a number not measured yet, to be replaced by a fit
// of braid-perf results.
#pragma once

namespace braid::tune {

struct Constant {
  double value;
  const char* source;
};

// GPU communicators.
constexpr Constant kGpuLaunchUs = {4.5, "measured: an empty kernel per launch back to back, H200 (PERFORMANCE.md)"};
constexpr Constant kLlHopFactor = {1.0, "LL: one store carries data and flag; a hop costs the link's one-way latency"};
constexpr Constant kLl128HopFactor = {
    11.5,
    "measured (2 x H200, ring all-reduce forced to each protocol, after the LL128 loop rewrite): LL128 took 19.5 us "
    "at 4 KB where Simple took 17.8 and LL 13.5, so an LL128 hop costs at least a Simple one (0.69 x 11.5 = 7.9 us "
    "against 0.69 x 2 + 6.3 = 7.7); between 64 KB and 1 MB LL128 beat Simple but LL beat it (bench/NOTES.md)"};
constexpr Constant kSimpleHopFactor = {2.0,
                                       "measured: the head/tail handshake is a flag round trip, 1.38 us over NVLink "
                                       "= 2 x the 0.69 us one-way flag (PERFORMANCE.md)"};
constexpr Constant kSimpleHopExtraUs = {
    6.3,
    "measured: a 2-rank 8 KB all-reduce by recursive doubling on Simple (one exchange) took 12.7 us in a CUDA graph "
    "where the one-shot (one LL hop) took 5.0 us: each Simple step waits on head and tail counters and fences "
    "(bench/NOTES.md)"};
constexpr Constant kLlEfficiency = {
    0.1,
    "measured: braid's LL ring all-reduce of 4 MB on 30 channels moved 48 GB/s on 2 x "
    "H200, a tenth of Simple's per-channel rate (16 GB/s); half of each 16-byte store is "
    "flags and every line is polled (bench/NOTES.md)"};
constexpr Constant kOneShotEfficiency = {
    0.17,
    "measured: one-shot all-reduce on 64 CTAs in a CUDA graph on 2 x H200, 2 MB 18.7 us and 4 MB 33.1 us: "
    "~150 GB/s of data, 0.15-0.18 of 64 x 16 GB/s; half of every 16-byte line is flags (bench/NOTES.md)"};
constexpr Constant kLl128Efficiency = {
    0.4,
    "measured (2 x H200, CUDA graph, each algorithm forced): where LL128 competes, its rate is far below its 1 GB one "
    "(317 GB/s, 0.92 of Simple's): ring all-reduce 2 MB 21.1 us and 8 MB 50.4 against the one-shot's 19.1 and "
    "ring/Simple's 44.9; all-gather, reduce-scatter and broadcast alike. 0.4 keeps it from those sizes, where it "
    "lost, and leaves it to machines whose Simple hops cost more (bench/NOTES.md)"};
constexpr Constant kSimpleEfficiency = {1.0, "Simple: whole slots of data"};
constexpr Constant kGpuReduceGBs = {2800.0,
                                    "measured: a local HBM copy moves 4,240 GB/s read + write (PERFORMANCE.md); a "
                                    "reduce reads two operands for each one written: ~2/3 of that"};
constexpr Constant kTreeBandwidthFactor = {0.7,
                                           "estimate: a tree rank drives three peers with separate up and down "
                                           "lanes and pipelines less evenly than a ring (NCCL also derates trees)"};
constexpr Constant kDoublingBandwidthFactor = {
    0.7,
    "measured (2 x H200, CUDA graph): all-reduce by recursive doubling on Simple (30 channels) took 50.8 us at 8 MB "
    "where the ring on 32 took 44.9, and 30.1 against 29.0 at 2 MB (bench/NOTES.md)"};
constexpr Constant kCeGBs = {
    370.0,
    "measured (probe, 2 x H200): 256 MB all-reduce with copy-engine chunks feeding a 16-CTA reduce kernel, 371 GB/s "
    "busbw; the copy engines alone 397 GB/s one way (PERFORMANCE.md)"};
constexpr Constant kCeCtaGBs = {40.0,
                                "measured (probe, 2 x H200): the same with an 8-CTA reduce kernel, 323 GB/s: about 40 "
                                "per reducing CTA"};
constexpr Constant kCeCallUs = {
    15.0,
    "estimate: a call's stream operations (fork, a copy and two words per chunk and peer, join, a memset) and the "
    "first chunk's copy before any reduction"};
constexpr Constant kCeDefaultCtas = {16.0, "measured (probe, 2 x H200): 16 reducing CTAs reach the copy engines' rate"};
constexpr Constant kNvlinkRingChannels = {
    64.0,
    "measured: ring/Simple on 2 x H200 NVLink, 512 MB, 30 -> 48 -> 64 CTAs: broadcast 303 -> 331 -> 349 GB/s, "
    "all-reduce 304 -> 332 -> 349 GB/s (bench/NOTES.md)"};
// Bytes a channel should carry before another channel pays for itself, per protocol.
constexpr Constant kLlBytesPerChannel = {16 * 1024.0, "estimate: LL channels are worth it from 16 KB each"};
constexpr Constant kOneShotBytesPerChannel = {
    2 * 1024.0,
    "measured: one-shot all-reduce in a CUDA graph on 2 x H200 with 2 KB per channel against 8 KB: 8 KB 5.63 us on "
    "4 CTAs against 6.82 on 1, 32 KB 5.23 on 16 against 6.54 on 4, 128 KB 5.44 on 64 against 6.61 on 16 "
    "(bench/NOTES.md)"};
constexpr Constant kLl128BytesPerChannel = {
    16 * 1024.0,
    "measured: ring all-reduce, 2 x H200, one channel: 16 KB 22.2 us, 64 KB 33.1 us; at 64 KB a channel from 64 KB to "
    "1 MB stayed at 33-35 us, so a channel's time is its bytes' (a warp's step covers 16 lines; 2 ranks' 32 KB blocks "
    "take two rounds of loads, 8 KB blocks one)"};
constexpr Constant kSimpleBytesPerChannel = {256 * 1024.0, "estimate"};

// Host-memory communicators (one protocol: FIFO slots, like Simple).
constexpr Constant kHostCallUs = {0.21, "measured: braid-perf all-reduce of 1 rank, 8 B, dev VM (bench/NOTES.md)"};
constexpr Constant kHostShmHopUs = {0.36,
                                    "measured: 2-process 8 B recursive doubling (one exchange) 0.57 us minus the call, "
                                    "dev VM, shared memory"};
constexpr Constant kHostSocketHopUs = {
    16.0,
    "measured: 8 B all-reduce between 2 namespaced hosts (one exchange) 15.9-16.8 us "
    "over the built-in socket network, dev VM, once a rank sends its next message before "
    "reading the peer's (bench/NOTES.md, twenty-ninth session; 25 us before)"};
constexpr Constant kHostShmChannelGBs = {6.0, "measured: 2-process all-reduce busbw 6-10 GB/s at 512 KB-8 MB, dev VM"};
constexpr Constant kHostReduceGBs = {20.0,
                                     "fitted: the measured 2-process crossover from recursive doubling to the ring "
                                     "lies between 8 and 32 KB (bench/NOTES.md); the model puts it at 720 B x this"};
constexpr Constant kHostSocketChannelGBs = {1.0, "measured: 2-process 128 MB all-reduce over sockets ~0.96 GB/s"};
constexpr Constant kHostNetGBs = {1.6,
                                  "measured: TCP between two network namespaces over a veth, 1.62 GB/s each way, dev "
                                  "VM (bench/NOTES.md); a host's network where the net layer gives no speed"};

}  // namespace braid::tune

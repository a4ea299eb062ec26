// The Prims contract: what an algorithm may do, and what every backend must provide.
//
// An algorithm is a function template over a Backend. It opens a Prims for a peer pattern (ranks it
// receives from, ranks it sends to, and a connection id) and calls operations on it in program
// order. Offsets and counts are in elements; `in` indexes the call's input buffer, `out` its output
// buffer. One operation moves at most WorkArgs::chunkElems elements and takes one FIFO slot on each
// connection it uses. Receives take from every recv peer; sends go to every send peer.
//
//   op                                  reads                           writes
//   send(in, n)                         input                           send peers
//   copySend(in, out, n)                input                           output, send peers
//   recv(out, n)                        recv peer (exactly one)         output
//   recvCopySend(out, n)                recv peer (exactly one)         output, send peers
//   recvReduceSend(in, n)               recv peers + input              send peers
//   recvReduceCopy(in, out, n, post)    recv peers + input              output
//   recvReduceCopySend(in, out, n, post) recv peers + input             output, send peers
//   copy(in, out, n, post)              input                           output           (no peers)
//   sendOutput(out, n)                  output                          send peers
//   recvReduceOutput(out, n, post)      recv peers + output             output (accumulates)
//   recvReduceSendOutput(out, n)        recv peers + output             send peers
//   recvReduceOutputSend(out, n, post)  recv peers + output             output (accumulates), send peers
//   recvReplaceSend(out, n)             recv peer (exactly one)         output (replaces), send peers
//   recvReplace(out, n)                 recv peer (exactly one)         output (replaces)
//
// The last six let an algorithm keep a partial result in the output and work on it (recursive
// doubling; the hierarchical all-reduce's step across hosts): the accumulating and replacing
// operations overwrite output written before, the only ones allowed to. (On real data a replace
// moves what recvCopySend or recv does; only the proofs tell them apart.)
//
// `post` applies the op's post-operation (avg: divide by nranks) to the value written to output:
// exactly once, where a value becomes final. An operation with n == 0 still takes its slot, so
// both ends of a connection always agree on the number of steps.
//
// Backends:
//   SymbolicPrims (algo/sim)   records the operations; the simulator proves the result
//   TracePrims    (algo/sim)   records the operations; the simulator counts steps and bytes
//   HostPrims     (exec/host)  moves real data through host FIFOs
//   DevicePrims   (device/)    one lane of one channel's CTA on the GPU
//
// A Backend provides:
//   Prims open(const int* recvPeers, int nRecv, const int* sendPeers, int nSend, int connId);
//   Prims open(const int* recvPeers, const int* recvConns, int nRecv, const int* sendPeers, int nSend,
//              int connId);
// which copy the peer lists (algorithms pass addresses of locals). The second gives each receive a
// connection id of its own (the hierarchical reduce's rail member receives from its host's chain
// and from the rail, two levels); sends use connId.
#pragma once

#include "algo/common.h"

namespace braid::algo {

constexpr int kMaxPeers = 2;  // binary trees: at most two children

}  // namespace braid::algo

// Recorder: the Backend used by SymbolicPrims and TracePrims. Algorithms are data-oblivious (what
// they do never depends on the values), so running a program once with a Prims that only writes
// its operations down yields the program; the simulator then executes all ranks' programs together.
#pragma once

#include <vector>

#include "algo/prims.h"

namespace braid::algo {

enum class OpKind : int {
  kSend,
  kCopySend,
  kRecv,
  kRecvCopySend,
  kRecvReduceSend,
  kRecvReduceCopy,
  kRecvReduceCopySend,
  kCopy,
  kSendOutput,
  kRecvReduceOutput,
  kRecvReduceSendOutput,
  kRecvReduceOutputSend,
  kRecvReplaceSend,
  kRecvReplace
};

const char* opKindName(OpKind kind);

struct Op {
  OpKind kind;
  int recvPeers[kMaxPeers];
  int nRecv;
  int sendPeers[kMaxPeers];
  int nSend;
  int conn;                  // the sends' connection id
  int recvConns[kMaxPeers];  // each receive's
  size_t in;
  size_t out;
  size_t n;
  bool post;

  bool readsInput() const {
    return kind == OpKind::kSend || kind == OpKind::kCopySend || kind == OpKind::kCopy || reduces();
  }
  bool reduces() const {
    return kind == OpKind::kRecvReduceSend || kind == OpKind::kRecvReduceCopy || kind == OpKind::kRecvReduceCopySend;
  }
  bool readsOutput() const { return kind == OpKind::kSendOutput || combinesOutput(); }
  // Reduces what it receives with the output.
  bool combinesOutput() const {
    return kind == OpKind::kRecvReduceOutput || kind == OpKind::kRecvReduceSendOutput ||
           kind == OpKind::kRecvReduceOutputSend;
  }
  // Writes output over what was there (the others may write an element once).
  bool replacesOutput() const {
    return kind == OpKind::kRecvReduceOutput || kind == OpKind::kRecvReduceOutputSend ||
           kind == OpKind::kRecvReplaceSend || kind == OpKind::kRecvReplace;
  }
  bool writesOutput() const {
    return kind == OpKind::kCopySend || kind == OpKind::kRecv || kind == OpKind::kRecvCopySend ||
           kind == OpKind::kRecvReduceCopy || kind == OpKind::kRecvReduceCopySend || kind == OpKind::kCopy ||
           replacesOutput();
  }
  bool receives() const {
    return kind != OpKind::kSend && kind != OpKind::kCopySend && kind != OpKind::kCopy && kind != OpKind::kSendOutput;
  }
  bool sends() const {
    return kind == OpKind::kSend || kind == OpKind::kCopySend || kind == OpKind::kRecvCopySend ||
           kind == OpKind::kRecvReduceSend || kind == OpKind::kRecvReduceCopySend || kind == OpKind::kSendOutput ||
           kind == OpKind::kRecvReduceSendOutput || kind == OpKind::kRecvReduceOutputSend ||
           kind == OpKind::kRecvReplaceSend;
  }
};

class Recorder {
 public:
  class Prims {
   public:
    Prims(std::vector<Op>* ops, const int* recv, const int* recvConns, int nRecv, const int* send, int nSend, int conn)
        : ops_(ops), nRecv_(nRecv), nSend_(nSend), conn_(conn) {
      for (int i = 0; i < nRecv; ++i) recv_[i] = recv[i], recvConns_[i] = recvConns != nullptr ? recvConns[i] : conn;
      for (int i = 0; i < nSend; ++i) send_[i] = send[i];
    }
    void send(size_t in, size_t n) { push(OpKind::kSend, in, 0, n, false); }
    void copySend(size_t in, size_t out, size_t n) { push(OpKind::kCopySend, in, out, n, false); }
    void recv(size_t out, size_t n) { push(OpKind::kRecv, 0, out, n, false); }
    void recvCopySend(size_t out, size_t n) { push(OpKind::kRecvCopySend, 0, out, n, false); }
    void recvReduceSend(size_t in, size_t n) { push(OpKind::kRecvReduceSend, in, 0, n, false); }
    void recvReduceCopy(size_t in, size_t out, size_t n, bool post) { push(OpKind::kRecvReduceCopy, in, out, n, post); }
    void recvReduceCopySend(size_t in, size_t out, size_t n, bool post) {
      push(OpKind::kRecvReduceCopySend, in, out, n, post);
    }
    void copy(size_t in, size_t out, size_t n, bool post) { push(OpKind::kCopy, in, out, n, post); }
    void sendOutput(size_t out, size_t n) { push(OpKind::kSendOutput, 0, out, n, false); }
    void recvReduceOutput(size_t out, size_t n, bool post) { push(OpKind::kRecvReduceOutput, 0, out, n, post); }
    void recvReduceSendOutput(size_t out, size_t n) { push(OpKind::kRecvReduceSendOutput, 0, out, n, false); }
    void recvReduceOutputSend(size_t out, size_t n, bool post) { push(OpKind::kRecvReduceOutputSend, 0, out, n, post); }
    void recvReplaceSend(size_t out, size_t n) { push(OpKind::kRecvReplaceSend, 0, out, n, false); }
    void recvReplace(size_t out, size_t n) { push(OpKind::kRecvReplace, 0, out, n, false); }

   private:
    void push(OpKind kind, size_t in, size_t out, size_t n, bool post) {
      Op op{kind, {-1, -1}, nRecv_, {-1, -1}, nSend_, conn_, {conn_, conn_}, in, out, n, post};
      for (int i = 0; i < nRecv_; ++i) op.recvPeers[i] = recv_[i], op.recvConns[i] = recvConns_[i];
      for (int i = 0; i < nSend_; ++i) op.sendPeers[i] = send_[i];
      ops_->push_back(op);
    }
    std::vector<Op>* ops_;
    int recv_[kMaxPeers] = {-1, -1};
    int recvConns_[kMaxPeers] = {-1, -1};
    int nRecv_;
    int send_[kMaxPeers] = {-1, -1};
    int nSend_;
    int conn_;
  };

  Prims open(const int* recvPeers, int nRecv, const int* sendPeers, int nSend, int connId) {
    return Prims(&ops, recvPeers, nullptr, nRecv, sendPeers, nSend, connId);
  }
  Prims open(const int* recvPeers, const int* recvConns, int nRecv, const int* sendPeers, int nSend, int connId) {
    return Prims(&ops, recvPeers, recvConns, nRecv, sendPeers, nSend, connId);
  }

  std::vector<Op> ops;
};

}  // namespace braid::algo

#include "algo/simulator.h"

namespace braid::algo {

const char* opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kSend: return "send";
    case OpKind::kCopySend: return "copySend";
    case OpKind::kRecv: return "recv";
    case OpKind::kRecvCopySend: return "recvCopySend";
    case OpKind::kRecvReduceSend: return "recvReduceSend";
    case OpKind::kSendOutput: return "sendOutput";
    case OpKind::kRecvReduceOutput: return "recvReduceOutput";
    case OpKind::kRecvReduceCopy: return "recvReduceCopy";
    case OpKind::kRecvReduceCopySend: return "recvReduceCopySend";
    case OpKind::kCopy: return "copy";
    case OpKind::kRecvReduceSendOutput: return "recvReduceSendOutput";
    case OpKind::kRecvReduceOutputSend: return "recvReduceOutputSend";
    case OpKind::kRecvReplaceSend: return "recvReplaceSend";
    case OpKind::kRecvReplace: return "recvReplace";
  }
  return "?";
}

std::vector<Program> recordCall(const Geometry& g, const CallShape& call) {
  std::vector<Program> programs;
  int n = static_cast<int>(g.ringOrder.size());
  for (int rank = 0; rank < n; ++rank) {
    for (int ch = 0; ch < call.nChannels; ++ch) {
      WorkArgs w = workFor(g, rank, ch, call);
      for (int lane = 0; lane < numLanes(call.algo); ++lane) {
        Recorder rec;
        runLane(rec, call.coll, call.algo, w, lane);
        if (!rec.ops.empty()) programs.push_back(Program{rank, ch, lane, std::move(rec.ops)});
      }
    }
  }
  return programs;
}

}  // namespace braid::algo

#include "exec/p2p_self.h"

#include <string>

namespace braid::exec {
namespace {

// The messages of `ops` that involve `rank`, removed from it in order.
std::vector<algo::P2pOp> takeOwn(int rank, std::vector<algo::P2pOp>* ops) {
  std::vector<algo::P2pOp> own, others;
  for (const algo::P2pOp& op : *ops) (op.peer == rank ? own : others).push_back(op);
  ops->swap(others);
  return own;
}

}  // namespace

Status takeSelfCopies(int rank, std::vector<algo::P2pOp>* sends, std::vector<algo::P2pOp>* recvs,
                      std::vector<SelfCopy>* copies) {
  std::vector<algo::P2pOp> out = takeOwn(rank, sends), in = takeOwn(rank, recvs);
  if (out.size() != in.size()) {
    return invalidUsage("rank " + std::to_string(rank) + " sends " + std::to_string(out.size()) +
                        " message(s) to itself in this group but receives " + std::to_string(in.size()));
  }
  copies->clear();
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k].count != in[k].count) {
      return invalidUsage("rank " + std::to_string(rank) + "'s message " + std::to_string(k) +
                          " to itself: " + std::to_string(out[k].count) + " bytes sent but " +
                          std::to_string(in[k].count) + " received (a different amount of data)");
    }
    copies->push_back({out[k].offset, in[k].offset, out[k].count});
  }
  return Status::ok();
}

}  // namespace braid::exec

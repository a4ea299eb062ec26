#include "algo/p2p.h"

#include <algorithm>

namespace braid::algo {

void orderP2p(int rank, int nranks, std::vector<P2pOp>* sends, std::vector<P2pOp>* recvs) {
  std::stable_sort(sends->begin(), sends->end(), [&](const P2pOp& a, const P2pOp& b) {
    return wrap(a.peer - rank, nranks) < wrap(b.peer - rank, nranks);
  });
  std::stable_sort(recvs->begin(), recvs->end(), [&](const P2pOp& a, const P2pOp& b) {
    return wrap(rank - a.peer, nranks) < wrap(rank - b.peer, nranks);
  });
}

}  // namespace braid::algo

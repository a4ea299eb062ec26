// Binary trees over ring positions, and the double binary tree.
//
// Positions 1..N (N = nranks) form the in-order binary tree of their lowest set bits: node x with
// lowest bit L has children x - L/2 and x + L/2 (leaves are the odd positions, the root the largest
// power of two <= N). Where x + L/2 > N the right child is the largest-lowbit node left in (x, N].
// Depth: floor(log2 N) edges, so a pipelined up-and-down all-reduce takes 2 floor(log2 N) steps.
//
//   N = 6 (1-based positions):        its mirror (x -> N+1-x):
//
//              4                                 3
//           +--+--+                          +---+---+
//           2     6                          5       1
//          +-+   +                          +-+      +
//          1 3   5                          6 4      2
//
// The double binary tree pairs this tree with a second one in which every interior node of the
// first is a leaf: the mirror for even N (odd and even positions swap), a shift by one for odd N
// (one rank is a leaf in both: N odd has more leaves than interior nodes). Each tree carries half of
// the data, so no rank forwards more than one tree's share.
//
// Positions map to ranks through the ring order, so trees follow the topology's locality.
#pragma once

#include <vector>

#include "algo/work.h"

namespace braid::algo {

/// Parent and children of every position 0..n-1 (0-based; -1 for none) of the in-order tree.
struct PositionTree {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
  int root = 0;
};

PositionTree buildInOrderTree(int n);

/// Tree t (0 or 1) of the double binary tree, over positions 0..n-1.
PositionTree buildDoubleTree(int n, int t);

/// Tree t (0 or 1) of the cross-host double tree, over ring positions 0..n-1: each host's ranks a
/// chain (`hosts[h]`: host h's positions in chain order; tree 1 runs every chain the other way), the
/// chains' heads joined by tree t of the double binary tree over the hosts. A host's first child
/// host hangs from its head, its second from the chain's second rank (from the head, where the
/// host has one rank), so that no rank has more than two children.
///
///   3 hosts a, b, c of 3 ranks, tree 0 (the tree over hosts: b over a and c):
///
///     b0 -+- b1 -+- b2            b0: the root; its children b1 and a0 (a: b's first child host)
///         |      +- c0 - c1 - c2  b1: children b2 and c0 (c: b's second child host)
///         +- a0 - a1 - a2
///
/// NCCL's tree hangs both child hosts from the head (three children); here the second child's
/// sums take one more hop (b1 -> b0), and no rank receives from more than two.
PositionTree buildCrossHostTree(const std::vector<std::vector<int>>& hosts, int n, int which);

/// This rank's TreeView, mapping positions to ranks through `ringOrder`.
TreeView treeViewFor(const PositionTree& tree, const std::vector<int>& ringOrder, int rank);

/// Edges from the deepest leaf to the root.
int treeDepth(const PositionTree& tree);

}  // namespace braid::algo

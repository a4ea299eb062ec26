#include "algo/tree_builder.h"

#include <algorithm>

namespace braid::algo {
namespace {

int lowbit(int x) { return x & -x; }

// Parent of 1-based position x in the infinite in-order tree, then walked up past absent nodes.
int parentOf(int x, int n) {
  int root = 1;
  while (root * 2 <= n) root *= 2;
  if (x == root) return 0;
  int p = x;
  do {
    int l = lowbit(p);
    p = ((p / (2 * l)) % 2 == 0) ? p + l : p - l;
  } while (p > n);
  return p;
}

}  // namespace

PositionTree buildInOrderTree(int n) {
  PositionTree t;
  t.parent.assign(n, -1);
  t.children.assign(n, {});
  for (int x = 1; x <= n; ++x) {
    int p = parentOf(x, n);
    if (p == 0) {
      t.root = x - 1;
      continue;
    }
    t.parent[x - 1] = p - 1;
    t.children[p - 1].push_back(x - 1);
  }
  for (auto& c : t.children) std::sort(c.begin(), c.end());
  return t;
}

PositionTree buildDoubleTree(int n, int which) {
  PositionTree base = buildInOrderTree(n);
  if (which == 0) return base;
  // Tree 1 renames base's positions: the node at base position x sits at position map(x).
  auto map = [n](int x) { return n % 2 == 0 ? n - 1 - x : (x + 1) % n; };
  PositionTree t;
  t.parent.assign(n, -1);
  t.children.assign(n, {});
  t.root = map(base.root);
  for (int x = 0; x < n; ++x) {
    if (base.parent[x] >= 0) t.parent[map(x)] = map(base.parent[x]);
    for (int c : base.children[x]) t.children[map(x)].push_back(map(c));
  }
  for (auto& c : t.children) std::sort(c.begin(), c.end());
  return t;
}

PositionTree buildCrossHostTree(const std::vector<std::vector<int>>& hosts, int n, int which) {
  const int nHosts = static_cast<int>(hosts.size());
  const PositionTree over = buildDoubleTree(nHosts, which);
  // Host h's chain, tree 1's reversed.
  auto chain = [&](int h, int i) {
    const std::vector<int>& c = hosts[h];
    return which == 0 ? c[i] : c[c.size() - 1 - i];
  };
  PositionTree t;
  t.parent.assign(n, -1);
  t.children.assign(n, {});
  auto join = [&](int parent, int child) {
    t.parent[child] = parent;
    t.children[parent].push_back(child);
  };
  for (int h = 0; h < nHosts; ++h) {
    const int k = static_cast<int>(hosts[h].size());
    for (int i = 1; i < k; ++i) join(chain(h, i - 1), chain(h, i));
    for (size_t c = 0; c < over.children[h].size(); ++c) {
      join(chain(h, c == 0 || k == 1 ? 0 : 1), chain(over.children[h][c], 0));
    }
  }
  t.root = chain(over.root, 0);
  for (auto& c : t.children) std::sort(c.begin(), c.end());
  return t;
}

TreeView treeViewFor(const PositionTree& tree, const std::vector<int>& ringOrder, int rank) {
  int pos = static_cast<int>(std::find(ringOrder.begin(), ringOrder.end(), rank) - ringOrder.begin());
  TreeView v;
  v.parent = tree.parent[pos] >= 0 ? ringOrder[tree.parent[pos]] : -1;
  v.nChildren = static_cast<int>(tree.children[pos].size());
  for (int i = 0; i < v.nChildren; ++i) v.children[i] = ringOrder[tree.children[pos][i]];
  return v;
}

int treeDepth(const PositionTree& tree) {
  int depth = 0;
  for (size_t x = 0; x < tree.parent.size(); ++x) {
    int d = 0;
    for (int p = static_cast<int>(x); tree.parent[p] >= 0; p = tree.parent[p]) ++d;
    depth = std::max(depth, d);
  }
  return depth;
}

}  // namespace braid::algo

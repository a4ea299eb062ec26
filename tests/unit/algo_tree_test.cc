// Tree shapes: every rank appears once, parents and children agree, depth is floor(log2 n), and the
// two trees of the double binary tree have complementary roles.
#include <gtest/gtest.h>

#include <cmath>

#include "algo/geometry.h"

namespace braid::algo {
namespace {

void checkTree(const PositionTree& t, int n) {
  ASSERT_EQ(static_cast<int>(t.parent.size()), n);
  int roots = 0;
  std::vector<int> seenAsChild(n, 0);
  for (int x = 0; x < n; ++x) {
    if (t.parent[x] < 0) {
      ++roots;
      EXPECT_EQ(t.root, x);
    }
    EXPECT_LE(t.children[x].size(), 2u) << "node " << x;
    for (int c : t.children[x]) {
      ASSERT_TRUE(c >= 0 && c < n);
      EXPECT_EQ(t.parent[c], x) << "child " << c << " of " << x;
      ++seenAsChild[c];
    }
  }
  EXPECT_EQ(roots, 1);
  for (int x = 0; x < n; ++x) EXPECT_EQ(seenAsChild[x], x == t.root ? 0 : 1) << "node " << x;
  // Every node reaches the root (no cycles).
  for (int x = 0; x < n; ++x) {
    int p = x, hops = 0;
    while (t.parent[p] >= 0 && hops <= n) p = t.parent[p], ++hops;
    EXPECT_EQ(p, t.root);
  }
}

class Trees : public ::testing::TestWithParam<int> {};

TEST_P(Trees, ValidDepthAndComplementary) {
  const int n = GetParam();
  PositionTree t0 = buildDoubleTree(n, 0), t1 = buildDoubleTree(n, 1);
  checkTree(t0, n);
  checkTree(t1, n);
  int floorLog = 0;
  while ((2 << floorLog) <= n) ++floorLog;
  EXPECT_EQ(treeDepth(t0), floorLog);
  EXPECT_LE(treeDepth(t0), static_cast<int>(std::ceil(std::log2(std::max(n, 1)))));
  int bothLeaves = 0;
  for (int x = 0; x < n; ++x) {
    bool interior0 = !t0.children[x].empty(), interior1 = !t1.children[x].empty();
    EXPECT_FALSE(interior0 && interior1) << "position " << x << " forwards in both trees";
    bothLeaves += !interior0 && !interior1;
  }
  // Even n: every rank forwards in exactly one tree. Odd n > 1: there is one more leaf than
  // interior node per tree, so exactly one rank (position 0) is a leaf in both.
  int expectBothLeaves = (n % 2 == 1 && n > 1) ? 1 : (n == 1 ? 1 : 0);
  EXPECT_EQ(bothLeaves, expectBothLeaves);
}

INSTANTIATE_TEST_SUITE_P(Ranks1To64, Trees, ::testing::Range(1, 65));

TEST(Trees, SixNodesMatchTheDiagram) {
  PositionTree t = buildInOrderTree(6);  // 1-based: 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5}
  EXPECT_EQ(t.root, 3);
  EXPECT_EQ(t.children[3], (std::vector<int>{1, 5}));
  EXPECT_EQ(t.children[1], (std::vector<int>{0, 2}));
  EXPECT_EQ(t.children[5], (std::vector<int>{4}));
}

TEST(Trees, ViewsMapPositionsThroughTheRing) {
  Geometry g = makeGeometry({5, 4, 3, 2, 1, 0});  // position p holds rank 5 - p
  WorkArgs w = workFor(g, 2, 0, CallShape{});     // rank 2 sits at position 3: the root
  EXPECT_EQ(w.trees[0].parent, -1);
  EXPECT_EQ(w.trees[0].nChildren, 2);
  EXPECT_EQ(w.trees[0].children[0], 4);  // position 1
  EXPECT_EQ(w.trees[0].children[1], 0);  // position 5
  EXPECT_EQ(w.ring.pos, 3);
  EXPECT_EQ(w.ring.next(), 1);
  EXPECT_EQ(w.ring.prev(), 3);
}

}  // namespace
}  // namespace braid::algo

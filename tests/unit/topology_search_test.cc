// Ring search on the fixtures: every ring visits every rank once, the channel counts follow from
// the link bandwidths (one channel moves at most kChannelBandwidth), rings between hosts cross the
// network exactly twice and leave through different NICs, and a machine without usable paths still
// gets one valid ring.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "algo/tree_builder.h"
#include "topology/search.h"
#include "topology/topo_xml.h"

namespace braid::topology {
namespace {

SearchResult searchFixture(const std::string& name, int maxChannels = 32) {
  System s;
  Status st = readTopologyFile(std::string(BRAID_SOURCE_DIR) + "/tests/fixtures/" + name, &s);
  EXPECT_TRUE(st.isOk()) << st.message();
  SearchResult r;
  st = searchRings(s, oneRankPerGpu(s), maxChannels, &r);
  EXPECT_TRUE(st.isOk()) << st.message();
  return r;
}

void expectPermutations(const SearchResult& r, int n) {
  ASSERT_FALSE(r.rings.empty());
  for (const RingChannel& ring : r.rings) {
    std::vector<int> sorted = ring.ranks;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> all(n);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted, all);
    EXPECT_GT(ring.bandwidth, 0);
    EXPECT_LE(ring.bandwidth, kChannelBandwidth);
  }
}

TEST(TopologySearch, TwoH200sFillTheirEighteenLinks) {
  SearchResult r = searchFixture("h200-2gpu.xml");
  expectPermutations(r, 2);
  // 478 GB/s of NVLink each way in channels of at most kChannelBandwidth: full channels and the
  // remainder.
  EXPECT_EQ(r.rings.size(), static_cast<size_t>(std::ceil(478.08 / kChannelBandwidth)));
  double total = 0;
  for (const RingChannel& ring : r.rings) total += ring.bandwidth;
  EXPECT_NEAR(total, 478.08, 1e-6);
  EXPECT_EQ(r.rings[0].slowest, LinkKind::kNvLink);
  EXPECT_NEAR(r.intraLatencyUs, 0.69, 1e-12);
}

TEST(TopologySearch, NvSwitchNodeRingsFollowDeviceOrder) {
  SearchResult r = searchFixture("nvswitch-8gpu.xml");
  expectPermutations(r, 8);
  // 18 links x 26.56 GB/s of fabric per GPU, kChannelBandwidth per channel
  EXPECT_EQ(r.rings.size(), static_cast<size_t>(std::ceil(478.08 / kChannelBandwidth)));
  EXPECT_EQ(r.rings[0].ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(TopologySearch, PcieBoxIsBoundByTheSocketLink) {
  SearchResult r = searchFixture("pcie-4gpu-2socket.xml");
  expectPermutations(r, 4);
  // The ring crosses the 20.8 GB/s CPU link once each way: its channels share that and no more.
  ASSERT_EQ(r.rings.size(), static_cast<size_t>(std::ceil(20.8 / kChannelBandwidth)));
  double total = 0;
  for (const RingChannel& c : r.rings) total += c.bandwidth;
  EXPECT_NEAR(total, 20.8, 1e-9);
  EXPECT_EQ(r.rings[0].slowest, LinkKind::kCpu);
  // Both GPUs of a socket are neighbours in the ring: it crosses between sockets only twice.
  const std::vector<int>& ring = r.rings[0].ranks;
  int crossings = 0;
  for (size_t i = 0; i < ring.size(); ++i) crossings += (ring[i] < 2) != (ring[(i + 1) % ring.size()] < 2);
  EXPECT_EQ(crossings, 2);
}

TEST(TopologySearch, TwoNodesUseOneNicPerChannel) {
  SearchResult r = searchFixture("nvswitch-2x8gpu.xml");
  expectPermutations(r, 16);
  EXPECT_EQ(r.hosts, 2);
  // Four 400 Gb/s NICs per node, 45 GB/s each, cut into channels of at most kChannelBandwidth.
  const size_t perNic = static_cast<size_t>(std::ceil(45 / kChannelBandwidth));
  ASSERT_EQ(r.rings.size(), 4 * perNic);
  double total = 0;
  for (const RingChannel& ring : r.rings) {
    EXPECT_EQ(ring.slowest, LinkKind::kNet);
    EXPECT_LE(ring.bandwidth, kChannelBandwidth + 1e-9);
    total += ring.bandwidth;
    int crossings = 0;
    for (size_t i = 0; i < ring.ranks.size(); ++i) crossings += (ring.ranks[i] < 8) != (ring.ranks[(i + 1) % 16] < 8);
    EXPECT_EQ(crossings, 2);
  }
  EXPECT_NEAR(total, 4 * 45, 1e-6);
  // The channels of a NIC leave node0 from the pair of GPUs behind it: each pair perNic times.
  std::vector<int> exits, expected;
  for (const RingChannel& ring : r.rings) {
    auto it = std::find_if(ring.ranks.begin(), ring.ranks.end(), [](int x) { return x >= 8; });
    exits.push_back(*(it - 1) / 2);
  }
  for (int pair = 0; pair < 4; ++pair) expected.insert(expected.end(), perNic, pair);
  std::sort(exits.begin(), exits.end());
  EXPECT_EQ(exits, expected);
}

// The trees follow channel 0's ring: over each fixture's ring both trees hold every rank once, and
// no rank is interior in both (for odd n one rank is a leaf in both).
TEST(TopologySearch, TreesOverTheRingAreValidAndComplementary) {
  for (const char* name : {"h200-2gpu.xml", "nvswitch-8gpu.xml", "pcie-4gpu-2socket.xml", "nvswitch-2x8gpu.xml"}) {
    SearchResult r = searchFixture(name);
    const std::vector<int>& ring = r.rings[0].ranks;
    const int n = static_cast<int>(ring.size());
    std::vector<int> interior(n, 0);
    for (int t = 0; t < 2; ++t) {
      algo::PositionTree tree = algo::buildDoubleTree(n, t);
      std::vector<int> seen(n, 0);
      int roots = 0;
      for (int rank = 0; rank < n; ++rank) {
        algo::TreeView v = algo::treeViewFor(tree, ring, rank);
        roots += v.parent < 0;
        interior[rank] += v.nChildren > 0;
        for (int c = 0; c < v.nChildren; ++c) {
          ++seen[v.children[c]];
          EXPECT_EQ(algo::treeViewFor(tree, ring, v.children[c]).parent, rank) << name;
        }
      }
      EXPECT_EQ(roots, 1) << name << " tree " << t;
      for (int rank = 0; rank < n; ++rank) EXPECT_EQ(seen[rank], rank == ring[tree.root] ? 0 : 1) << name;
    }
    for (int rank = 0; rank < n; ++rank) EXPECT_LE(interior[rank], 1) << name << " rank " << rank;
  }
}

TEST(TopologySearch, ChannelLimitIsHonoured) {
  EXPECT_EQ(searchFixture("h200-2gpu.xml", 4).rings.size(), 4u);
  EXPECT_EQ(searchFixture("h200-2gpu.xml", 1).rings.size(), 1u);
}

// GPUs with no path between them at all (a file that lists only GPUs): still one ring.
TEST(TopologySearch, FallbackRingWithoutPaths) {
  System s;
  ASSERT_TRUE(readTopology("<system><host id=\"h\"><gpu id=\"a\" dev=\"0\"/><gpu id=\"b\" dev=\"1\"/>"
                           "<gpu id=\"c\" dev=\"2\"/></host></system>",
                           "inline", &s)
                  .isOk());
  SearchResult r;
  ASSERT_TRUE(searchRings(s, oneRankPerGpu(s), 8, &r).isOk());
  ASSERT_EQ(r.rings.size(), 1u);
  std::vector<int> sorted = r.rings[0].ranks;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2}));
}

TEST(TopologySearch, RanksMustBeOnGpus) {
  System s;
  ASSERT_TRUE(readTopology("<system><host id=\"h\"><cpu id=\"c\"/></host></system>", "inline", &s).isOk());
  SearchResult r;
  EXPECT_FALSE(searchRings(s, {RankPlace{0, 0}}, 1, &r).isOk());
  EXPECT_FALSE(searchRings(s, {RankPlace{3, -1}}, 1, &r).isOk());
  EXPECT_FALSE(searchRings(s, {}, 1, &r).isOk());
}

}  // namespace
}  // namespace braid::topology

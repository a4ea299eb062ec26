// What the tuner tests share: topology fixtures, the GPU machine of a topology, and tuners.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/search.h"
#include "topology/topo_xml.h"
#include "tune/tuner.h"

namespace braid::tune::testing {

inline topology::System fixture(const std::string& name) {
  topology::System s;
  Status st = topology::readTopologyFile(std::string(BRAID_SOURCE_DIR) + "/tests/fixtures/" + name, &s);
  EXPECT_TRUE(st.isOk()) << st.message();
  return s;
}

inline Machine machineOf(const topology::System& s) {
  topology::SearchResult r;
  std::vector<topology::RankPlace> ranks = topology::oneRankPerGpu(s);
  Status st = topology::searchRings(s, ranks, 32, &r);
  EXPECT_TRUE(st.isOk()) << st.message();
  return gpuMachine(r, static_cast<int>(ranks.size()));
}

// `count` copies of the 8-GPU NVSwitch fixture as hosts node0, node1, ...
inline topology::System nvswitchNodes(int count) {
  topology::System one = fixture("nvswitch-8gpu.xml"), nodes;
  for (int h = 0; h < count; ++h) {
    nodes.hosts.push_back(one.hosts[0]);
    nodes.hosts.back().id = "node" + std::to_string(h);
  }
  return nodes;
}

inline Tuner tunerFor(const Machine& m, TunerConfig config = {}) {
  Tuner t;
  Status st = Tuner::create(m, config, &t);
  EXPECT_TRUE(st.isOk()) << st.message();
  return t;
}

}  // namespace braid::tune::testing

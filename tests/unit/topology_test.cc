// Topology model and files: every fixture reads, has the links and bandwidths its machine has, and
// survives a write/read round trip unchanged; bad files fail naming the line; discovery on this
// machine (no GPU here) gives a valid graph.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/machine.h"
#include "topology/discover.h"
#include "topology/links.h"
#include "topology/topo_xml.h"

namespace braid::topology {
namespace {

const char* kFixtures[] = {"nvswitch-8gpu.xml", "nvswitch-2x8gpu.xml", "h200-2gpu.xml", "pcie-4gpu-2socket.xml",
                           "h200-2gpu-discovered.xml"};

std::string fixturePath(const std::string& name) { return std::string(BRAID_SOURCE_DIR) + "/tests/fixtures/" + name; }

System load(const std::string& name) {
  System s;
  Status st = readTopologyFile(fixturePath(name), &s);
  EXPECT_TRUE(st.isOk()) << st.message();
  return s;
}

void expectSameSystem(const System& a, const System& b) {
  ASSERT_EQ(a.hosts.size(), b.hosts.size());
  for (size_t h = 0; h < a.hosts.size(); ++h) {
    const Host& x = a.hosts[h];
    const Host& y = b.hosts[h];
    EXPECT_EQ(x.id, y.id);
    ASSERT_EQ(x.nodes.size(), y.nodes.size());
    for (size_t i = 0; i < x.nodes.size(); ++i) {
      const Node& m = x.nodes[i];
      const Node& n = y.nodes[i];
      EXPECT_TRUE(m.kind == n.kind && m.id == n.id && m.index == n.index && m.busId == n.busId && m.name == n.name &&
                  m.speedGbps == n.speedGbps && m.sm == n.sm)
          << x.id << " node " << m.id;
    }
    ASSERT_EQ(x.links.size(), y.links.size());
    for (size_t i = 0; i < x.links.size(); ++i) {
      const Link& k = x.links[i];
      const Link& l = y.links[i];
      EXPECT_TRUE(k.a == l.a && k.b == l.b && k.kind == l.kind && k.count == l.count && k.pcieGen == l.pcieGen &&
                  k.pcieWidth == l.pcieWidth && k.bandwidth == l.bandwidth && k.latencyUs == l.latencyUs &&
                  k.bandwidthGiven == l.bandwidthGiven && k.latencyGiven == l.latencyGiven)
          << x.id << " link " << i;
    }
  }
}

// Sum of NVLink counts at node `id` of `host`.
int nvlinksAt(const Host& host, const std::string& id) {
  int node = host.find(id), links = 0;
  for (const Link& l : host.links) {
    if (l.kind == LinkKind::kNvLink && (l.a == node || l.b == node)) links += l.count;
  }
  return links;
}

const Link* linkBetween(const Host& host, const std::string& a, const std::string& b) {
  int x = host.find(a), y = host.find(b);
  for (const Link& l : host.links) {
    if ((l.a == x && l.b == y) || (l.a == y && l.b == x)) return &l;
  }
  return nullptr;
}

TEST(TopologyFiles, EveryFixtureRoundTripsLosslessly) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    System first = load(name);
    std::string text = writeTopology(first);
    System second;
    Status st = readTopology(text, "written", &second);
    ASSERT_TRUE(st.isOk()) << st.message();
    expectSameSystem(first, second);
    EXPECT_EQ(writeTopology(second), text);
  }
}

TEST(TopologyFiles, GivenBandwidthAndLatencySurviveTheRoundTrip) {
  const char* text =
      "<system version=\"1\"><host id=\"h\"><cpu id=\"c0\"/><cpu id=\"c1\"/>"
      "<link a=\"c0\" b=\"c1\" type=\"cpu\" bw=\"12.345678901\" lat=\"0.07\"/></host></system>";
  System s;
  ASSERT_TRUE(readTopology(text, "inline", &s).isOk());
  EXPECT_DOUBLE_EQ(s.hosts[0].links[0].bandwidth, 12.345678901);
  EXPECT_DOUBLE_EQ(s.hosts[0].links[0].latencyUs, 0.07);
  System again;
  ASSERT_TRUE(readTopology(writeTopology(s), "written", &again).isOk());
  expectSameSystem(s, again);
}

TEST(TopologyFixtures, EightGpuNvSwitchNode) {
  System s = load("nvswitch-8gpu.xml");
  ASSERT_EQ(s.hosts.size(), 1u);
  const Host& h = s.hosts[0];
  EXPECT_EQ(h.count(NodeKind::kGpu), 8);
  EXPECT_EQ(h.count(NodeKind::kNvSwitch), 4);
  EXPECT_EQ(h.count(NodeKind::kNic), 4);
  for (int g = 0; g < 8; ++g) EXPECT_EQ(nvlinksAt(h, "gpu" + std::to_string(g)), 18) << "gpu" << g;
  const Link* l = linkBetween(h, "gpu0", "nvs0");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->count, 5);
  EXPECT_NEAR(l->bandwidth, 5 * 26.56, 1e-9);  // NVLink 4 per link, times 5
  const Link* p = linkBetween(h, "gpu0", "pci0");
  ASSERT_NE(p, nullptr);
  EXPECT_NEAR(p->bandwidth, 3.938 * 16 * 0.85, 1e-9);  // PCIe gen5 x16
  EXPECT_EQ(linkBetween(h, "gpu0", "gpu1"), nullptr);  // GPUs meet only through the switches
}

TEST(TopologyFixtures, TwoNodesOfEightWithANicPerTwoGpus) {
  System s = load("nvswitch-2x8gpu.xml");
  ASSERT_EQ(s.hosts.size(), 2u);
  EXPECT_EQ(s.gpuCount(), 16);
  for (const Host& h : s.hosts) {
    EXPECT_EQ(h.count(NodeKind::kNic), 4);
    for (int n : h.nodesOf(NodeKind::kNic)) EXPECT_EQ(h.nodes[n].speedGbps, 400);
    EXPECT_NEAR(network(400).bandwidth, 45, 1e-9);
  }
}

TEST(TopologyFixtures, TwoH200sJoinedByEighteenLinks) {
  System s = load("h200-2gpu.xml");
  const Host& h = s.hosts[0];
  const Link* l = linkBetween(h, "gpu0", "gpu1");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->kind, LinkKind::kNvLink);
  EXPECT_EQ(l->count, 18);
  EXPECT_NEAR(l->bandwidth, 478.08, 1e-9);  // PERFORMANCE.md: 478 GB/s per direction
  EXPECT_NEAR(l->latencyUs, 0.69, 1e-12);
}

TEST(TopologyFixtures, PcieOnlyBoxOnTwoSockets) {
  System s = load("pcie-4gpu-2socket.xml");
  const Host& h = s.hosts[0];
  EXPECT_EQ(h.count(NodeKind::kGpu), 4);
  EXPECT_EQ(h.count(NodeKind::kCpu), 2);
  for (const Link& l : h.links) EXPECT_NE(l.kind, LinkKind::kNvLink);
  const Link* cpu = linkBetween(h, "cpu0", "cpu1");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->kind, LinkKind::kCpu);
  EXPECT_NEAR(cpu->bandwidth, 20.8, 1e-9);
  EXPECT_NEAR(linkBetween(h, "gpu2", "pci1")->bandwidth, 1.969 * 16 * 0.85, 1e-9);  // gen4 x16
}

// Each bad file fails with the file name, the line of the problem and what was wrong.
TEST(TopologyFiles, BadFilesNameTheLine) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"<system>\n<host id=\"a\">\n<gpu id=\"g\" dev=\"x\"/>\n</host>\n</system>", "bad.xml:3: <gpu> attribute 'dev'"},
      {"<system>\n<host id=\"a\">\n<gpu/>\n</host>\n</system>", "bad.xml:3: <gpu> missing attribute 'id'"},
      {"<system>\n<host id=\"a\">\n<tpu id=\"t\"/>\n</host>\n</system>", "bad.xml:3: unknown element <tpu>"},
      {"<system>\n<host id=\"a\">\n<gpu id=\"g\" colour=\"red\"/>\n</host>\n</system>",
       "bad.xml:3: <gpu> unknown attribute 'colour'"},
      {"<system>\n<host id=\"a\">\n<gpu id=\"g\"/>\n<link a=\"g\" b=\"h\" type=\"pcie\"/>\n</host>\n</system>",
       "bad.xml:4: <link> names node 'h'"},
      {"<system>\n<host id=\"a\">\n<cpu id=\"c\"/><cpu id=\"d\"/>\n<link a=\"c\" b=\"d\" "
       "type=\"warp\"/>\n</host>\n</system>",
       "bad.xml:4: <link> unknown link type 'warp'"},
      {"<system version=\"2\">\n</system>", "bad.xml:1: <system> version '2'"},
      {"<machine/>", "bad.xml:1: the root element must be <system>"},
      {"<system>\n<host id=\"a\">\n<gpu id=\"g\"/>\n</host>\n", "bad.xml:"},  // truncated
      {"<system>\n<host id=\"a\">\n<cpu id=\"c\"/><cpu id=\"c\"/>\n</host>\n</system>", "node id 'c' appears twice"},
      {"<system>\n<host id=\"a\">\n<cpu id=\"c\"/><gpu id=\"g\"/>\n<link a=\"c\" b=\"g\" type=\"nvlink\"/>\n</host>\n"
       "</system>",
       "NVLink joins GPUs and NVSwitches only"},
  };
  for (const Case& c : cases) {
    System s;
    Status st = readTopology(c.text, "bad.xml", &s);
    EXPECT_FALSE(st.isOk()) << c.text;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << "got: " << st.message();
  }
}

TEST(TopologyFiles, MissingFileIsAnError) {
  System s;
  Status st = readTopologyFile("/nonexistent/topo.xml", &s);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("/nonexistent/topo.xml"), std::string::npos);
}

// Here there is no GPU (and possibly no PCI tree at all): discovery still yields a valid graph with
// at least one CPU, which writes and reads back.
TEST(TopologyDiscovery, ThisMachineGivesAValidGraph) {
  System s;
  s.hosts.emplace_back();
  Status st = discoverHost("this-host", {}, &s.hosts[0]);
  ASSERT_TRUE(st.isOk()) << st.message();
  applyLinkTable(&s);
  ASSERT_TRUE(validate(s).isOk()) << validate(s).message() << "\n" << describe(s);
  EXPECT_GE(s.hosts[0].count(NodeKind::kCpu), 1);
  System again;
  ASSERT_TRUE(readTopology(writeTopology(s), "dumped", &again).isOk()) << writeTopology(s);
  expectSameSystem(s, again);
}

// Discovery never changes the process's environment, from any number of threads at once: hwloc's
// OpenCL component once started PoCL, which set HWLOC_PLUGINS_PATH and so freed the environment
// under other rank threads' getenv (src/topology/discover.cc). CI installs PoCL so that this fails
// there if the component comes back.
TEST(TopologyDiscovery, LeavesTheEnvironmentAlone) {
  auto snapshot = [] {
    std::vector<std::string> vars;
    for (char** e = environ; *e != nullptr; ++e) vars.emplace_back(*e);
    std::sort(vars.begin(), vars.end());
    return vars;
  };
  const std::vector<std::string> before = snapshot();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&ok, t] {
      Host h;
      ok[t] = discoverHost("h" + std::to_string(t), {}, &h).isOk() && h.count(NodeKind::kCpu) >= 1;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
  const std::vector<std::string> after = snapshot();
  std::vector<std::string> added;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(added));
  EXPECT_EQ(before, after) << "discovery set: " << (added.empty() ? std::string("(nothing new)") : added[0]);
}

TEST(TopologyDiscovery, BusIdsAndLinkSpeeds) {
  EXPECT_EQ(normaliseBusId("00000000:18:00.0"), "0000:18:00.0");
  EXPECT_EQ(normaliseBusId("0000:9A:00.1"), "0000:9a:00.1");
  EXPECT_EQ(normaliseBusId("18:00.0"), "0000:18:00.0");
  EXPECT_EQ(pcieGenFromSpeed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcieGenFromSpeed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcieGenFromSpeed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(pcieGenFromSpeed("Unknown"), 0);
}

// use="complete": discovery stays, the file adds what it hides (here two GPUs and their NVLink).
TEST(TopologyDiscovery, TopoFileCompletesDiscovery) {
  std::string path = "/tmp/braid-complete-" + std::to_string(getpid()) + ".xml";
  {
    std::ofstream out(path);
    out << "<system><host id=\"x\" use=\"complete\"><cpu id=\"cpu0\" name=\"from the file\"/>"
           "<gpu id=\"g0\" dev=\"0\" busid=\"0000:99:00.0\"/><gpu id=\"g1\" dev=\"1\" busid=\"0000:9a:00.0\"/>"
           "<link a=\"g0\" b=\"g1\" type=\"nvlink\" count=\"4\"/><link a=\"g0\" b=\"cpu0\" type=\"pcie\"/>"
           "</host></system>";
  }
  setenv("BRAID_TOPO_FILE", path.c_str(), 1);
  Host h;
  Status st = core::localTopology(&h);
  unsetenv("BRAID_TOPO_FILE");
  Host discovered;
  ASSERT_TRUE(discoverHost("d", {}, &discovered).isOk());
  std::remove(path.c_str());
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(h.count(NodeKind::kCpu), discovered.count(NodeKind::kCpu));  // cpu0 matched, not added
  EXPECT_EQ(h.count(NodeKind::kGpu), discovered.count(NodeKind::kGpu) + 2);
  EXPECT_EQ(h.links.size(), discovered.links.size() + 2);
  EXPECT_NE(linkBetween(h, "g0", "g1"), nullptr);
  EXPECT_FALSE(h.completes);
  System s;
  s.hosts.push_back(h);
  applyLinkTable(&s);
  EXPECT_TRUE(validate(s).isOk()) << validate(s).message();
  // The attribute survives a round trip; other values are errors.
  System file;
  ASSERT_TRUE(readTopology("<system><host id=\"a\" use=\"complete\"/></system>", "t", &file).isOk());
  EXPECT_NE(writeTopology(file).find("use=\"complete\""), std::string::npos);
  EXPECT_FALSE(readTopology("<system><host id=\"a\" use=\"merge\"/></system>", "t", &file).isOk());
}

TEST(TopologyDiscovery, TopoFileReplacesDiscovery) {
  setenv("BRAID_TOPO_FILE", fixturePath("h200-2gpu.xml").c_str(), 1);
  setenv("BRAID_HOSTID", "replayed", 1);
  Host h;
  Status st = core::localTopology(&h);
  unsetenv("BRAID_TOPO_FILE");
  unsetenv("BRAID_HOSTID");
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(h.id, "replayed");
  EXPECT_EQ(h.count(NodeKind::kGpu), 2);
}

}  // namespace
}  // namespace braid::topology

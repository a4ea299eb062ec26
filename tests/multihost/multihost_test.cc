// The multihost tier: ranks on separate hosts, as network namespaces joined by veth pairs through a
// bridge, each with its own addresses and host name (netns.h). The ranks meet through launcher
// variables (RANK, WORLD_SIZE, MASTER_ADDR on host 1), exactly as on real machines.
//
// Where namespaces cannot be made the tests skip and say why (not root; a kernel that refuses them);
// any other failure to make them fails. CI runs as root, and .ci/run fails if this tier skipped.
#include <braid/braid.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "mp_util.h"
#include "netns.h"

namespace braid::test {
namespace {

constexpr int kTimeoutMs = 60000;

struct Job {
  std::vector<Report> reports;
  std::vector<ProcResult> results;
  double seconds = 0;
};

// Runs `scenario` of the multiproc worker as sizes[h] ranks on host h (ranks host after host);
// `env` is added.
Job runJob(const NetnsHosts& net, const std::vector<int>& sizes, const std::string& scenario,
           const std::vector<std::string>& env) {
  std::vector<ProcSpec> specs;
  std::vector<int> hostOf, localOf;
  for (size_t h = 0; h < sizes.size(); ++h) {
    for (int i = 0; i < sizes[h]; ++i) hostOf.push_back(static_cast<int>(h)), localOf.push_back(i);
  }
  int n = static_cast<int>(hostOf.size());
  for (int r = 0; r < n; ++r) {
    int h = hostOf[r];
    ProcSpec s;
    s.argv = net.inHost(h, {selfDir() + "/../multiproc/braid_mp_worker", scenario});
    s.env = {"RANK=" + std::to_string(r),
             "WORLD_SIZE=" + std::to_string(n),
             "LOCAL_RANK=" + std::to_string(localOf[r]),
             "MASTER_ADDR=" + net.address(0),
             "MASTER_PORT=29400",
             "BRAID_TEST_FROM_ENV=1",
             "BRAID_TEST_RANK=" + std::to_string(r),
             "BRAID_DEVICE=cpu",
             "BRAID_BOOTSTRAP_TIMEOUT=30"};
    s.env.insert(s.env.end(), env.begin(), env.end());
    specs.push_back(s);
  }
  Job job;
  auto t0 = std::chrono::steady_clock::now();
  job.results = runProcesses(specs, kTimeoutMs);
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  job.reports = parseReports(job.results);
  return job;
}

// `perHost` ranks on every host.
Job runJob(const NetnsHosts& net, int perHost, const std::string& scenario, const std::vector<std::string>& env) {
  return runJob(net, std::vector<int>(net.hosts(), perHost), scenario, env);
}

std::string outputs(const Job& job) {
  std::string all;
  for (size_t i = 0; i < job.results.size(); ++i) {
    all += "--- process " + std::to_string(i) + " (exit " + std::to_string(job.results[i].exitCode) + ")\n" +
           job.results[i].output.substr(0, 4000);
  }
  return all;
}

class Multihost : public ::testing::Test {
 protected:
  void make(int hosts, bool deadEndsFirst = false) {
    std::string why;
    if (!canMakeNamespaces(&why)) GTEST_SKIP() << why;
    net_ = std::make_unique<NetnsHosts>(hosts, deadEndsFirst);
    if (!net_->ok() && (net_->error().find("Operation not permitted") != std::string::npos ||
                        net_->error().find("Permission denied") != std::string::npos)) {
      std::string error = net_->error();
      net_.reset();
      GTEST_SKIP() << "this machine refuses network namespaces even to root (a container without "
                      "CAP_SYS_ADMIN?): "
                   << error;
    }
    ASSERT_TRUE(net_->ok()) << "cannot make the namespaces of the multihost tier: " << net_->error();
  }
  std::unique_ptr<NetnsHosts> net_;
};

// Every collective and a send/recv ring, checked by each rank against a plain loop.
struct Shape {
  int hosts, perHost;
  bool plugin;  // through NCCL_NET_PLUGIN=libnccl-net-braid.so instead of the built-in network
};

std::ostream& operator<<(std::ostream& out, const Shape& s) {
  return out << s.hosts << " hosts x " << s.perHost << " rank(s)" << (s.plugin ? ", braid's plugin" : "");
}

class EveryCollective : public Multihost, public ::testing::WithParamInterface<Shape> {};

TEST_P(EveryCollective, AcrossHosts) {
  Shape s = GetParam();
  make(s.hosts);
  if (!net_) return;
  std::vector<std::string> env = {"BRAID_TEST_LARGE=1", "BRAID_DEBUG=INFO", "BRAID_DEBUG_SUBSYS=NET,INIT,TUNE"};
  if (s.plugin) env.push_back(std::string("NCCL_NET_PLUGIN=") + BRAID_NET_PLUGIN_FILE);
  Job job = runJob(*net_, s.perHost, "coll", env);
  ASSERT_EQ(job.reports.size(), static_cast<size_t>(s.hosts * s.perHost)) << outputs(job);
  for (const Report& r : job.reports) EXPECT_TRUE(r.ok()) << r.describe();
  // Each rank's log names the network it used between hosts, and its own host name.
  const std::string& log = job.results[0].output;
  EXPECT_NE(log.find(s.plugin ? "using network BraidSocket from " : "using network BraidSocket (built-in)"),
            std::string::npos)
      << log.substr(0, 3000);
  EXPECT_NE(log.find("via NET/BraidSocket/0"), std::string::npos) << log.substr(0, 3000);
  EXPECT_NE(log.find(net_->hostName(0)), std::string::npos) << "the log's host is the namespace's";
  // A communicator across hosts moves 256 KiB slots over the built-in network, whose sends go by
  // reference, and 1 MiB slots through a plugin, whose slots are all copied (BRAID_CHUNK_BYTES
  // unset; the 4 MB all-reduce of BRAID_TEST_LARGE takes several).
  EXPECT_NE(log.find(s.plugin ? "FIFO slots of 1048576 bytes" : "FIFO slots of 262144 bytes"), std::string::npos)
      << log.substr(0, 3000);
  // The cost model's network between hosts is the speed the veths report (the socket network reads
  // it from sysfs, as this test does), or the model's own where they report none.
  const std::string speed = net_->fileInHost(0, "/sys/class/net/eth0/speed");
  char expected[96];
  if (std::atol(speed.c_str()) > 0) {
    std::snprintf(expected, sizeof(expected), "a host's network of %.2f GB/s (the network's speed)",
                  std::atol(speed.c_str()) / 8000.0);
  } else {
    std::snprintf(expected, sizeof(expected), "(no speed given: the model's own)");
  }
  EXPECT_NE(log.find(expected), std::string::npos) << expected << "\n" << log.substr(0, 3000);
}

std::string shapeName(const ::testing::TestParamInfo<Shape>& p) {
  return std::to_string(p.param.hosts) + "hosts_" + std::to_string(p.param.perHost) + "each" +
         (p.param.plugin ? "_plugin" : "");
}

INSTANTIATE_TEST_SUITE_P(Shapes, EveryCollective,
                         ::testing::Values(Shape{2, 1, false}, Shape{3, 1, false}, Shape{4, 1, false},
                                           Shape{2, 2, false}, Shape{3, 2, false}, Shape{2, 1, true},
                                           Shape{3, 2, true}),
                         shapeName);

// The hierarchical algorithms across hosts: every collective (hier for all five: all-reduce,
// all-gather, reduce-scatter, broadcast, reduce) with BRAID_ALGO=hier, with the
// cross-host tree forced (all-reduce; the ring for the rest), and with the tuner's choice, on 2
// hosts x 2 ranks and on uneven hosts of 2, 1 and 2; each rank checks its results against a plain
// loop.
struct HierShape {
  std::vector<int> sizes;
  const char* algo;  // BRAID_ALGO, or "" for the tuner's choice
};

class HierAcrossHosts : public Multihost, public ::testing::WithParamInterface<HierShape> {};

TEST_P(HierAcrossHosts, EveryCollective) {
  const HierShape& s = GetParam();
  make(static_cast<int>(s.sizes.size()));
  if (!net_) return;
  std::vector<std::string> env = {"BRAID_TEST_LARGE=1", "BRAID_DEBUG=TRACE", "BRAID_DEBUG_SUBSYS=COLL"};
  if (*s.algo != '\0') env.push_back(std::string("BRAID_ALGO=") + s.algo);
  Job job = runJob(*net_, s.sizes, "coll", env);
  size_t n = 0;
  for (int k : s.sizes) n += static_cast<size_t>(k);
  ASSERT_EQ(job.reports.size(), n) << outputs(job);
  for (const Report& r : job.reports) EXPECT_TRUE(r.ok()) << r.describe();
  // The all-reduces ran as forced, or hierarchically (the tuner's choice across hosts).
  const std::string ran = std::string(": ") + (*s.algo != '\0' ? s.algo : "hier") + ", ";
  EXPECT_NE(job.results[0].output.find("allreduce"), std::string::npos);
  EXPECT_NE(job.results[0].output.find(ran), std::string::npos) << job.results[0].output.substr(0, 4000);
  if (std::string(s.algo) == "hier") {  // forced: the other collectives too (algo/hier.h)
    // " reduce count", not "allreduce count".
    for (const char* coll : {" broadcast count", " reduce count", "allgather count", "reducescatter count"}) {
      bool hier = false;
      std::istringstream lines(job.results[0].output);
      for (std::string line; std::getline(lines, line);) {
        hier = hier || (line.find(coll) != std::string::npos && line.find(": hier, ") != std::string::npos);
      }
      EXPECT_TRUE(hier) << coll << ": " << job.results[0].output.substr(0, 4000);
    }
  }
}

std::string hierName(const ::testing::TestParamInfo<HierShape>& p) {
  std::string name;
  for (int k : p.param.sizes) name += (name.empty() ? "" : "_") + std::to_string(k);
  return name + "_" + (*p.param.algo != '\0' ? std::string(p.param.algo) : std::string("tuner"));
}

INSTANTIATE_TEST_SUITE_P(Shapes, HierAcrossHosts,
                         ::testing::Values(HierShape{{2, 2}, "hier"}, HierShape{{2, 2}, "crosstree"},
                                           HierShape{{2, 2}, ""}, HierShape{{2, 1, 2}, "hier"},
                                           HierShape{{2, 1, 2}, "crosstree"}, HierShape{{2, 1, 2}, ""}),
                         hierName);

// A rank killed between two all-reduces on another host: the survivors' second call fails promptly,
// naming a rank, instead of hanging. Twice: the victim dies at once, and 300 ms later, when the
// others' second call has already sent to it (bytes it never reads: its end of those connections
// is reset, not closed).
TEST_F(Multihost, KilledRankOnAnotherHostFailsTheOthersPromptly) {
  make(3);
  if (!net_) return;
  for (const char* delay : {"0", "300"}) {
    SCOPED_TRACE(std::string("the victim exits after ") + delay + " ms");
    Job job = runJob(*net_, 1, "killcoll", {"BRAID_TEST_VICTIM=1", std::string("BRAID_TEST_DELAY_MS=") + delay});
    ASSERT_EQ(job.reports.size(), 2u) << outputs(job);  // the victim prints nothing
    for (const Report& r : job.reports) {
      EXPECT_FALSE(r.ok()) << r.describe();
      EXPECT_NE(r.msg.find("rank "), std::string::npos) << r.describe();
      EXPECT_NE(r.msg.find("the network: network BraidSocket: "), std::string::npos) << "names the network";
      // The receiving end of a connection to the victim says "the sender at", a sending end that
      // noticed it while idle "the listener at" (the victim's address either way); "reset" where
      // the victim's end held bytes it never read.
      EXPECT_TRUE(
          std::regex_search(r.msg, std::regex("connection (closed|reset) by the (sender|listener) at 10\\.77\\.0\\.")))
          << "carries the network's own words: " << r.describe();
      std::printf("delay %s ms, rank %d: %s\n", delay, r.rank, r.msg.c_str());
    }
    EXPECT_LT(job.seconds, 20.0) << "the survivors took " << job.seconds << " s to fail";
  }
}

// The same with the hierarchical all-reduce (2 hosts x 2 ranks): the survivors fail promptly.
TEST_F(Multihost, KilledRankDuringAHierarchicalAllReduceFailsTheOthersPromptly) {
  make(2);
  if (!net_) return;
  Job job = runJob(*net_, 2, "killcoll", {"BRAID_TEST_VICTIM=1", "BRAID_ALGO=hier"});
  ASSERT_EQ(job.reports.size(), 3u) << outputs(job);  // the victim prints nothing
  for (const Report& r : job.reports) {
    EXPECT_FALSE(r.ok()) << r.describe();
    EXPECT_NE(r.msg.find("rank "), std::string::npos) << r.describe();
  }
  EXPECT_LT(job.seconds, 20.0) << "the survivors took " << job.seconds << " s to fail";
}

// The progress watchdog across hosts (BRAID_TIMEOUT=1): the rank on the third host stops
// (SIGSTOP) before the all-reduce; its sockets stay open, so only the watchdog's unanswered query
// tells the others. Each returns braidTimeout naming it as not responding, within timeout + 2 s.
TEST_F(Multihost, AStoppedRankOnAnotherHostIsReportedAsNotResponding) {
  make(3);
  if (!net_) return;
  Job job = runJob(*net_, 1, "stall", {"BRAID_TIMEOUT=1", "BRAID_TEST_DELAY_MS=4000"});
  ASSERT_EQ(job.reports.size(), 2u) << outputs(job);  // the stopped rank is killed, not reported
  for (const Report& r : job.reports) {
    EXPECT_EQ(r.code, braidTimeout) << r.describe();
    EXPECT_NE(r.msg.find("rank 2: not responding"), std::string::npos) << r.describe();
    EXPECT_NE(r.msg.find("diagnosis: rank 2 did not answer"), std::string::npos) << r.describe();
    EXPECT_LT(std::atoi(r.msg.c_str() + std::strlen("took_ms=")), 1000 + 2000) << r.describe();
    std::printf("rank %d: %s\n", r.rank, r.msg.c_str());
  }
}

// The watchdog's other stalls across hosts (BRAID_TIMEOUT=1), the rank on the third host instead
// of the all-reduce: skipping it (alive and answering), leaving (its communicator destroyed, its
// process gone), or calling a broadcast. No rank hangs or returns success, each failing rank does
// so within timeout + 2 s, naming rank 2 ("has not reached" for the skip) or a mismatch; a skip's
// report says where each rank's network connections with the rank it waits for stand. (Which rank
// that is depends on timing: with the double binary tree, rank 0 waits for rank 2 in one tree and
// for rank 1, which waits for rank 2, in the other; the report names the lane it found blocked.)
TEST_F(Multihost, ASkippingLeavingOrMismatchedRankOnAnotherHostIsNamed) {
  make(3);
  if (!net_) return;
  for (const char* how : {"skip", "exit", "broadcast"}) {
    SCOPED_TRACE(how);
    const std::string h = how;
    Job job = runJob(*net_, 1, "stall", {"BRAID_TIMEOUT=1", "BRAID_TEST_DELAY_MS=4000", "BRAID_TEST_STALL=" + h});
    EXPECT_EQ(stallReportsProblem(job.reports, h, 3, 1000), "") << outputs(job);
    for (const Report& r : job.reports) {
      std::printf("%s, rank %d: %s\n", how, r.rank, r.msg.c_str());
      // Where the network connections with the awaited rank stand, under this rank's line.
      if (h == "skip" && r.rank != 2) {
        const std::string self = "(this rank): ";
        const size_t line = r.msg.find(self), waits = r.msg.find("waiting for rank ", line);
        ASSERT_NE(waits, std::string::npos) << r.describe();
        const int awaited = std::atoi(r.msg.c_str() + waits + std::strlen("waiting for rank "));
        EXPECT_NE(r.msg.find("from rank " + std::to_string(awaited) + ": 0 slot(s) received, 0 consumed here"),
                  std::string::npos)
            << r.describe();
      }
    }
  }
}

// BRAID_SOCKET_IFNAME picks among two interfaces: with eth1 (a dead end) present on every host,
// naming eth0 works.
TEST_F(Multihost, SocketIfnameChoosesTheInterfaceThatReachesThePeers) {
  make(2);
  if (!net_) return;
  for (int h = 0; h < 2; ++h) ASSERT_TRUE(net_->addDeadEnd(h)) << net_->error();
  Job job = runJob(*net_, 1, "coll", {"BRAID_SOCKET_IFNAME==eth0", "BRAID_DEBUG=INFO", "BRAID_DEBUG_SUBSYS=NET"});
  ASSERT_EQ(job.reports.size(), 2u) << outputs(job);
  for (const Report& r : job.reports) EXPECT_TRUE(r.ok()) << r.describe();
  EXPECT_NE(job.results[0].output.find("(eth0, ptrSupport HOST"), std::string::npos)
      << job.results[0].output.substr(0, 3000);
}

// With BRAID_SOCKET_IFNAME unset, an interface that reaches no peer is skipped even where it comes
// first: each rank listens on the address its connection to the root went out of, and the network
// transport on the device with that address.
TEST_F(Multihost, AFirstInterfaceThatReachesNoPeerIsSkipped) {
  make(3, true);
  if (!net_) return;
  Job job = runJob(*net_, 1, "coll", {"BRAID_DEBUG=INFO", "BRAID_DEBUG_SUBSYS=NET,BOOTSTRAP"});
  ASSERT_EQ(job.reports.size(), 3u) << outputs(job);
  for (const Report& r : job.reports) EXPECT_TRUE(r.ok()) << r.describe();
  for (const ProcResult& p : job.results) {
    EXPECT_NE(p.output.find("device 0 dead0 10.78."), std::string::npos) << "dead0 is a device" << p.output;
    EXPECT_NE(p.output.find("(eth0, ptrSupport HOST"), std::string::npos) << p.output.substr(0, 3000);
  }
}

}  // namespace
}  // namespace braid::test

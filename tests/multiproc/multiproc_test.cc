// Multi-process tier: real processes bootstrap through a unique id, through launcher variables and
// under mpirun; a missing rank, a dead peer and garbage connections at the root give clear errors.
#include <arpa/inet.h>
#include <braid/braid.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/pmix_rendezvous.h"
#include "harness.h"
#include "mp_util.h"
#include "topology/topo_xml.h"

namespace braid::test {
namespace {

class Bootstrap : public ::testing::TestWithParam<int> {};

TEST_P(Bootstrap, ThroughUniqueId) {
  int n = GetParam();
  std::vector<Report> reports = runRanks(n, allRanks(n), "id", {});
  ASSERT_EQ(reports.size(), static_cast<size_t>(n));
  for (const Report& r : reports) EXPECT_TRUE(r.ok()) << r.describe();
}

INSTANTIATE_TEST_SUITE_P(Ranks, Bootstrap, ::testing::Values(1, 2, 3, 4, 7, 8));

// Each rank gets a bootstrap timeout well inside the harness's, so a rank that cannot meet the
// others says so rather than being killed silently; a rank that still prints nothing is shown.
std::vector<Report> runEnvRanks(int n, const std::function<std::vector<std::string>(int)>& envOf) {
  std::vector<ProcSpec> specs;
  for (int r = 0; r < n; ++r) {
    specs.push_back({{workerPath(), "env"}, envOf(r)});
    specs.back().env.push_back("BRAID_BOOTSTRAP_TIMEOUT=" + std::to_string(kProcTimeoutMs / 2 / 1000));
  }
  std::vector<ProcResult> results = runProcesses(specs, kProcTimeoutMs);
  for (size_t r = 0; r < results.size(); ++r) {
    if (parseOutput(results[r].output).empty())
      ADD_FAILURE() << "process " << r << " printed no result:\n" << results[r].output;
  }
  return parseReports(results);
}

// braid listens on MASTER_PORT+1 (MASTER_PORT is torchrun's store): give it the free port.
std::string masterPortBelowAFreePort() { return std::to_string(freeTcpPort() - 1); }

class Torchrun : public ::testing::TestWithParam<int> {};

TEST_P(Torchrun, EnvironmentVariables) {
  int n = GetParam();
  std::string port = masterPortBelowAFreePort();
  auto reports = runEnvRanks(n, [&](int r) {
    return std::vector<std::string>{"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(n),
                                    "LOCAL_RANK=" + std::to_string(r), "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port};
  });
  ASSERT_EQ(reports.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(reports[r].ok()) << reports[r].describe();
    EXPECT_EQ(reports[r].rank, r);
    EXPECT_EQ(reports[r].nranks, n);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, Torchrun, ::testing::Values(1, 2, 3, 4, 7, 8));

TEST(LauncherEnv, OpenMpiVariablesWithCommId) {
  int n = 3;
  std::string id = "127.0.0.1:" + std::to_string(freeTcpPort());
  auto reports = runEnvRanks(n, [&](int r) {
    return std::vector<std::string>{"OMPI_COMM_WORLD_RANK=" + std::to_string(r), "OMPI_COMM_WORLD_SIZE=3",
                                    "OMPI_COMM_WORLD_LOCAL_RANK=" + std::to_string(r), "BRAID_COMM_ID=" + id};
  });
  ASSERT_EQ(reports.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) EXPECT_TRUE(reports[r].ok() && reports[r].rank == r) << reports[r].describe();
}

TEST(LauncherEnv, SlurmVariables) {
  int n = 3;
  std::string port = masterPortBelowAFreePort();
  auto reports = runEnvRanks(n, [&](int r) {
    return std::vector<std::string>{"SLURM_PROCID=" + std::to_string(r),
                                    "SLURM_NTASKS=3",
                                    "SLURM_LOCALID=" + std::to_string(r),
                                    "SLURM_JOB_ID=77",
                                    "MASTER_ADDR=localhost",
                                    "MASTER_PORT=" + port};
  });
  ASSERT_EQ(reports.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) EXPECT_TRUE(reports[r].ok() && reports[r].rank == r) << reports[r].describe();
}

ProcSpec underMpirun(const std::string& mpirun, int n, std::vector<std::string> program,
                     std::vector<std::string> mpiArgs = {}) {
  std::vector<std::string> argv = {mpirun, "--allow-run-as-root", "--oversubscribe", "-np", std::to_string(n)};
  argv.insert(argv.end(), mpiArgs.begin(), mpiArgs.end());
  argv.insert(argv.end(), program.begin(), program.end());
  return ProcSpec{argv, {"OMPI_MCA_plm_rsh_agent=false"}};
}

// Runs the worker's "env" scenario on 4 ranks under mpirun: every rank reports success once.
void expectFourRanksMeetUnderMpirun(const std::string& mpirun, std::vector<std::string> mpiArgs) {
  std::vector<ProcResult> out = runProcesses({underMpirun(mpirun, 4, {workerPath(), "env"}, mpiArgs)}, 60000);
  ASSERT_FALSE(out[0].timedOut) << out[0].output;
  EXPECT_EQ(out[0].exitCode, 0) << out[0].output;
  std::vector<Report> reports = parseOutput(out[0].output);
  ASSERT_EQ(reports.size(), 4u) << out[0].output;
  std::vector<bool> seen(4, false);
  for (const Report& r : reports) {
    EXPECT_TRUE(r.ok()) << r.describe();
    ASSERT_TRUE(r.rank >= 0 && r.rank < 4) << r.describe();
    seen[r.rank] = true;
  }
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(seen[r]) << "rank " << r << " did not report";
}

TEST(LauncherEnv, Mpirun) {
  std::string mpirun = findInPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun not installed (apt-get install openmpi-bin)";
  std::string id = "127.0.0.1:" + std::to_string(freeTcpPort());
  expectFourRanksMeetUnderMpirun(mpirun, {"-x", "BRAID_COMM_ID=" + id, "-x", "BRAID_BOOTSTRAP_TIMEOUT=30"});
}

// mpirun with no braid variable at all: rank 0's unique id goes through mpirun's PMIx server.
// Why these cases cannot run here ("" when they can): no mpirun, or no PMIx client for braid.
std::string noBareMpirun(std::string* mpirun) {
  *mpirun = findInPath("mpirun");
  if (mpirun->empty()) return "mpirun not installed (apt-get install openmpi-bin)";
  if (!bootstrap::pmixBuiltIn()) return "braid was built without pmix.h (apt-get install libpmix-dev)";
  void* lib = dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return "no libpmix.so.2 to load (apt-get install libpmix2)";
  dlclose(lib);
  return "";
}

TEST(LauncherEnv, MpirunWithNothingSetMeetsThroughPmix) {
  std::string mpirun, why = noBareMpirun(&mpirun);
  if (!why.empty()) GTEST_SKIP() << why;
  expectFourRanksMeetUnderMpirun(mpirun, {});
}

// The same with the PMIx library hidden: every rank fails saying what to load or set.
TEST(LauncherEnv, MpirunWithPmixHiddenSaysWhatToSet) {
  std::string mpirun, why = noBareMpirun(&mpirun);
  if (!why.empty()) GTEST_SKIP() << why;
  std::vector<ProcResult> out = runProcesses(
      {underMpirun(mpirun, 2, {workerPath(), "env"}, {"-x", "BRAID_PMIX_LIBRARY=/nonexistent/libpmix.so.2"})}, 60000);
  ASSERT_FALSE(out[0].timedOut) << out[0].output;
  std::vector<Report> reports = parseOutput(out[0].output);
  ASSERT_EQ(reports.size(), 2u) << out[0].output;
  for (const Report& r : reports) {
    EXPECT_EQ(r.code, braidInvalidUsage) << r.describe();
    EXPECT_NE(r.msg.find("could not load the PMIx client library /nonexistent/libpmix.so.2 (BRAID_PMIX_LIBRARY)"),
              std::string::npos)
        << r.describe();
    EXPECT_NE(r.msg.find("or set BRAID_COMM_ID=host:port"), std::string::npos) << r.describe();
  }
}

// braid-perf and the all-reduce example under a bare mpirun: they run and check their results.
TEST(LauncherEnv, BenchmarkAndExampleRunUnderABareMpirun) {
  std::string mpirun, why = noBareMpirun(&mpirun);
  if (!why.empty()) GTEST_SKIP() << why;
  std::vector<ProcResult> out = runProcesses(
      {underMpirun(mpirun, 4, {BRAID_TEST_PERF, "-b", "8", "-e", "64K", "-f", "8", "-n", "3", "-w", "1", "-c", "1"})},
      60000);
  ASSERT_FALSE(out[0].timedOut) << out[0].output;
  EXPECT_EQ(out[0].exitCode, 0) << out[0].output;
  EXPECT_NE(out[0].output.find("# Out of bounds values : 0 OK"), std::string::npos) << out[0].output;
  out = runProcesses({underMpirun(mpirun, 4, {BRAID_TEST_EXAMPLE_ALLREDUCE})}, 60000);
  ASSERT_FALSE(out[0].timedOut) << out[0].output;
  EXPECT_EQ(out[0].exitCode, 0) << out[0].output;
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(out[0].output.find("rank " + std::to_string(r) + " of 4: all-reduce of 1048576 floats correct"),
              std::string::npos)
        << out[0].output;
  }
}

TEST(Failures, MissingRankTimesOutNamingIt) {
  int n = 4;
  std::vector<Report> reports = runRanks(n, {0, 1, 2}, "id", {"BRAID_BOOTSTRAP_TIMEOUT=2"});
  ASSERT_EQ(reports.size(), 3u);
  for (const Report& r : reports) {
    EXPECT_EQ(r.code, braidTimeout) << r.describe();
    EXPECT_TRUE(std::regex_search(r.msg, std::regex("rank\\(?s?\\)? 3\\b"))) << r.describe();
  }
}

TEST(Failures, MissingRankZeroWithFixedRootAddress) {
  // With BRAID_COMM_ID rank 0 serves the root; without it nobody answers, and the others must say so.
  std::string id = "127.0.0.1:" + std::to_string(freeTcpPort());
  std::vector<ProcSpec> specs;
  for (int r = 1; r < 3; ++r) {
    specs.push_back({{workerPath(), "env"},
                     {"OMPI_COMM_WORLD_RANK=" + std::to_string(r), "OMPI_COMM_WORLD_SIZE=3", "BRAID_COMM_ID=" + id,
                      "BRAID_BOOTSTRAP_TIMEOUT=2"}});
  }
  std::vector<Report> reports = parseReports(runProcesses(specs, kProcTimeoutMs));
  ASSERT_EQ(reports.size(), 2u);
  for (const Report& r : reports) {
    EXPECT_EQ(r.code, braidTimeout) << r.describe();
    EXPECT_NE(r.msg.find(id), std::string::npos) << r.describe();
  }
}

TEST(Failures, DeadPeerIsNamedNotWaitedFor) {
  int n = 3;
  std::vector<Report> reports = runRanks(n, allRanks(n), "die", {"BRAID_TEST_VICTIM=1", "BRAID_BOOTSTRAP_TIMEOUT=20"});
  ASSERT_EQ(reports.size(), 2u);  // the victim prints nothing
  bool named = false;
  for (const Report& r : reports) {
    EXPECT_NE(r.code, braidSuccess) << r.describe();
    EXPECT_NE(r.code, braidTimeout) << "a closed connection must be seen at once: " << r.describe();
    named = named || r.msg.find("rank 1") != std::string::npos;
  }
  EXPECT_TRUE(named) << "no survivor named rank 1";
}

// The transports between processes: shared memory, sockets (BRAID_SHM_DISABLE=1, two proxy
// threads), and two pretended hosts (BRAID_HOSTID: shm within each, sockets between them). 64-byte
// chunks make pipelines run many steps; the large case sends full 128 KiB slots, cut into pieces
// across the sockets of each connection.
struct TransportCase {
  const char* name;
  std::vector<std::string> env;
};

const TransportCase kTransports[] = {
    {"Shm", {"BRAID_CHUNK_BYTES=64"}},
    {"Sockets", {"BRAID_CHUNK_BYTES=64", "BRAID_SHM_DISABLE=1", "BRAID_SOCKET_NTHREADS=2"}},
    {"TwoHosts", {"BRAID_CHUNK_BYTES=64", "BRAID_TEST_HOSTS=2"}},
    {"SocketsLarge",
     {"BRAID_SHM_DISABLE=1", "BRAID_SOCKET_NTHREADS=2", "BRAID_NSOCKS_PERTHREAD=2", "BRAID_TEST_LARGE=1"}},
    // Recursive doubling sends a block and then reduces into it: its sends by reference must be
    // sent before the reduce overwrites them (RefLedger::clear).
    {"SocketsLargeDoubling",
     {"BRAID_SHM_DISABLE=1", "BRAID_NSOCKS_PERTHREAD=2", "BRAID_TEST_LARGE=1", "BRAID_ALGO=doubling"}},
};

std::vector<std::string> withEnv(std::vector<std::string> env, std::initializer_list<const char*> more) {
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

// Every collective between processes; once all have exited, no segment of their communicator is
// left in /dev/shm.
class Transports : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Transports, EveryCollectiveAcrossProcesses) {
  const TransportCase& t = kTransports[std::get<0>(GetParam())];
  int n = std::get<1>(GetParam());
  std::vector<Report> reports =
      runRanks(n, allRanks(n), "coll", withEnv(t.env, {"BRAID_DEVICE=cpu", "BRAID_BOOTSTRAP_TIMEOUT=20"}));
  ASSERT_EQ(reports.size(), static_cast<size_t>(n));
  for (const Report& r : reports) EXPECT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(leftoverSegments(reports), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, Transports, ::testing::Combine(::testing::Range(0, 5), ::testing::Values(1, 2, 3, 4)),
                         [](const auto& p) {
                           return std::string(kTransports[std::get<0>(p.param)].name) + "_" +
                                  std::to_string(std::get<1>(p.param));
                         });

// A process killed between two collectives: the others' second all-reduce fails promptly (no hang,
// well inside the harness's 30 s), names the dead rank (shared memory: "rank 1 (process ...)
// exited"; sockets: rank 1 closed its connection, or a rank that gave up because of it), and no
// shared memory of the communicator is left.
class KilledMidCollective : public ::testing::TestWithParam<int> {};

TEST_P(KilledMidCollective, OthersFailPromptlyNamingIt) {
  const TransportCase& t = kTransports[GetParam()];
  int n = 3;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Report> reports =
      runRanks(n, allRanks(n), "killcoll", withEnv(t.env, {"BRAID_DEVICE=cpu", "BRAID_TEST_VICTIM=1"}));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(reports.size(), 2u) << (reports.empty() ? std::string()
                                                    : reports[0].describe());  // the victim prints nothing
  bool namesVictim = false;
  for (const Report& r : reports) {
    EXPECT_EQ(r.code, braidRemoteError) << r.describe();
    EXPECT_EQ(r.msg.find("left behind"), std::string::npos) << r.describe();
    namesVictim = namesVictim || r.msg.find("rank 1 (process") != std::string::npos ||
                  r.msg.find("rank 1 gave up on the call and closed its connection") != std::string::npos;
  }
  EXPECT_TRUE(namesVictim) << "no survivor named the dead rank 1";
  EXPECT_LT(seconds, 10.0);
}

INSTANTIATE_TEST_SUITE_P(Transports, KilledMidCollective, ::testing::Range(0, 3),
                         [](const auto& p) { return std::string(kTransports[p.param].name); });

// A process killed between two collectives; the survivors' second call fails, they shrink the
// failed communicator without it (nothing is exchanged with the dead rank) and all-reduce correctly
// on the new one, over each transport.
class ShrinkAfterAKill : public ::testing::TestWithParam<int> {};

TEST_P(ShrinkAfterAKill, SurvivorsContinueOnTheShrunkCommunicator) {
  const TransportCase& t = kTransports[GetParam()];
  const int n = 4;
  std::vector<Report> reports =
      runRanks(n, allRanks(n), "shrink", withEnv(t.env, {"BRAID_DEVICE=cpu", "BRAID_TEST_VICTIM=1"}));
  ASSERT_EQ(reports.size(), 3u) << (reports.empty() ? std::string() : reports[0].describe());
  for (const Report& r : reports) EXPECT_TRUE(r.ok()) << r.describe();
}

INSTANTIATE_TEST_SUITE_P(Transports, ShrinkAfterAKill, ::testing::Range(0, 3),
                         [](const auto& p) { return std::string(kTransports[p.param].name); });

// Two jobs one after the other at the same fixed MASTER_ADDR:MASTER_PORT derive the same unique id
// (as the multihost tier's do, and a torchrun job restarted on its port). Names that an earlier job
// left in /dev/shm (a killed sender's segment that its receiver never opened; here planted, unsized,
// under every name the first job could have used) must not be opened by the second: each instance
// of a communicator names its segments with a random value of its rank 0's, so the second job's
// prefix differs and it runs as if they were not there.
TEST(SharedMemory, AnEarlierJobsLeftoverNamesAreNotOpened) {
  const std::string port = masterPortBelowAFreePort();
  std::vector<std::string> env = {"BRAID_TEST_FROM_ENV=1", "BRAID_DEVICE=cpu", "BRAID_BOOTSTRAP_TIMEOUT=10"};
  auto job = [&] {
    std::vector<ProcSpec> specs;
    for (int r = 0; r < 2; ++r) {
      specs.push_back({{workerPath(), "coll"}, env});
      const std::string rank = std::to_string(r);
      for (const std::string& v :
           std::vector<std::string>{"RANK=" + rank, "WORLD_SIZE=2", "LOCAL_RANK=" + rank, "MASTER_ADDR=127.0.0.1",
                                    "MASTER_PORT=" + port, "BRAID_TEST_RANK=" + rank})
        specs.back().env.push_back(v);
    }
    return parseReports(runProcesses(specs, kProcTimeoutMs));
  };
  std::vector<Report> first = job();
  ASSERT_EQ(first.size(), 2u);
  for (const Report& r : first) ASSERT_TRUE(r.ok()) << r.describe();
  ASSERT_FALSE(first[0].shmPrefix.empty());
  struct Planted {
    std::vector<std::string> paths;
    ~Planted() {
      for (const std::string& p : paths) unlink(p.c_str());
    }
  } planted;
  for (int src = 0; src < 2; ++src) {
    for (int channel = 0; channel < 4; ++channel) {
      for (int conn = 0; conn < 16; ++conn) {
        std::string path = "/dev/shm/" + first[0].shmPrefix + "-" + std::to_string(src) + "-" +
                           std::to_string(1 - src) + "-" + std::to_string(channel) + "-" + std::to_string(conn);
        int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
        ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
        close(fd);
        planted.paths.push_back(path);
      }
    }
  }
  std::vector<Report> second = job();
  ASSERT_EQ(second.size(), 2u);
  for (const Report& r : second) EXPECT_TRUE(r.ok()) << r.describe();
  EXPECT_NE(second[0].shmPrefix, first[0].shmPrefix) << "the same id gave the same shared-memory names";
  EXPECT_EQ(second[0].shmPrefix, second[1].shmPrefix) << "the ranks of one communicator disagree on its names";
  EXPECT_EQ(leftoverSegments(second), "");
}

// The exit race (issue 17): a rank that sends and leaves at once, before its receivers have even
// looked. Its message must still reach them (over shared memory it sits in a segment only the
// sender had mapped), and nothing may be left in /dev/shm once all have exited. Deterministic: the
// receivers wait 300 ms before they receive, long after the sender has gone. Default chunks: the
// message fits the FIFO, so the sender does not wait for its receivers.
TEST(ExitRace, ASenderThatLeftAtOnceIsStillHeard) {
  const TransportCase cases[] = {{"Shm", {}}, {"Sockets", {"BRAID_SHM_DISABLE=1"}}};
  for (const TransportCase& t : cases) {
    for (int n : {2, 4}) {
      SCOPED_TRACE(std::string(t.name) + " " + std::to_string(n) + " ranks");
      std::vector<Report> reports =
          runRanks(n, allRanks(n), "exitrace", withEnv(t.env, {"BRAID_DEVICE=cpu", "BRAID_TEST_DELAY_MS=300"}));
      ASSERT_EQ(reports.size(), static_cast<size_t>(n));
      for (const Report& r : reports) EXPECT_TRUE(r.ok()) << r.describe();
      EXPECT_EQ(leftoverSegments(reports), "");
    }
  }
}

// Mismatched calls across processes (issue 17): the last rank sums where the others take the max,
// or reduces int32 where they reduce float32. Over shared memory, sockets and two pretended hosts,
// no rank returns success (with mixed data), none hangs, a rank names the mismatch, and no segment
// is left once all have exited.
class Mismatched : public ::testing::TestWithParam<int> {};

TEST_P(Mismatched, CallsFailNamingBothInsteadOfMixingData) {
  const TransportCase& t = kTransports[GetParam()];
  for (const char* what : {"op", "type"}) {
    for (int n : {2, 3}) {
      SCOPED_TRACE(std::string(what) + " " + std::to_string(n) + " ranks");
      std::vector<Report> reports =
          runRanks(n, allRanks(n), "mismatch",
                   withEnv(t.env, {"BRAID_DEVICE=cpu", ("BRAID_TEST_MISMATCH=" + std::string(what)).c_str()}));
      ASSERT_EQ(reports.size(), static_cast<size_t>(n));
      bool named = false;
      for (const Report& r : reports) {
        EXPECT_NE(r.code, braidSuccess) << r.describe();
        named = named || r.msg.find("mismatched calls: rank") != std::string::npos;
      }
      EXPECT_TRUE(named) << reports[0].describe();
      EXPECT_EQ(leftoverSegments(reports), "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, Mismatched, ::testing::Range(0, 3),
                         [](const auto& p) { return std::string(kTransports[p.param].name); });

// The progress watchdog across processes (BRAID_TIMEOUT=1): the last rank is stopped (SIGSTOP)
// before the all-reduce, so no FIFO and no socket tells the others anything. Each of them returns
// braidTimeout within the timeout + 2 s (the query to the stopped rank waits 1 s), its report
// naming the stopped rank as not responding; no shared memory is left behind.
class Stalled : public ::testing::TestWithParam<int> {};

TEST_P(Stalled, AStoppedRankIsReportedAsNotResponding) {
  const TransportCase& t = kTransports[GetParam()];
  const int n = 3;
  std::vector<Report> reports = runRanks(
      n, allRanks(n), "stall", withEnv(t.env, {"BRAID_DEVICE=cpu", "BRAID_TIMEOUT=1", "BRAID_TEST_DELAY_MS=4000"}));
  ASSERT_EQ(reports.size(), static_cast<size_t>(n - 1));  // the stopped rank is killed, not reported
  for (const Report& r : reports) {
    EXPECT_EQ(r.code, braidTimeout) << r.describe();
    EXPECT_NE(r.msg.find("rank 2: not responding"), std::string::npos) << r.describe();
    EXPECT_NE(r.msg.find("diagnosis: rank 2 did not answer"), std::string::npos) << r.describe();
    EXPECT_LT(std::atoi(r.msg.c_str() + std::strlen("took_ms=")), 1000 + 2000) << r.describe();
  }
  // The FIFOs to the stopped rank (which never attached them) are gone with the survivors'
  // communicators: a stalled call's connections are closed on destroy, and closed ones unlinked.
  EXPECT_EQ(leftoverSegments(reports), "");
}

// The watchdog's other stalls across processes (BRAID_TIMEOUT=1), the last rank instead of the
// all-reduce: skipping it (alive and answering), leaving (its communicator destroyed, its process
// gone), or calling a broadcast. No rank hangs or returns success, each failing rank does so
// within the timeout + 2 s, naming the last rank: "has not reached" for the skip, the rank that
// left for the exit (the watchdog's "exited" or the transport's own word, whichever comes first),
// a mismatch for the broadcast.
TEST_P(Stalled, ASkippingLeavingOrMismatchedRankIsNamed) {
  const TransportCase& t = kTransports[GetParam()];
  const int n = 3;
  for (const char* how : {"skip", "exit", "broadcast"}) {
    SCOPED_TRACE(how);
    std::vector<Report> reports =
        runRanks(n, allRanks(n), "stall",
                 withEnv(t.env, {"BRAID_DEVICE=cpu", "BRAID_TIMEOUT=1", "BRAID_TEST_DELAY_MS=4000",
                                 ("BRAID_TEST_STALL=" + std::string(how)).c_str()}));
    EXPECT_EQ(stallReportsProblem(reports, how, n, 1000), "");
    EXPECT_EQ(leftoverSegments(reports), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, Stalled, ::testing::Range(0, 3),
                         [](const auto& p) { return std::string(kTransports[p.param].name); });

// BRAID_TOPO_DUMP_FILE: the ranks gather their hosts' topologies through the bootstrap and rank 0
// writes one file with every host once (here 3 ranks on two pretended hosts).
TEST(Topology, DumpHoldsEveryHostOnce) {
  std::string path = "/tmp/braid-topo-dump-" + std::to_string(getpid()) + ".xml";
  std::vector<Report> reports =
      runRanks(3, allRanks(3), "id", {"BRAID_TEST_HOSTS=2", "BRAID_DEVICE=cpu", "BRAID_TOPO_DUMP_FILE=" + path});
  for (const Report& r : reports) EXPECT_TRUE(r.ok()) << r.describe();
  topology::System system;
  Status st = topology::readTopologyFile(path, &system);
  std::remove(path.c_str());
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(system.hosts.size(), 2u);
  EXPECT_EQ(system.hosts[0].id, "test-host-0");
  EXPECT_EQ(system.hosts[1].id, "test-host-1");
  for (const topology::Host& h : system.hosts) EXPECT_GE(h.count(topology::NodeKind::kCpu), 1);
}

TEST(Split, EvenAndOddHalves) {
  for (int n : {2, 5}) {
    std::vector<Report> reports = runRanks(n, allRanks(n), "split", {});
    ASSERT_EQ(reports.size(), static_cast<size_t>(n));
    for (const Report& r : reports) EXPECT_TRUE(r.ok()) << r.describe();
  }
}

}  // namespace
}  // namespace braid::test

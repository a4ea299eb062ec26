// The progress watchdog (BRAID_TIMEOUT, core/watchdog.h): the report's diagnosis from given
// states, then thread ranks on host memory that stall in the ways a job does: a rank that has not
// reached the call, ranks in different calls on connections that never meet, and the report-only
// action. tests/multiproc has a rank that is stopped (SIGSTOP) in another process.
#include "core/watchdog.h"

#include <arpa/inet.h>
#include <braid/braid.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"
#include "core/comm.h"
#include "core/host_engine.h"
#include "core/log.h"
#include "net/socket.h"
#include "thread_ranks.h"

namespace braid::test {
namespace {

using core::PeerState;
using core::WatchState;
using Clock = std::chrono::steady_clock;

transport::CallTag allReduceTag(uint32_t seq, uint64_t count) {
  transport::CallTag t;
  t.kind = static_cast<uint8_t>(1 + static_cast<int>(algo::Coll::kAllReduce));
  t.seq = seq;
  t.count = count;
  t.type = braidFloat32;
  t.op = braidSum;
  return t;
}

PeerState inCall(int rank, uint64_t seq, const transport::CallTag& tag, int waitingOn) {
  PeerState p;
  p.state.magic = core::kWatchStateMagic;
  p.state.rank = rank;
  p.state.seq = seq;
  p.state.inCall = 1;
  p.state.waitingOn = waitingOn;
  p.state.tag = tag;
  p.state.collectives = tag.seq;
  return p;
}

std::string report(int self, const std::vector<PeerState>& ranks) {
  return core::stallReport(self, 2.0, ranks, core::HostEngine::describeTag);
}

TEST(WatchdogReport, NamesARankThatHasNotReachedTheCall) {
  PeerState idle = inCall(2, 4, allReduceTag(4, 64), -1);
  idle.state.inCall = 0;
  std::string r = report(0, {inCall(0, 5, allReduceTag(5, 64), 2), inCall(1, 5, allReduceTag(5, 64), 0), idle});
  EXPECT_NE(r.find("rank 0 of 3 made no progress for 2.0 s in allreduce #5 (64 x float32, sum) [call 5]"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("rank 0 (this rank): in allreduce #5 (64 x float32, sum) [call 5], 0 step(s), waiting for rank 2"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("rank 2: idle after allreduce #4"), std::string::npos) << r;
  EXPECT_NE(r.find("diagnosis: rank 2 has not reached allreduce #5 (64 x float32, sum)"), std::string::npos) << r;
  EXPECT_EQ(r.find("mismatched"), std::string::npos) << r;
}

// A host rank's line names its algorithm, the channel of the FIFO it waits on and which way; an
// algorithm number out of range (a peer's bytes) is left out.
TEST(WatchdogReport, HostRanksNameTheirAlgorithmChannelAndWait) {
  PeerState a = inCall(0, 5, allReduceTag(5, 64), 1), b = inCall(1, 5, allReduceTag(5, 64), 0);
  a.state.algorithm = static_cast<int16_t>(algo::Algo::kRing);
  a.state.channel = 1;
  a.state.steps = 3;
  b.state.algorithm = 999;
  b.state.channel = 0;
  b.state.sending = 1;
  std::string r = report(0, {a, b});
  EXPECT_NE(r.find("rank 0 (this rank): in allreduce #5 (64 x float32, sum) [call 5], ring, channel 1, 3 step(s), "
                   "waiting for rank 1 to send a slot"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("rank 1: in allreduce #5 (64 x float32, sum) [call 5], channel 0, 0 step(s), waiting for rank 0 to "
                   "free a slot it sends to"),
            std::string::npos)
      << r;
}

TEST(WatchdogReport, NamesMismatchedCallsAndRanksThatAreGone) {
  transport::CallTag bcast = allReduceTag(3, 64);
  bcast.kind = static_cast<uint8_t>(1 + static_cast<int>(algo::Coll::kBroadcast));
  bcast.root = 0;
  PeerState stopped, exited;
  stopped.kind = PeerState::Kind::kNotResponding;
  exited.kind = PeerState::Kind::kExited;
  std::string r =
      report(1, {inCall(0, 3, allReduceTag(3, 64), 1), inCall(1, 3, bcast, 0), stopped, exited, PeerState{}});
  EXPECT_NE(r.find("rank 2: not responding"), std::string::npos) << r;
  EXPECT_NE(r.find("rank 3: exited"), std::string::npos) << r;
  EXPECT_NE(r.find("rank 3 exited; rank 2 did not answer"), std::string::npos) << r;
  EXPECT_NE(r.find("mismatched calls: rank 0 is in another call than broadcast #3 (64 x float32, root 0) [call 3]"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("rank 4: has made no call yet"), std::string::npos) << r;
}

// Send/recv groups are not numbered alike across ranks: a rank in one is compared by what the peer
// it waits for is doing, and a peer past this rank's collective is a mismatch, not "behind".
TEST(WatchdogReport, SendRecvAndRanksPastTheCall) {
  transport::CallTag p2p;
  p2p.kind = exec::kP2pTagKind;
  PeerState idle = inCall(1, 7, allReduceTag(2, 8), -1);
  idle.state.inCall = 0;
  std::string r = report(0, {inCall(0, 3, p2p, 1), idle});
  EXPECT_NE(r.find("diagnosis: rank 1, which this rank waits for, is in no call"), std::string::npos) << r;
  r = report(0, {inCall(0, 3, p2p, 1), inCall(1, 5, p2p, 0)});
  EXPECT_NE(r.find("the sends and receives do not pair up"), std::string::npos) << r;
  r = report(0, {inCall(0, 2, allReduceTag(2, 8), 1), inCall(1, 3, allReduceTag(3, 8), 0)});
  EXPECT_NE(r.find("mismatched calls: rank 1 is in another call than allreduce #2"), std::string::npos) << r;
  EXPECT_EQ(r.find("not reached"), std::string::npos) << r;
}

// GPU ranks (gpu 1: a kernel runs the call, 2: its kernel has not begun): a kernel that has not
// begun is named first, a running one by the rank its lane waits for, and this rank's detail line
// (its kernel and lanes, from the engine) follows its own line.
TEST(WatchdogReport, GpuRanksNameTheirKernels) {
  PeerState waiting = inCall(0, 1, allReduceTag(1, 8), 1), queued = inCall(1, 1, allReduceTag(1, 8), -1);
  waiting.state.gpu = 1;
  waiting.state.steps = 3;
  queued.state.gpu = 2;
  std::string r = core::stallReport(0, 2.0, {waiting, queued}, core::HostEngine::describeTag, false,
                                    "GPU: launch 1 (braid_AllReduce_Ring_LL) runs; channel 0 lane 0 waits");
  EXPECT_NE(r.find("rank 0 (this rank): in allreduce #1 (8 x float32, sum) [call 1], its kernel waits for rank 1 "
                   "(count 3)\n    GPU: launch 1 (braid_AllReduce_Ring_LL) runs"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("rank 1: in allreduce #1 (8 x float32, sum) [call 1], its kernel has not begun\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("diagnosis: rank 1's kernel has not begun on the GPU"), std::string::npos) << r;
  EXPECT_EQ(r.find("a bug in braid"), std::string::npos) << r;
  waiting.state.waitingOn = -1;
  r = core::stallReport(1, 2.0, {waiting, queued}, core::HostEngine::describeTag);
  EXPECT_NE(r.find("rank 0: in allreduce #1 (8 x float32, sum) [call 1], its kernel runs\n"), std::string::npos) << r;
}

TEST(WatchdogReport, EveryRankStuckInTheSameCallIsABraidBug) {
  std::string r = report(0, {inCall(0, 1, allReduceTag(1, 8), 1), inCall(1, 1, allReduceTag(1, 8), 0)});
  EXPECT_NE(r.find("every rank is in this call and none moves"), std::string::npos) << r;
}

TEST(WatchdogSettings, BadValuesAreErrors) {
  setenv("BRAID_TIMEOUT_ACTION", "explode", 1);
  core::WatchSettings w;
  Status s = core::watchSettings(&w);
  unsetenv("BRAID_TIMEOUT_ACTION");
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("BRAID_TIMEOUT_ACTION='explode' must be report or abort"), std::string::npos);
  setenv("BRAID_TIMEOUT", "-3", 1);
  s = core::watchSettings(&w);
  unsetenv("BRAID_TIMEOUT");
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("BRAID_TIMEOUT=-3"), std::string::npos);
}

// The log goes to a file of its own while this lives (BRAID_DEBUG_FILE); text() ends that and
// returns what was written.
class LogToFile {
 public:
  explicit LogToFile(const std::string& name) : path_("/tmp/braid-" + name + "-" + std::to_string(getpid()) + ".log") {
    setenv("BRAID_DEBUG_FILE", path_.c_str(), 1);
    log::reloadFromEnvironment();
  }
  std::string text() {
    unsetenv("BRAID_DEBUG_FILE");
    log::reloadFromEnvironment();
    std::ifstream in(path_);
    std::stringstream all;
    all << in.rdbuf();
    std::remove(path_.c_str());
    return all.str();
  }

 private:
  std::string path_;
};

int threadsOfThisProcess() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// Ranks 0 and 1 all-reduce while rank 2 never calls: within the timeout + 2 s a stuck rank returns
// braidTimeout with the report naming rank 2; the others stop too.
TEST(Watchdog, ARankThatSkipsTheCallIsNamed) {
  const int before = threadsOfThisProcess();
  ThreadRanks ranks(3, "ring", {{"BRAID_TIMEOUT", "1"}});
  EXPECT_GE(threadsOfThisProcess(), before + 2);  // the server and the checker
  std::vector<float> data[3];
  for (auto& d : data) d.assign(1024, 1.0f);
  std::atomic<int> returned{0};
  std::vector<double> took(3, 0);
  std::vector<std::string> errors;
  std::vector<braidResult_t> rc = ranks.each(
      [&](int r) {
        if (r == 2) {  // alive, answering, but not in the call
          auto until = Clock::now() + std::chrono::seconds(10);
          while (returned.load() < 2 && Clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          return braidSuccess;
        }
        auto t0 = Clock::now();
        braidResult_t res =
            braidAllReduce(data[r].data(), data[r].data(), data[r].size(), braidFloat32, braidSum, ranks[r], nullptr);
        took[r] = std::chrono::duration<double>(Clock::now() - t0).count();
        returned.fetch_add(1);
        return res;
      },
      &errors);
  int reported = 0;
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(rc[r], braidSuccess) << "rank " << r;
    EXPECT_LT(took[r], 1.0 + 2.0) << "rank " << r;
    if (rc[r] == braidTimeout) {
      ++reported;
      EXPECT_NE(errors[r].find("diagnosis: rank 2 has not reached allreduce #1 (1024 x float32, sum)"),
                std::string::npos)
          << errors[r];
      EXPECT_NE(errors[r].find("rank 2: has made no call yet"), std::string::npos) << errors[r];
      EXPECT_NE(errors[r].find("waiting for rank"), std::string::npos) << errors[r];
      EXPECT_NE(errors[r].find("[call 1], ring, channel "), std::string::npos) << errors[r];
      // The communicator is failed with the same report.
      braidResult_t async = braidSuccess;
      EXPECT_EQ(braidCommGetAsyncError(ranks[r], &async), braidSuccess);
      EXPECT_EQ(async, braidTimeout);
    }
  }
  EXPECT_GE(reported, 1) << errors[0] << "\n" << errors[1];
}

// Junk on a watch listener (a wrong magic, a query cut short and left open, a query for another
// communicator) is dropped or answered "no such communicator"; the watchdog still reports.
TEST(Watchdog, JunkOnTheListenerChangesNothing) {
  ThreadRanks ranks(2, "ring", {{"BRAID_TIMEOUT", "1"}});
  std::shared_ptr<core::Comm> comm;
  ASSERT_TRUE(api::lookupComm(ranks[1], "comm", &comm).isOk());
  ASSERT_NE(comm->watch(), nullptr);
  const uint16_t port = comm->watch()->port();
  ASSERT_NE(port, 0);
  // The listener is on the bootstrap's interface, as every rank's; the sockets stay open (fds).
  std::vector<net::Socket> held;
  auto connectTo = [&] {
    net::SocketAddress to = comm->bootstrap().peerAddresses()[1];
    to.setPort(port);
    held.emplace_back();
    EXPECT_TRUE(
        net::Socket::connect(to, "rank 1's watch listener", net::Deadline::in(2000, nullptr), &held.back()).isOk());
    return held.back().fd();
  };
  const net::Deadline soon = net::Deadline::in(2000, nullptr);
  connectTo();
  const char bytes[16] = "not a query!!!!";
  EXPECT_TRUE(held[0].sendAll(bytes, sizeof(bytes), soon).isOk());
  connectTo();
  EXPECT_TRUE(held[1].sendAll(bytes, 8, soon).isOk());  // cut short, left open
  connectTo();
  core::WatchQuery q;
  q.magic = core::kWatchQueryMagic;
  q.rank = 1;
  q.commKey = comm->idHash() ^ 1;
  EXPECT_TRUE(held[2].sendAll(&q, sizeof(q), soon).isOk());
  core::WatchState answer;
  answer.magic = 1;
  EXPECT_TRUE(held[2].recvAll(&answer, sizeof(answer), soon).isOk());
  EXPECT_EQ(answer.magic, 0u);  // no such communicator
  char c;
  EXPECT_EQ(held[0].recvAll(&c, 1, soon).code(), Code::kRemoteError);  // closed without an answer
  // Rank 0 all-reduces alone; rank 1 (whose listener got the junk) answers its query.
  std::vector<float> data(64, 1.0f);
  braidResult_t rc = braidAllReduce(data.data(), data.data(), data.size(), braidFloat32, braidSum, ranks[0], nullptr);
  EXPECT_EQ(rc, braidTimeout);
  EXPECT_NE(std::string(braidGetLastError()).find("diagnosis: rank 1 has not reached allreduce #1 (64 x float32, sum)"),
            std::string::npos)
      << braidGetLastError();
}

// Rank 0 waits in a receive from rank 1 while rank 1 all-reduces: their calls use different
// connections, so no tag ever meets the other; the watchdog names the mismatch.
TEST(Watchdog, CallsOnConnectionsThatNeverMeetAreAMismatch) {
  ThreadRanks ranks(2, "ring", {{"BRAID_TIMEOUT", "1"}});
  std::vector<float> data[2];
  for (auto& d : data) d.assign(256, 1.0f);
  std::vector<std::string> errors;
  std::vector<braidResult_t> rc = ranks.each(
      [&](int r) {
        if (r == 0) return braidRecv(data[0].data(), 256, braidFloat32, 1, ranks[0], nullptr);
        return braidAllReduce(data[1].data(), data[1].data(), 256, braidFloat32, braidSum, ranks[1], nullptr);
      },
      &errors);
  bool named = false;
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(rc[r], braidSuccess) << "rank " << r;
    named = named || (rc[r] == braidTimeout && errors[r].find("mismatched calls: rank ") != std::string::npos &&
                      errors[r].find("send/recv [call 1]") != std::string::npos &&
                      errors[r].find("allreduce #1 (256 x float32, sum) [call 1]") != std::string::npos);
  }
  EXPECT_TRUE(named) << errors[0] << "\n" << errors[1];
}

// With the watchdog off (BRAID_TIMEOUT unset, the default) nothing changes: a rank that comes to
// the call 2.5 s late is waited for, no report is logged, and every rank's all-reduce is right.
TEST(Watchdog, OffALateRankIsWaitedForWithoutAReport) {
  LogToFile log("watchdog-off");
  std::vector<float> data[3];
  std::vector<braidResult_t> rc;
  std::vector<std::string> errors;
  {
    ThreadRanks ranks(3, "ring", {});
    for (int r = 0; r < 3; ++r) data[r].assign(1024, static_cast<float>(r + 1));
    rc = ranks.each(
        [&](int r) {
          if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
          return braidAllReduce(data[r].data(), data[r].data(), data[r].size(), braidFloat32, braidSum, ranks[r],
                                nullptr);
        },
        &errors);
  }
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(rc[r], braidSuccess) << "rank " << r << ": " << errors[r];
    for (float v : data[r]) ASSERT_EQ(v, 6.0f) << "rank " << r;
  }
  const std::string text = log.text();
  EXPECT_EQ(text.find("braid watchdog"), std::string::npos) << text;
}

// BRAID_TIMEOUT_ACTION=report: the report is logged and the call keeps waiting (until the test
// aborts it); the communicator is not failed by the watchdog.
TEST(Watchdog, ReportOnlyLogsAndKeepsWaiting) {
  LogToFile log("watchdog");
  {
    ThreadRanks ranks(2, "ring", {{"BRAID_TIMEOUT", "1"}, {"BRAID_TIMEOUT_ACTION", "report"}});
    std::vector<float> data(64, 1.0f);
    std::atomic<bool> done{false};
    braidResult_t rc = braidSuccess;
    std::thread caller([&] {
      rc = braidAllReduce(data.data(), data.data(), data.size(), braidFloat32, braidSum, ranks[0], nullptr);
      done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    EXPECT_FALSE(done.load()) << "the call ended under BRAID_TIMEOUT_ACTION=report";
    braidResult_t async = braidInternalError;
    EXPECT_EQ(braidCommGetAsyncError(ranks[0], &async), braidSuccess);
    EXPECT_EQ(async, braidSuccess);
    braidCommAbort(ranks[0]);
    caller.join();
    EXPECT_NE(rc, braidTimeout);
    braidCommAbort(ranks[1]);
    ranks.markAborted();
  }
  const std::string text = log.text();
  EXPECT_NE(text.find("rank 0 of 2 made no progress for"), std::string::npos) << text;
  EXPECT_NE(text.find("diagnosis: rank 1 has not reached allreduce #1 (64 x float32, sum)"), std::string::npos) << text;
}

// SIGUSR1 while the watchdog runs: the report of a call still within its timeout is logged, and
// the call goes on (here until the test aborts it). Once the last watch is gone SIGUSR1 is back at
// its default.
TEST(Watchdog, Sigusr1LogsTheReportOnRequest) {
  LogToFile log("watchdog-usr1");
  {
    ThreadRanks ranks(2, "ring", {{"BRAID_TIMEOUT", "60"}});
    struct sigaction now {};
    ASSERT_EQ(sigaction(SIGUSR1, nullptr, &now), 0);
    ASSERT_NE(now.sa_handler, SIG_DFL) << "the watchdog did not take SIGUSR1 (raising it would kill the test)";
    std::vector<float> data(64, 1.0f);
    std::atomic<bool> done{false};
    std::thread caller([&] {
      braidAllReduce(data.data(), data.data(), data.size(), braidFloat32, braidSum, ranks[0], nullptr);
      done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    raise(SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    EXPECT_FALSE(done.load());
    braidResult_t async = braidInternalError;
    EXPECT_EQ(braidCommGetAsyncError(ranks[0], &async), braidSuccess);
    EXPECT_EQ(async, braidSuccess);
    braidCommAbort(ranks[0]);
    caller.join();
    braidCommAbort(ranks[1]);
    ranks.markAborted();
  }
  struct sigaction after {};
  EXPECT_EQ(sigaction(SIGUSR1, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_DFL);
  const std::string text = log.text();
  EXPECT_NE(text.find("braid watchdog, on request (SIGUSR1): rank 0 of 2 in allreduce #1"), std::string::npos) << text;
  EXPECT_NE(text.find("braid watchdog, on request (SIGUSR1): rank 1 of 2, no call yet"), std::string::npos) << text;
  EXPECT_NE(text.find("diagnosis: rank 1 has not reached allreduce #1"), std::string::npos) << text;
}

}  // namespace
}  // namespace braid::test

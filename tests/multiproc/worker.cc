// braid_mp_worker: one rank of a multi-process test, started by the harness (or by mpirun).
//
//   braid_mp_worker id      init from BRAID_TEST_ID (hex unique id), BRAID_TEST_RANK, BRAID_TEST_NRANKS
//   braid_mp_worker env     init from launcher variables (torchrun / Open MPI / Slurm)
//   braid_mp_worker split   init from the id, split into even and odd ranks, exercise the halves
//   braid_mp_worker die     init from the id; rank BRAID_TEST_VICTIM exits at once, the others
//                           enter a barrier and report what it gave them
//   braid_mp_worker killcoll  init from the id (host memory), one all-reduce; then rank
//                           BRAID_TEST_VICTIM exits and the others start a second all-reduce, which
//                           must fail (not hang), and leave no shared memory behind
//   braid_mp_worker coll    init from the id (host memory), run every collective and a send/recv
//                           ring and check each result against a plain loop; prints the prefix of
//                           the communicator's shared-memory names for the test to check, once
//                           every rank has exited, that none is left. BRAID_TEST_LARGE=1
//                           adds a 4 MB all-reduce (many full FIFO slots); BRAID_TEST_HOSTS=k makes
//                           rank r claim host r % k (BRAID_HOSTID), so ranks mix shm and sockets
//   braid_mp_worker mismatch  init from the id (host memory), one all-reduce of 1000 elements in which
//                           the last rank differs by BRAID_TEST_MISMATCH: "op" (max, not sum) or
//                           "type" (int32, not float32); reports what the call returned
//   braid_mp_worker exitrace  init from the id (host memory); rank 0 sends a small message to every
//                           other rank, destroys its communicator and exits at once; the others
//                           wait BRAID_TEST_DELAY_MS first, then receive it and check it (the
//                           sender is gone before they look: its message must still be there)
//   braid_mp_worker stall   init from the id (host memory, BRAID_TIMEOUT set by the test); the last
//                           rank stops itself (SIGSTOP; a child of it kills it BRAID_TEST_DELAY_MS
//                           later) while the others all-reduce; reports what their call returned
//   (with BRAID_TEST_FROM_ENV=1 every scenario but id initialises from launcher variables instead)
//
// After init it exercises the bootstrap (all-gather, barrier, tagged ring send/recv, checked against
// values each rank can compute for every other) and prints one line:
//   RESULT rank=<r> nranks=<n> code=<braidResult_t> init_ns=<start>,<end> msg=<text>
#include <braid/braid.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"
#include "harness.h"

namespace {

using braid::Status;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

struct Contribution {
  int rank;
  int pid;
  int64_t value;
};

int64_t valueOf(int rank, int nranks) { return int64_t{rank} * 7919 + nranks; }

// All-gather, barrier and a ring of tagged messages; every received value is checked.
Status exercise(braid::bootstrap::Bootstrap& b) {
  int r = b.rank(), n = b.nranks();
  std::vector<Contribution> all(n);
  all[r] = {r, static_cast<int>(getpid()), valueOf(r, n)};
  BRAID_RETURN_IF_ERROR(b.allGather(all.data(), sizeof(Contribution)));
  std::set<int> pids;
  for (int i = 0; i < n; ++i) {
    if (all[i].rank != i || all[i].value != valueOf(i, n)) {
      return braid::internalError("all-gather slot " + std::to_string(i) + " holds rank " +
                                  std::to_string(all[i].rank) + " value " + std::to_string(all[i].value));
    }
    pids.insert(all[i].pid);
  }
  BRAID_RETURN_IF_ERROR(b.barrier());
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  int64_t a = valueOf(r, n) * 3 + 1, c = valueOf(r, n) * 5;
  BRAID_RETURN_IF_ERROR(b.send(next, 7, &a, sizeof(a)));
  BRAID_RETURN_IF_ERROR(b.send(next, 9, &c, sizeof(c)));
  int64_t got9 = 0, got7 = 0;  // received in the other order than sent
  BRAID_RETURN_IF_ERROR(b.recv(prev, 9, &got9, sizeof(got9)));
  BRAID_RETURN_IF_ERROR(b.recv(prev, 7, &got7, sizeof(got7)));
  if (got7 != valueOf(prev, n) * 3 + 1 || got9 != valueOf(prev, n) * 5) {
    return braid::internalError("ring message from rank " + std::to_string(prev) + " is wrong");
  }
  BRAID_RETURN_IF_ERROR(b.barrier());
  return Status::ok();
}

// An all-reduce of (1 << 20) + 3 floats with integer-valued inputs (exact sums), checked.
Status largeAllReduce(braidComm_t comm, int r, int n) {
  const size_t count = (size_t{1} << 20) + 3;
  std::vector<float> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((r * 7 + i) % 13);
  braidResult_t rc = braidAllReduce(data.data(), data.data(), count, braidFloat32, braidSum, comm, nullptr);
  if (rc != braidSuccess)
    return Status(static_cast<braid::Code>(rc), std::string("large allreduce: ") + braidGetLastError());
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int q = 0; q < n; ++q) want += static_cast<float>((q * 7 + i) % 13);
    if (data[i] != want) {
      return braid::internalError("large allreduce: element " + std::to_string(i) + " is " + std::to_string(data[i]) +
                                  ", expected " + std::to_string(want));
    }
  }
  return Status::ok();
}

// A large broadcast whose root overwrites its buffer as soon as the call returns (the others must
// receive what it held during the call: a call returns only once the network has read what it
// sent from the caller's memory, sends by reference), and a large out-of-place all-reduce whose
// ranks do the same with their input; then large send/recv (overwritten too) and all-to-all.
Status largeCallsThenOverwrite(braidComm_t comm, int r, int n) {
  const size_t count = (size_t{1} << 20) + 5;
  auto value = [](int q, size_t i) { return static_cast<float>((q * 5 + i) % 11); };
  std::vector<float> buf(count), out(count);
  for (size_t i = 0; i < count; ++i) buf[i] = value(0, i);
  braidResult_t rc = braidBroadcast(buf.data(), buf.data(), count, braidFloat32, 0, comm, nullptr);
  if (r == 0) std::fill(buf.begin(), buf.end(), -1.0f);
  if (rc != braidSuccess)
    return Status(static_cast<braid::Code>(rc), std::string("large broadcast: ") + braidGetLastError());
  for (size_t i = 0; r != 0 && i < count; ++i) {
    if (buf[i] != value(0, i)) {
      return braid::internalError("large broadcast: element " + std::to_string(i) + " is " + std::to_string(buf[i]) +
                                  ", expected " + std::to_string(value(0, i)));
    }
  }
  for (size_t i = 0; i < count; ++i) buf[i] = value(r, i);
  rc = braidAllReduce(buf.data(), out.data(), count, braidFloat32, braidSum, comm, nullptr);
  std::fill(buf.begin(), buf.end(), -1.0f);
  if (rc != braidSuccess)
    return Status(static_cast<braid::Code>(rc), std::string("large allreduce: ") + braidGetLastError());
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int q = 0; q < n; ++q) want += value(q, i);
    if (out[i] != want) {
      return braid::internalError("large out-of-place allreduce: element " + std::to_string(i) + " is " +
                                  std::to_string(out[i]) + ", expected " + std::to_string(want));
    }
  }
  // Send/recv: each rank sends its block to the next and overwrites it once the group returns; an
  // all-to-all of large blocks.
  for (size_t i = 0; i < count; ++i) buf[i] = value(r, i);
  braidGroupStart();
  braidSend(buf.data(), count, braidFloat32, (r + 1) % n, comm, nullptr);
  braidRecv(out.data(), count, braidFloat32, (r + n - 1) % n, comm, nullptr);
  rc = braidGroupEnd();
  std::fill(buf.begin(), buf.end(), -1.0f);
  if (rc != braidSuccess)
    return Status(static_cast<braid::Code>(rc), std::string("large send/recv: ") + braidGetLastError());
  for (size_t i = 0; i < count; ++i) {
    if (out[i] != value((r + n - 1) % n, i)) {
      return braid::internalError("large send/recv: element " + std::to_string(i) + " is " + std::to_string(out[i]) +
                                  ", expected " + std::to_string(value((r + n - 1) % n, i)));
    }
  }
  const size_t block = count / static_cast<size_t>(n);
  std::vector<float> all(block * n), got(block * n);
  for (size_t i = 0; i < all.size(); ++i) all[i] = value(r, i);  // block q goes to rank q
  rc = braidAllToAll(all.data(), got.data(), block, braidFloat32, comm, nullptr);
  if (rc != braidSuccess)
    return Status(static_cast<braid::Code>(rc), std::string("large all-to-all: ") + braidGetLastError());
  // In place too: the input is staged (api_coll.cc), and its sends by reference read the staging
  // copy, which lives until the call returns.
  for (int pass = 0; pass < 2; ++pass) {
    const bool inPlace = pass == 1;
    if (inPlace) {
      got = all;
      rc = braidAllToAll(got.data(), got.data(), block, braidFloat32, comm, nullptr);
      if (rc != braidSuccess)
        return Status(static_cast<braid::Code>(rc), std::string("large in-place all-to-all: ") + braidGetLastError());
    }
    for (size_t i = 0; i < got.size(); ++i) {
      const int from = static_cast<int>(i / block);
      const float want = value(from, static_cast<size_t>(r) * block + i % block);
      if (got[i] != want) {
        return braid::internalError(std::string(inPlace ? "large in-place" : "large") + " all-to-all: element " +
                                    std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                                    std::to_string(want));
      }
    }
  }
  return Status::ok();
}

// Every collective across processes, each result checked element by element.
Status collectives(braidComm_t comm, int r, int n) {
  if (envInt("BRAID_TEST_LARGE", 0) != 0) {
    BRAID_RETURN_IF_ERROR(largeAllReduce(comm, r, n));
    BRAID_RETURN_IF_ERROR(largeCallsThenOverwrite(comm, r, n));
  }
  const size_t count = 10007;  // not a multiple of anything: ragged rounds and chunks
  std::vector<float> in(count * n), out(count * n);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((r * 31 + i) % 17);
  auto check = [&](const char* what, size_t elems, const std::function<float(size_t)>& want) -> Status {
    for (size_t i = 0; i < elems; ++i) {
      if (out[i] != want(i)) {
        return braid::internalError(std::string(what) + ": element " + std::to_string(i) + " is " +
                                    std::to_string(out[i]) + ", expected " + std::to_string(want(i)));
      }
    }
    return Status::ok();
  };
  auto input = [&](int q, size_t i) { return static_cast<float>((q * 31 + i) % 17); };
  auto fail = [](const char* what, braidResult_t rc) {
    return Status(static_cast<braid::Code>(rc), std::string(what) + ": " + braidGetLastError());
  };
  braidResult_t rc = braidAllReduce(in.data(), out.data(), count, braidFloat32, braidSum, comm, nullptr);
  if (rc != braidSuccess) return fail("allreduce", rc);
  BRAID_RETURN_IF_ERROR(check("allreduce", count, [&](size_t i) {
    float s = 0;
    for (int q = 0; q < n; ++q) s += input(q, i);
    return s;
  }));
  rc = braidAllGather(in.data(), out.data(), count, braidFloat32, comm, nullptr);
  if (rc != braidSuccess) return fail("allgather", rc);
  BRAID_RETURN_IF_ERROR(check("allgather", count * n, [&](size_t i) { return input(int(i / count), i % count); }));
  rc = braidReduceScatter(in.data(), out.data(), count, braidFloat32, braidMax, comm, nullptr);
  if (rc != braidSuccess) return fail("reducescatter", rc);
  BRAID_RETURN_IF_ERROR(check("reducescatter", count, [&](size_t i) {
    float m = 0;
    for (int q = 0; q < n; ++q) m = std::max(m, input(q, r * count + i));
    return m;
  }));
  rc = braidBroadcast(in.data(), out.data(), count, braidFloat32, n - 1, comm, nullptr);
  if (rc != braidSuccess) return fail("broadcast", rc);
  BRAID_RETURN_IF_ERROR(check("broadcast", count, [&](size_t i) { return input(n - 1, i); }));
  // Reduce to rank 1: off the first rank of its host, so that across uneven hosts a host of one
  // rank serves the root's rail for a local index it does not have (hierReduce).
  const int reduceRoot = 1 % n;
  rc = braidReduce(in.data(), out.data(), count, braidFloat32, braidSum, reduceRoot, comm, nullptr);
  if (rc != braidSuccess) return fail("reduce", rc);
  if (r == reduceRoot) {
    BRAID_RETURN_IF_ERROR(check("reduce", count, [&](size_t i) {
      float s = 0;
      for (int q = 0; q < n; ++q) s += input(q, i);
      return s;
    }));
  }
  rc = braidAllToAll(in.data(), out.data(), count, braidFloat32, comm, nullptr);
  if (rc != braidSuccess) return fail("alltoall", rc);
  BRAID_RETURN_IF_ERROR(
      check("alltoall", count * n, [&](size_t i) { return input(int(i / count), r * count + i % count); }));
  braidGroupStart();
  braidSend(in.data(), count, braidFloat32, (r + 1) % n, comm, nullptr);
  braidRecv(out.data(), count, braidFloat32, (r + n - 1) % n, comm, nullptr);
  rc = braidGroupEnd();
  if (rc != braidSuccess) return fail("sendrecv", rc);
  return check("sendrecv", count, [&](size_t i) { return input((r + n - 1) % n, i); });
}

// The prefix of the names in /dev/shm that belong to the communicator with this key.
std::string shmPrefix(uint64_t key) {
  char prefix[40];
  std::snprintf(prefix, sizeof(prefix), "braid-%016llx", static_cast<unsigned long long>(key));
  return prefix;
}

// Names in /dev/shm that belong to the communicator with this key.
std::string leftoverSegments(uint64_t key) {
  const std::string prefix = shmPrefix(key);
  std::string found;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) found += std::string(" ") + e->d_name;
    }
    closedir(d);
  }
  return found;
}

Status exerciseHandle(braidComm_t handle) {
  std::shared_ptr<braid::core::Comm> comm;
  BRAID_RETURN_IF_ERROR(braid::api::lookupComm(handle, "comm", &comm));
  return exercise(comm->bootstrap());
}

int report(int rank, int nranks, braidResult_t code, int64_t start, int64_t end, const std::string& msg) {
  std::printf("RESULT rank=%d nranks=%d code=%d init_ns=%lld,%lld msg=%s\n", rank, nranks, static_cast<int>(code),
              static_cast<long long>(start), static_cast<long long>(end), msg.c_str());
  std::fflush(stdout);
  return code == braidSuccess ? 0 : 1;
}

braidResult_t fromStatus(const Status& s) { return static_cast<braidResult_t>(s.code()); }

// The key that names the communicator's shared memory, 0 if the handle is bad.
uint64_t keyOf(braidComm_t handle) {
  std::shared_ptr<braid::core::Comm> c;
  return braid::api::lookupComm(handle, "comm", &c).isOk() ? c->instanceKey() : 0;
}

// Rank 0 sends 257 floats to every other rank and leaves; the others receive them late.
Status exitRace(braidComm_t comm, int r, int n) {
  const size_t count = 257;
  auto value = [](int q, size_t i) { return static_cast<float>(q * 1000 + i); };
  std::vector<float> buf(count);
  if (r == 0) {
    for (size_t i = 0; i < count; ++i) buf[i] = value(0, i);
    braidGroupStart();
    for (int q = 1; q < n; ++q) braidSend(buf.data(), count, braidFloat32, q, comm, nullptr);
    braidResult_t rc = braidGroupEnd();
    if (rc != braidSuccess) return Status(static_cast<braid::Code>(rc), std::string("send: ") + braidGetLastError());
    return Status::ok();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(envInt("BRAID_TEST_DELAY_MS", 300)));
  braidResult_t rc = braidRecv(buf.data(), count, braidFloat32, 0, comm, nullptr);
  if (rc != braidSuccess) return Status(static_cast<braid::Code>(rc), std::string("recv: ") + braidGetLastError());
  for (size_t i = 0; i < count; ++i) {
    if (buf[i] != value(0, i)) {
      return braid::internalError("element " + std::to_string(i) + " is " + std::to_string(buf[i]) + ", expected " +
                                  std::to_string(value(0, i)));
    }
  }
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  int rank = envInt("BRAID_TEST_RANK", -1), nranks = envInt("BRAID_TEST_NRANKS", 0);
  if (int hosts = envInt("BRAID_TEST_HOSTS", 0); hosts > 0) {
    // Pretend to be on host (rank % hosts): ranks of one "host" share memory, the others use sockets.
    setenv("BRAID_HOSTID", ("test-host-" + std::to_string(rank % hosts)).c_str(), 1);
  }
  braidComm_t comm = nullptr;
  int64_t start = nowNs();
  braidResult_t r;
  if (scenario == "env" || (std::getenv("BRAID_TEST_FROM_ENV") != nullptr && scenario != "id")) {
    // BRAID_TEST_FROM_ENV: any scenario, its ranks meeting through launcher variables (the
    // multihost tier: ranks in other network namespaces cannot reach a root in the test's).
    r = braidCommInitFromEnv(&comm, nullptr);
  } else if (scenario == "id" || scenario == "split" || scenario == "die" || scenario == "coll" ||
             scenario == "killcoll" || scenario == "exitrace" || scenario == "mismatch" || scenario == "stall" ||
             scenario == "shrink") {
    braidUniqueId id;
    const char* hex = std::getenv("BRAID_TEST_ID");
    if (hex == nullptr || !braid::test::fromHex(hex, &id, sizeof(id))) {
      return report(rank, nranks, braidInvalidArgument, 0, 0, "BRAID_TEST_ID missing or malformed");
    }
    r = braidCommInitRank(&comm, nranks, id, rank);
  } else {
    std::fprintf(stderr, "usage: %s id|env|split|die|coll|killcoll|exitrace|mismatch|stall|shrink\n", argv[0]);
    return 2;
  }
  int64_t end = nowNs();
  if (r != braidSuccess) return report(rank, nranks, r, start, end, braidGetLastError());
  braidCommUserRank(comm, &rank);
  braidCommCount(comm, &nranks);

  Status s;
  if (scenario == "coll" || scenario == "exitrace") {
    // A sender may leave before its receiver has looked (its message stays readable): the names are
    // checked by the test once every rank has exited, not here.
    std::printf("SHM_PREFIX %s\n", shmPrefix(keyOf(comm)).c_str());
    s = scenario == "coll" ? collectives(comm, rank, nranks) : exitRace(comm, rank, nranks);
    braidCommDestroy(comm);
    return report(rank, nranks, fromStatus(s), start, end, s.isOk() ? "ok" : s.message());
  }
  if (scenario == "mismatch") {
    std::printf("SHM_PREFIX %s\n", shmPrefix(keyOf(comm)).c_str());
    const bool odd = rank == nranks - 1;
    const std::string what = std::getenv("BRAID_TEST_MISMATCH") != nullptr ? std::getenv("BRAID_TEST_MISMATCH") : "";
    std::vector<float> data(1000, 1.0f);
    braidRedOp_t op = odd && what == "op" ? braidMax : braidSum;
    braidDataType_t type = odd && what == "type" ? braidInt32 : braidFloat32;
    braidResult_t rc = braidAllReduce(data.data(), data.data(), data.size(), type, op, comm, nullptr);
    std::string msg = rc == braidSuccess ? "ok" : braidGetLastError();
    braidCommDestroy(comm);
    return report(rank, nranks, rc, start, end, msg);
  }
  if (scenario == "stall") {
    std::printf("SHM_PREFIX %s\n", shmPrefix(keyOf(comm)).c_str());
    // BRAID_TEST_STALL: what the last rank does instead of the all-reduce. stop (SIGSTOP, the
    // default); skip (alive, its watchdog answering, never in the call); exit (destroys its
    // communicator and leaves); broadcast (a different collective).
    const std::string how = std::getenv("BRAID_TEST_STALL") != nullptr ? std::getenv("BRAID_TEST_STALL") : "stop";
    if (rank == nranks - 1 && how == "skip") {
      usleep(static_cast<useconds_t>(envInt("BRAID_TEST_DELAY_MS", 6000)) * 1000);
      braidCommDestroy(comm);
      return report(rank, nranks, braidSuccess, start, end, "skipped the call");
    }
    if (rank == nranks - 1 && how == "exit") {
      braidCommDestroy(comm);
      std::_Exit(0);
    }
    if (rank == nranks - 1 && how == "broadcast") {
      std::vector<float> data(4096, 1.0f);
      const int64_t t0 = nowNs();
      braidResult_t rc = braidBroadcast(data.data(), data.data(), data.size(), braidFloat32, 0, comm, nullptr);
      const int64_t tookMs = (nowNs() - t0) / 1000000;
      std::string msg = rc == braidSuccess ? "ok" : braidGetLastError();
      std::replace(msg.begin(), msg.end(), '\n', '|');
      braidCommDestroy(comm);
      return report(rank, nranks, rc, start, end, "took_ms=" + std::to_string(tookMs) + " " + msg);
    }
    if (rank == nranks - 1) {
      // Stopped, not dead: its sockets and shared memory stay open and its process exists, so only
      // the watchdog's query (unanswered) tells the others. The child ends it after the test.
      const pid_t self = getpid();
      if (fork() == 0) {
        usleep(static_cast<useconds_t>(envInt("BRAID_TEST_DELAY_MS", 6000)) * 1000);
        kill(self, SIGKILL);
        _exit(0);
      }
      raise(SIGSTOP);
      return 0;
    }
    std::vector<float> data(4096, 1.0f);
    const int64_t t0 = nowNs();
    braidResult_t rc = braidAllReduce(data.data(), data.data(), data.size(), braidFloat32, braidSum, comm, nullptr);
    const int64_t tookMs = (nowNs() - t0) / 1000000;
    std::string msg = rc == braidSuccess ? "ok" : braidGetLastError();
    std::replace(msg.begin(), msg.end(), '\n', '|');  // one RESULT line
    msg = "took_ms=" + std::to_string(tookMs) + " " + msg;
    braidCommDestroy(comm);
    return report(rank, nranks, rc, start, end, msg);
  }
  if (scenario == "killcoll") {
    uint64_t key = keyOf(comm);
    // Small: with the 64-byte chunks of the transport cases every slot is a hand-off between
    // threads, and on an oversubscribed machine each can cost a scheduler quantum (100,000 floats
    // took over 30 s there; the kill, not the volume, is what this scenario tests).
    std::vector<float> data(4096, 1.0f);
    braidResult_t rc = braidAllReduce(data.data(), data.data(), data.size(), braidFloat32, braidSum, comm, nullptr);
    if (rc != braidSuccess) return report(rank, nranks, rc, start, end, std::string("first: ") + braidGetLastError());
    if (rank == envInt("BRAID_TEST_VICTIM", -1)) {
      // BRAID_TEST_DELAY_MS: the victim lives on that long, so the others' second call has sent to it
      // before it dies (its unread bytes make its end reset the connections, not close them).
      std::this_thread::sleep_for(std::chrono::milliseconds(envInt("BRAID_TEST_DELAY_MS", 0)));
      std::_Exit(3);
    }
    rc = braidAllReduce(data.data(), data.data(), data.size(), braidFloat32, braidSum, comm, nullptr);
    std::string msg = braidGetLastError();
    braidCommDestroy(comm);
    std::string left = leftoverSegments(key);
    if (!left.empty()) msg += " [shared memory left behind:" + left + "]";
    return report(rank, nranks, rc, start, end, msg);
  }
  if (scenario == "shrink") {
    // The victim dies after the first all-reduce; the others' second one fails; they shrink the
    // failed communicator without it and all-reduce their parent ranks + 1 on the new one.
    const int victim = envInt("BRAID_TEST_VICTIM", -1);
    std::vector<float> data(4096, 1.0f);
    braidResult_t rc = braidAllReduce(data.data(), data.data(), data.size(), braidFloat32, braidSum, comm, nullptr);
    if (rc != braidSuccess) return report(rank, nranks, rc, start, end, std::string("first: ") + braidGetLastError());
    if (rank == victim) std::_Exit(3);
    rc = braidAllReduce(data.data(), data.data(), data.size(), braidFloat32, braidSum, comm, nullptr);
    if (rc == braidSuccess) return report(rank, nranks, braidInternalError, start, end, "the second call succeeded");
    braidComm_t child = nullptr;
    int excluded[] = {victim};
    rc = braidCommShrink(comm, excluded, 1, &child, nullptr, BRAID_SHRINK_DEFAULT);
    if (rc != braidSuccess) return report(rank, nranks, rc, start, end, std::string("shrink: ") + braidGetLastError());
    std::fill(data.begin(), data.end(), static_cast<float>(rank + 1));
    rc = braidAllReduce(data.data(), data.data(), data.size(), braidFloat32, braidSum, child, nullptr);
    std::string msg = rc == braidSuccess ? "ok" : braidGetLastError();
    const float want = static_cast<float>(nranks * (nranks + 1) / 2 - (victim + 1));
    for (size_t i = 0; i < data.size() && rc == braidSuccess; ++i) {
      if (data[i] != want) {
        rc = braidInternalError;
        msg = "element " + std::to_string(i) + " is " + std::to_string(data[i]) + ", expected " + std::to_string(want);
      }
    }
    int childRank = -1;
    braidCommUserRank(child, &childRank);
    if (rc == braidSuccess && childRank != rank - (rank > victim ? 1 : 0)) {
      rc = braidInternalError;
      msg = "rank " + std::to_string(rank) + " became rank " + std::to_string(childRank);
    }
    // Every survivor has its result before any leaves: this scenario is about the shrink, not about
    // a peer that exits while another still reads its last slot over sockets (bench/NOTES.md,
    // "an idle send connection closed by a peer that finished").
    std::shared_ptr<braid::core::Comm> c;
    if (braid::api::lookupComm(child, "comm", &c).isOk()) c->bootstrap().barrier().ignore();
    braidCommDestroy(child);
    braidCommDestroy(comm);
    return report(rank, nranks, rc, start, end, msg);
  }
  if (scenario == "die") {
    if (rank == envInt("BRAID_TEST_VICTIM", -1)) std::_Exit(3);
    std::shared_ptr<braid::core::Comm> c;
    s = braid::api::lookupComm(comm, "comm", &c);
    if (s.isOk()) s = c->bootstrap().barrier();
  } else if (scenario == "split") {
    braidComm_t half = nullptr;
    r = braidCommSplit(comm, rank % 2, -rank, &half, nullptr);  // key -rank: reverse order
    if (r != braidSuccess) return report(rank, nranks, r, start, end, braidGetLastError());
    int hr = -1, hn = -1;
    braidCommUserRank(half, &hr);
    braidCommCount(half, &hn);
    int expectN = (nranks + 1 - rank % 2) / 2;  // evens: ceil(n/2), odds: floor(n/2)
    // Members of my color ordered by descending parent rank: my position counts the members above me.
    int expectR = 0;
    for (int q = rank + 2; q < nranks; q += 2) ++expectR;
    if (hr != expectR || hn != expectN) {
      s = braid::internalError("split gave rank " + std::to_string(hr) + " of " + std::to_string(hn) + ", expected " +
                               std::to_string(expectR) + " of " + std::to_string(expectN));
    } else {
      s = exerciseHandle(half);
    }
    braidCommDestroy(half);
  } else {
    s = exerciseHandle(comm);
  }
  braidCommDestroy(comm);
  return report(rank, nranks, fromStatus(s), start, end, s.isOk() ? "ok" : s.message());
}

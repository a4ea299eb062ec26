// braid-soak-worker: one rank of the soak run (tests/soak/run). Ranks meet through launcher
// variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), then make SOAK_CALLS random calls
// (host memory) that every rank draws alike from SOAK_SEED: the kind (all-reduce, broadcast,
// reduce, all-gather, reduce-scatter, all-to-all, a send/recv ring, a group of two all-reduces),
// the count (0 to 8 MB of data, log-uniform), the type (float32, int32, float64), the op (sum, prod,
// max, min), the root, in place or not. Inputs are small integers, so every result is exact in any
// order; each rank checks its output element by element against a plain loop over every rank's
// inputs. It counts its file descriptors and threads before init and after destroy and prints
//   SOAK rank=<r> calls=<n> seconds=<s> fds=<before>,<after> threads=<before>,<after> result=ok|<what>
//
// SOAK_FAULTS=k (at most ranks - 2): k faults, evenly spaced over the calls, each drawn from the seed
// alike on every rank: a victim (a rank of the communicator of the time) that, while it is in that
// call, is killed (SIGKILL, after printing "SOAK-KILLED rank=<parent rank> call=<i>") or aborts its
// communicator from another thread (braidCommAbort) and leaves, after 0 to 3 ms (the call is made
// larger by 1 M elements over the ranks, so that it lasts that long). The others' call
// either succeeds (its output is checked) or fails; a call that the watchdog had to end (braidTimeout:
// a hang) fails the run. Then they shrink the communicator without the victim (braidCommShrink),
// destroy the old one and go on with the remaining calls on the new one.
#include <braid/braid.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

int entries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

enum Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll, kRing, kGroup, kKinds };
const char* kKindNames[] = {"allreduce",     "broadcast", "reduce", "allgather",
                            "reducescatter", "alltoall",  "ring",   "group"};

struct Call {
  Kind kind;
  int type;  // 0 float32, 1 int32, 2 float64
  braidRedOp_t op;
  size_t count;  // per rank's block
  int root;
  bool inPlace;
  uint64_t salt;
};

Call draw(uint64_t seed, uint64_t i, int n) {
  uint64_t r = mix(seed ^ (i * 0x100000001b3ull));
  Call c;
  c.kind = static_cast<Kind>(r % kKinds);
  c.type = static_cast<int>((r >> 8) % 3);
  const braidRedOp_t ops[] = {braidSum, braidProd, braidMax, braidMin};
  c.op = ops[(r >> 12) % 4];
  size_t elem = c.type == 2 ? 8 : 4;
  size_t limit = (size_t{8} << 20) / elem;  // 8 MB of one buffer
  if (c.kind == kAllGather || c.kind == kReduceScatter || c.kind == kAllToAll) limit /= static_cast<size_t>(n);
  int e = static_cast<int>((r >> 16) % 24);
  c.count = std::min<size_t>((mix(r) % (size_t{1} << e)) + (e == 0 ? 0 : 1), limit);
  c.root = static_cast<int>((r >> 40) % static_cast<uint64_t>(n));
  c.inPlace = ((r >> 48) & 1) != 0 && c.kind != kAllToAll && c.kind != kRing && c.kind != kGroup;
  c.salt = r >> 52;
  return c;
}

// Rank q's input element j: small integers (products of up to 8 of them stay exact).
int inputOf(const Call& c, int q, size_t j) {
  int v = static_cast<int>((q * 31 + j * 7 + c.salt) % 5) - 2;
  return c.op == braidProd ? (v > 1 ? 1 : v) : v;  // prod: -1, 0, 1
}

int reduceAll(const Call& c, int n, size_t j) {
  int acc = inputOf(c, 0, j);
  for (int q = 1; q < n; ++q) {
    int v = inputOf(c, q, j);
    acc = c.op == braidSum    ? acc + v
          : c.op == braidProd ? acc * v
          : c.op == braidMax  ? std::max(acc, v)
                              : std::min(acc, v);
  }
  return acc;
}

template <class T>
braidDataType_t typeOf();
template <>
braidDataType_t typeOf<float>() {
  return braidFloat32;
}
template <>
braidDataType_t typeOf<int32_t>() {
  return braidInt32;
}
template <>
braidDataType_t typeOf<double>() {
  return braidFloat64;
}

// The call's result code goes to *code; the string says what was wrong ("" when the call succeeded
// with the right output).
template <class T>
std::string run(braidComm_t comm, const Call& c, int r, int n, braidResult_t* code) {
  const size_t count = c.count;
  const braidDataType_t type = typeOf<T>();
  size_t inElems = count, outElems = count;
  if (c.kind == kAllGather) outElems = count * n;
  if (c.kind == kReduceScatter) inElems = count * n;
  if (c.kind == kAllToAll) inElems = outElems = count * n;
  if (c.kind == kGroup) outElems = count + (count - count / 2);
  std::vector<T> in(inElems), out(std::max(outElems, inElems));
  // Block b of rank q's input for the blocked collectives is its elements [b*count, (b+1)*count).
  for (size_t j = 0; j < inElems; ++j) in[j] = static_cast<T>(inputOf(c, r, j));
  for (T& v : out) v = static_cast<T>(-99);
  T* send = in.data();
  T* recv = out.data();
  if (c.inPlace) {
    if (c.kind == kAllGather) {
      for (size_t j = 0; j < count; ++j) out[r * count + j] = in[j];
      send = out.data() + r * count;
    } else {
      for (size_t j = 0; j < inElems; ++j) out[j] = in[j];
      send = out.data();
    }
  }
  braidResult_t rc = braidSuccess;
  switch (c.kind) {
    case kAllReduce: rc = braidAllReduce(send, recv, count, type, c.op, comm, nullptr); break;
    case kBroadcast: rc = braidBroadcast(send, recv, count, type, c.root, comm, nullptr); break;
    case kReduce: rc = braidReduce(send, recv, count, type, c.op, c.root, comm, nullptr); break;
    case kAllGather: rc = braidAllGather(send, recv, count, type, comm, nullptr); break;
    case kReduceScatter: rc = braidReduceScatter(send, recv, count, type, c.op, comm, nullptr); break;
    case kAllToAll: rc = braidAllToAll(send, recv, count, type, comm, nullptr); break;
    case kRing:
      braidGroupStart();
      braidSend(send, count, type, (r + 1) % n, comm, nullptr);
      braidRecv(recv, count, type, (r + n - 1) % n, comm, nullptr);
      rc = braidGroupEnd();
      break;
    case kGroup:
      braidGroupStart();
      braidAllReduce(send, recv, count, type, c.op, comm, nullptr);
      braidAllReduce(send, recv + count, count - count / 2, type, c.op, comm, nullptr);
      rc = braidGroupEnd();
      break;
    default: break;
  }
  *code = rc;
  if (rc != braidSuccess) return std::string("returned ") + std::to_string(rc) + ": " + braidGetLastError();
  if (c.kind == kReduce && r != c.root) return "";
  for (size_t j = 0; j < outElems; ++j) {
    int want = 0;
    switch (c.kind) {
      case kAllReduce:
      case kReduce: want = reduceAll(c, n, j); break;
      case kBroadcast: want = inputOf(c, c.root, j); break;
      case kAllGather: want = inputOf(c, static_cast<int>(j / count), j % count); break;
      case kReduceScatter: want = reduceAll(c, n, r * count + j); break;
      case kAllToAll: want = inputOf(c, static_cast<int>(j / count), r * count + j % count); break;
      case kRing: want = inputOf(c, (r + n - 1) % n, j); break;
      case kGroup:
        want = j < count ? reduceAll(c, n, j) : reduceAll(c, n, j - count);
        break;  // the second call
                // after the first
      default: break;
    }
    if (out[j] != static_cast<T>(want)) {
      return "element " + std::to_string(j) + " is " + std::to_string(static_cast<double>(out[j])) + ", expected " +
             std::to_string(want);
    }
  }
  return "";
}

std::string runAny(braidComm_t comm, const Call& c, int r, int n, braidResult_t* code) {
  *code = braidSuccess;
  return c.type == 0   ? run<float>(comm, c, r, n, code)
         : c.type == 1 ? run<int32_t>(comm, c, r, n, code)
                       : run<double>(comm, c, r, n, code);
}

struct Fault {
  uint64_t at;   // the call
  bool kill;     // SIGKILL, else braidCommAbort and leave
  int delayUs;   // into the call
  uint64_t who;  // the victim: who % (ranks at the time)
};

std::vector<Fault> faults(uint64_t seed, uint64_t calls, int count) {
  std::vector<Fault> f;
  for (int j = 0; j < count; ++j) {
    uint64_t x = mix(seed * 31 + static_cast<uint64_t>(j) + 0xfa017);
    f.push_back({calls * static_cast<uint64_t>(j + 1) / static_cast<uint64_t>(count + 1), (x & 1) != 0,
                 static_cast<int>((x >> 8) % 3000), x >> 20});
  }
  return f;
}

}  // namespace

int main() {
  int fds0 = entries("/proc/self/fd"), threads0 = entries("/proc/self/task");
  const char* callsText = std::getenv("SOAK_CALLS");
  const char* seedText = std::getenv("SOAK_SEED");
  const char* faultsText = std::getenv("SOAK_FAULTS");
  uint64_t calls = callsText != nullptr ? std::strtoull(callsText, nullptr, 10) : 100000;
  uint64_t seed = seedText != nullptr ? std::strtoull(seedText, nullptr, 10) : 1;
  braidComm_t comm = nullptr;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) {
    std::printf("SOAK rank=? result=init failed: %s\n", braidGetLastError());
    return 1;
  }
  int r = 0, n = 0;
  braidCommUserRank(comm, &r);
  braidCommCount(comm, &n);
  const int parentRank = r;
  const int faultCount = std::max(0, std::min(faultsText != nullptr ? std::atoi(faultsText) : 0, n - 2));
  const std::vector<Fault> plan = faults(seed, calls, faultCount);
  size_t nextFault = 0;
  int failedCalls = 0;  // calls that a fault made fail (allowed)
  auto t0 = std::chrono::steady_clock::now();
  std::string result;
  uint64_t i = 0;
  for (; i < calls && result.empty(); ++i) {
    Call c = draw(seed, i, n);
    braidResult_t code = braidSuccess;
    const bool faulty = nextFault < plan.size() && plan[nextFault].at == i;
    const int victim = faulty ? static_cast<int>(plan[nextFault].who % static_cast<uint64_t>(n)) : -1;
    if (faulty) c.count = draw(seed, i, n).count + (size_t{1} << 20) / n;  // milliseconds long: the fault lands inside
    if (r == victim) {
      const Fault f = plan[nextFault];
      if (f.kill) {
        std::printf("SOAK-KILLED rank=%d call=%llu\n", parentRank, static_cast<unsigned long long>(i));
        std::fflush(stdout);
      }
      std::thread fault([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(f.delayUs));
        if (f.kill) kill(getpid(), SIGKILL);
        braidCommAbort(comm);
      });
      runAny(comm, c, r, n, &code);
      fault.join();
      std::printf("SOAK rank=%d calls=%llu aborted=1 result=ok\n", parentRank, static_cast<unsigned long long>(i));
      return 0;
    }
    result = runAny(comm, c, r, n, &code);
    if (faulty && code != braidSuccess && code != braidTimeout) {
      ++failedCalls;  // the victim left during it: an error is the right answer
      result.clear();
    }
    if (!result.empty()) {
      result = "call " + std::to_string(i) + " (" + kKindNames[c.kind] + ", count " + std::to_string(c.count) +
               ", type " + std::to_string(c.type) + ", op " + std::to_string(c.op) + ", root " +
               std::to_string(c.root) + (c.inPlace ? ", in place" : "") + "): " + result;
    }
    if (faulty && result.empty()) {
      braidComm_t child = nullptr;
      int excluded[] = {victim};
      if (braidCommShrink(comm, excluded, 1, &child, nullptr, BRAID_SHRINK_DEFAULT) != braidSuccess) {
        result = "shrink after call " + std::to_string(i) + ": " + braidGetLastError();
        break;
      }
      braidCommDestroy(comm);
      comm = child;
      braidCommUserRank(comm, &r);
      braidCommCount(comm, &n);
      ++nextFault;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  braidCommDestroy(comm);
  std::printf("SOAK rank=%d calls=%llu seconds=%.1f faults=%zu failed_calls=%d fds=%d,%d threads=%d,%d result=%s\n",
              parentRank, static_cast<unsigned long long>(i), seconds, nextFault, failedCalls, fds0,
              entries("/proc/self/fd"), threads0, entries("/proc/self/task"), result.empty() ? "ok" : result.c_str());
  return result.empty() ? 0 : 1;
}

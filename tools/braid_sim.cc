// braid-sim: predicted all-reduce times of every algorithm on a described cluster: the flat ring
// and trees, the cross-host tree and the hierarchical all-reduce.
//   braid-sim -n ranks [-g gpusPerNode=8] [-i nvswitch|nvlink|pcie] [-b nicGbps=400] [-N nicsPerNode]
//             [-e maxBytes]
//   braid-sim -f topology.xml [-e maxBytes]
// The cluster becomes a topology (by default one NIC per two GPUs), the ring search gives the
// channels, and the cost model predicts each (algorithm, best protocol); the tuner's choice and the
// crossovers follow. The model's step counts are checked against the trace backend (which runs every rank's
// program) up to 256 ranks.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algo/geometry.h"
#include "algo/trace.h"
#include "core/byte_size.h"
#include "topology/search.h"
#include "topology/topo_xml.h"
#include "tune/cluster.h"
#include "tune/tuner.h"

namespace {

using braid::algo::Algo;
using braid::algo::Coll;

int usage(const char* self) {
  std::fprintf(stderr,
               "usage: %s -n ranks [-g gpusPerNode] [-i nvswitch|nvlink|pcie] [-b nicGbps] [-N nicsPerNode] "
               "[-e maxBytes]\n"
               "       %s -f topology.xml [-e maxBytes]\n",
               self, self);
  return 2;
}

// The best protocol's prediction for `a`, on the channels the tuner would give it.
braid::tune::Prediction best(const braid::tune::Tuner& t, Algo a, size_t bytes, braid::tune::Proto* proto) {
  const braid::tune::Machine& m = t.machine();
  braid::tune::Prediction bestP;
  bool any = false;
  for (int p = 0; p < braid::tune::kNumProtos; ++p) {
    auto pr = static_cast<braid::tune::Proto>(p);
    if (!braid::tune::protocolApplies(m, pr)) continue;
    braid::tune::Prediction x = braid::tune::predict(m, Coll::kAllReduce, a, pr, bytes, t.channelsFor(a, pr, bytes));
    if (!any || x.us < bestP.us) bestP = x, *proto = pr, any = true;
  }
  return bestP;
}

// A whole decimal number of at least `least`.
bool wholeInt(const char* v, int least, int* out) {
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < least || x > 1 << 30) return false;
  *out = static_cast<int>(x);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace braid;
  tune::ClusterSpec spec;
  std::string file;
  size_t maxBytes = size_t{1} << 32;
  char* end = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* v = argv[i + 1];
    bool ok = true;
    if (std::strcmp(argv[i], "-n") == 0)
      ok = wholeInt(v, 1, &spec.ranks);
    else if (std::strcmp(argv[i], "-g") == 0)
      ok = wholeInt(v, 1, &spec.gpusPerNode);
    else if (std::strcmp(argv[i], "-i") == 0)
      spec.intra = v;
    else if (std::strcmp(argv[i], "-b") == 0)
      ok = (spec.nicGbps = std::strtod(v, &end)) > 0 && end != v && *end == '\0';
    else if (std::strcmp(argv[i], "-N") == 0)
      ok = wholeInt(v, 0, &spec.nicsPerNode);  // 0: one NIC per two GPUs
    else if (std::strcmp(argv[i], "-e") == 0)
      ok = core::parseByteSize(v, &maxBytes) && maxBytes >= 8;
    else if (std::strcmp(argv[i], "-f") == 0)
      file = v;
    else
      return usage(argv[0]);
    if (!ok) {
      std::fprintf(stderr, "braid-sim: %s %s is not a %s\n", argv[i], v,
                   std::strcmp(argv[i], "-e") == 0   ? "size of at least 8 bytes (4096, 64K, 1G)"
                   : std::strcmp(argv[i], "-N") == 0 ? "whole number (0: one NIC per two GPUs)"
                                                     : "positive number");
      return 2;
    }
  }
  if (argc % 2 == 0) return usage(argv[0]);
  auto t0 = std::chrono::steady_clock::now();
  topology::System system;
  Status st = file.empty() ? tune::buildCluster(spec, &system) : topology::readTopologyFile(file, &system);
  std::vector<topology::RankPlace> ranks = topology::oneRankPerGpu(system);
  topology::SearchResult search;
  if (st.isOk()) st = topology::searchRings(system, ranks, 32, &search);
  tune::Tuner tuner;
  tune::Machine m;
  if (st.isOk()) {
    m = tune::gpuMachine(search, static_cast<int>(ranks.size()));
    st = tune::Tuner::create(m, {}, &tuner);
  }
  if (!st.isOk()) {
    std::fprintf(stderr, "braid-sim: %s\n", st.message().c_str());
    return 1;
  }
  const int n = m.nranks;
  std::printf(
      "# %d ranks on %d node(s) (%s); %d channel(s) of %.1f GB/s; hop %.2f us in a node, %.2f us between; a node's "
      "network %.1f GB/s (%.1f per channel crossing)\n",
      n, m.hosts, file.empty() ? spec.intra.c_str() : file.c_str(), m.channels, m.channelGBs, m.intraHopUs,
      m.interHopUs, m.netGBs, m.netChannelGBs);
  const Algo algos[] = {Algo::kRing, Algo::kTree, Algo::kDoubleTree, Algo::kCrossTree, Algo::kHier};
  std::vector<int> order(n), hostOf(n);
  for (int r = 0; r < n; ++r) order[r] = r, hostOf[r] = r / m.perHost;
  const algo::Geometry levelled = algo::makeGeometry(order, hostOf);
  auto steps = [&](Algo a) { return tune::stepsOn(m, Coll::kAllReduce, a); };
  auto offered = [&](Algo a) { return tune::algorithmApplies(m, Coll::kAllReduce, a); };
  if (n <= 256) {
    bool ok = true;
    for (Algo a : algos) {
      if (!offered(a)) continue;
      algo::TraceResult t = algo::traceCollective(
          levelled, algo::CallShape{Coll::kAllReduce, a, size_t(n) * algo::kAlignElems, 0, 1, 1 << 20, false}, 8);
      ok = ok && t.ok && t.steps == steps(a);
    }
    std::printf("# self-check: the model's step counts equal the trace backend's for %d ranks: %s\n", n,
                ok ? "yes" : "NO");
    if (!ok) return 1;
  } else {
    std::printf("# self-check skipped above 256 ranks (the trace backend runs every rank's program)\n");
  }
  std::printf("# steps:");
  for (Algo a : algos) {
    if (offered(a)) std::printf(" %s %d", algo::algoName(a), steps(a));
  }
  std::printf("\n%12s", "bytes");
  for (Algo a : algos) std::printf(" %18s (us)", algo::algoName(a));
  std::printf("   tuner\n");
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 4) {
    std::printf("%12zu", bytes);
    for (Algo a : algos) {
      if (!offered(a)) {
        std::printf(" %23s", "-");
        continue;
      }
      tune::Proto p = tune::Proto::kSimple;
      tune::Prediction x = best(tuner, a, bytes, &p);
      char cell[40];
      std::snprintf(cell, sizeof(cell), "%.1f %s", x.us, tune::protoName(p));
      std::printf(" %23s", cell);
    }
    std::printf("   %s\n", tune::describe(tuner.decide(Coll::kAllReduce, bytes)).c_str());
    if (bytes > maxBytes / 4) break;
  }
  std::printf("# crossovers:");
  for (const std::string& c : tuner.crossovers(Coll::kAllReduce, maxBytes)) std::printf("  [%s]", c.c_str());
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\n# %.0f ms\n", ms);
  return 0;
}

// braid-tune: what the tuner decides on a machine.
//   braid-tune -f topology.xml [-n ranks] [-e maxBytes]
// Searches the rings of one rank per GPU (the first n GPUs with -n), then prints the machine
// summary the cost model uses, the decision for every collective at sizes 8 B .. maxBytes (x4),
// and the sizes where the all-reduce decision changes.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "topology/topo_xml.h"
#include "tune/tuner.h"

namespace {

int usage(const char* self) {
  std::fprintf(stderr, "usage: %s -f topology.xml [-n ranks] [-e maxBytes]\n", self);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace braid;
  std::string file;
  int n = 0;
  size_t maxBytes = size_t{1} << 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "-f") == 0)
      file = argv[i + 1];
    else if (std::strcmp(argv[i], "-n") == 0)
      n = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "-e") == 0)
      maxBytes = std::strtoull(argv[i + 1], nullptr, 10);
    else
      return usage(argv[0]);
  }
  if (file.empty() || argc % 2 == 0) return usage(argv[0]);
  topology::System system;
  Status st = topology::readTopologyFile(file, &system);
  std::vector<topology::RankPlace> ranks = topology::oneRankPerGpu(system);
  if (st.isOk() && n > 0) {
    if (n > static_cast<int>(ranks.size())) {
      st = invalidArgument("-n " + std::to_string(n) + ": the topology has " + std::to_string(ranks.size()) + " GPUs");
    } else {
      ranks.resize(n);
    }
  }
  topology::SearchResult search;
  if (st.isOk()) st = topology::searchRings(system, ranks, 32, &search);
  tune::Tuner tuner;
  if (st.isOk()) st = tune::Tuner::create(tune::gpuMachine(search, static_cast<int>(ranks.size())), {}, &tuner);
  if (!st.isOk()) {
    std::fprintf(stderr, "braid-tune: %s\n", st.message().c_str());
    return 1;
  }
  const tune::Machine& m = tuner.machine();
  std::printf(
      "# %s: %d ranks on %d host(s); %d channel(s) of %.1f GB/s; hop %.2f us inside hosts, %.2f us between;"
      " LL128 %s\n",
      file.c_str(), m.nranks, m.hosts, m.channels, m.channelGBs, m.intraHopUs, m.interHopUs,
      m.ll128Capable ? "allowed (NVLink)" : "not allowed");
  std::fputs(tuner.table(maxBytes).c_str(), stdout);
  std::printf("# all-reduce crossovers:");
  for (const std::string& c : tuner.crossovers(algo::Coll::kAllReduce, maxBytes)) std::printf("  [%s]", c.c_str());
  std::printf("\n");
  return 0;
}

// braid-topo: the machine as braid sees it.
//   braid-topo                  discover this host (or load BRAID_TOPO_FILE) and describe it
//   braid-topo -f FILE          load a topology file (any number of hosts) instead
//   braid-topo ... --xml        print the topology as XML (docs/topology.md) instead
//   braid-topo ... -o OUT       also write it to OUT as XML
// With GPUs, it also prints the rings a communicator of one rank per GPU would use.
#include <cstdio>
#include <cstring>
#include <string>

#include "core/machine.h"
#include "core/plan.h"
#include "topology/graph.h"
#include "topology/search.h"
#include "topology/topo_xml.h"

namespace {

int usage(const char* self) {
  std::fprintf(stderr, "usage: %s [-f topology.xml] [--xml] [-o out.xml]\n", self);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace braid;
  std::string in, out;
  bool xml = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-f") == 0 && i + 1 < argc) {
      in = argv[++i];
    } else if (std::strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--xml") == 0) {
      xml = true;
    } else {
      return usage(argv[0]);
    }
  }
  topology::System system;
  Status st;
  if (!in.empty()) {
    st = topology::readTopologyFile(in, &system);
  } else {
    system.hosts.emplace_back();
    st = core::localTopology(&system.hosts.back());
    if (st.isOk()) {
      topology::applyLinkTable(&system);
      st = topology::validate(system);
    }
  }
  if (st.isOk() && !out.empty()) st = topology::writeTopologyFile(out, system);
  if (!st.isOk()) {
    std::fprintf(stderr, "braid-topo: %s\n", st.message().c_str());
    return 1;
  }
  if (xml) {
    std::fputs(topology::writeTopology(system).c_str(), stdout);
    return 0;
  }
  std::fputs(topology::describe(system).c_str(), stdout);
  if (system.gpuCount() > 0) {
    // The rings of a communicator with one rank per GPU, ranks in host then device order.
    topology::SearchResult rings;
    st = topology::searchRings(system, topology::oneRankPerGpu(system), 32, &rings);
    if (!st.isOk()) {
      std::fprintf(stderr, "braid-topo: %s\n", st.message().c_str());
      return 1;
    }
    std::printf("\none rank per GPU (%d ranks):\n%s", system.gpuCount(), topology::describeSearch(rings).c_str());
    std::printf("trees (rank<-parent[children]):\n%s", core::describeTrees(rings.rings[0].ranks).c_str());
    for (const std::string& why : rings.reasons) std::printf("  why: %s\n", why.c_str());
  }
  return 0;
}

// braid-tune: what the tuner decides on a machine, and calibration.
//   braid-tune -f topology.xml [-n ranks] [-e maxBytes]
//       Searches the rings of one rank per GPU (the first n GPUs with -n), then prints the machine
//       summary the cost model uses, the decision for every collective at sizes 8 B .. maxBytes
//       (x4), and the sizes where the all-reduce decision changes.
//   braid-tune -H hosts -n ranks [-e maxBytes]
//       The same for a host-memory communicator of `ranks` ranks spread evenly over `hosts` hosts
//       (shared memory inside a host, sockets between).
//   braid-tune --fit perf.json [-C allreduce] [-A ring] [-c channels] [-H hosts] [-f topology.xml] [-o tune.txt]
//       Fits latency and bandwidth to braid-perf -J times of one algorithm (run with -A), prints
//       each point's fit error and the hop latency and channel bandwidth they imply (with -H, runs
//       across that many hosts: the hop between hosts and a host's network bandwidth), and writes
//       them as a tune file (BRAID_TUNE_FILE). Host memory unless a GPU topology is given.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/byte_size.h"
#include "core/param.h"
#include "exec/cuda_engine.h"
#include "topology/topo_xml.h"
#include "tune/fit.h"
#include "tune/tuner.h"

namespace {

int usage(const char* self) {
  std::fprintf(
      stderr,
      "usage: %s -f topology.xml [-n ranks] [-e maxBytes]\n"
      "       %s -H hosts -n ranks [-e maxBytes]\n"
      "       %s --fit perf.json [-C allreduce] [-A ring] [-c channels] [-H hosts] [-f topology.xml] [-o tune.txt]\n",
      self, self, self);
  return 2;
}

std::string readAll(const std::string& path, braid::Status* st) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    *st = braid::invalidArgument("cannot read '" + path + "'");
    return "";
  }
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) text.append(buf, n);
  std::fclose(f);
  return text;
}

// --fit: the fit of one algorithm's measured times and the machine values it implies.
int fit(int argc, char** argv) {
  using namespace braid;
  std::string json = argv[2], coll = "allreduce", algoName = "ring", topo, outFile;
  int channels = 1, hosts = 1;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "-H") == 0)
      hosts = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "-C") == 0)
      coll = argv[i + 1];
    else if (std::strcmp(argv[i], "-A") == 0)
      algoName = argv[i + 1];
    else if (std::strcmp(argv[i], "-c") == 0)
      channels = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "-f") == 0)
      topo = argv[i + 1];
    else if (std::strcmp(argv[i], "-o") == 0)
      outFile = argv[i + 1];
    else
      return usage(argv[0]);
  }
  int collIndex = -1, algoIndex = -1;
  for (int c = 0; c < tune::kNumColls; ++c) {
    if (coll == algo::collName(static_cast<algo::Coll>(c))) collIndex = c;
  }
  for (int a = 0; a < tune::kNumAlgos; ++a) {
    if (algoName == algo::algoName(static_cast<algo::Algo>(a))) algoIndex = a;
  }
  Status st;
  if (collIndex < 0 || algoIndex < 0)
    st = invalidArgument("unknown collective '" + coll + "' or algorithm '" + algoName + "'");
  std::vector<tune::Point> points;
  int ranks = 0;
  std::string text = st.isOk() ? readAll(json, &st) : "";
  if (st.isOk()) st = tune::readPerfJson(text, coll, &points, &ranks);
  tune::Machine m = tune::hostMachine(ranks, std::min(hosts, std::max(1, ranks)), false);
  if (st.isOk() && !topo.empty()) {
    topology::System system;
    topology::SearchResult search;
    st = topology::readTopologyFile(topo, &system);
    std::vector<topology::RankPlace> places = topology::oneRankPerGpu(system);
    if (st.isOk() && static_cast<int>(places.size()) < ranks)
      st = invalidArgument("the topology has fewer GPUs than the run's ranks");
    if (st.isOk()) places.resize(ranks);
    if (st.isOk()) st = topology::searchRings(system, places, 32, &search);
    if (st.isOk()) m = tune::gpuMachine(search, ranks);
  }
  if (!st.isOk()) {
    std::fprintf(stderr, "braid-tune: %s\n", st.message().c_str());
    return 1;
  }
  auto c = static_cast<algo::Coll>(collIndex);
  auto a = static_cast<algo::Algo>(algoIndex);
  tune::LineFit line = tune::fitLine(points);
  std::printf("# %s/%s, %d ranks, %zu points: time = %.3f us + bytes / %.3f GB/s\n", coll.c_str(), algoName.c_str(),
              ranks, points.size(), line.intercept, line.slope > 0 ? 1e-3 / line.slope : 0.0);
  std::printf("%12s %12s %12s %8s\n", "bytes", "measured", "fit", "error");
  for (size_t i = 0; i < points.size(); ++i) {
    std::printf("%12.0f %12.3f %12.3f %7.1f%%\n", points[i].bytes, points[i].us,
                line.intercept + line.slope * points[i].bytes, 100 * line.relativeError[i]);
  }
  tune::TuneFile values = tune::tuneFromFit(m, c, a, tune::Proto::kSimple, channels, line);
  std::string file = tune::writeTuneFile(values);
  std::fputs(file.c_str(), stdout);
  if (!outFile.empty()) {
    std::FILE* f = std::fopen(outFile.c_str(), "w");
    if (f == nullptr || std::fputs(file.c_str(), f) < 0) {
      std::fprintf(stderr, "braid-tune: cannot write '%s'\n", outFile.c_str());
      return 1;
    }
    std::fclose(f);
  }
  return 0;
}

// The machine summary the cost model uses, the decision table and the all-reduce crossovers.
void printDecisions(const braid::tune::Tuner& tuner, const std::string& what, size_t maxBytes) {
  const braid::tune::Machine& m = tuner.machine();
  std::printf(
      "# %s: %d ranks on %d host(s); %d channel(s) of %.1f GB/s; hop %.2f us inside hosts, %.2f us between;"
      " a host's network %.2f GB/s; LL128 %s; one-shot blocks up to %zu bytes\n",
      what.c_str(), m.nranks, m.hosts, m.channels, m.channelGBs, m.intraHopUs, m.interHopUs, m.netGBs,
      m.ll128Capable ? "allowed (NVLink)" : "not allowed", m.oneShotBytes);
  std::fputs(tuner.table(maxBytes).c_str(), stdout);
  std::printf("# all-reduce crossovers:");
  for (const std::string& c : tuner.crossovers(braid::algo::Coll::kAllReduce, maxBytes))
    std::printf("  [%s]", c.c_str());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace braid;
  if (argc >= 3 && std::strcmp(argv[1], "--fit") == 0) return fit(argc, argv);
  std::string file;
  int n = 0, hosts = 0;
  size_t maxBytes = size_t{1} << 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* flag = argv[i];
    const char* value = argv[i + 1];
    char* end = nullptr;
    if (std::strcmp(flag, "-f") == 0) {
      file = value;
    } else if (std::strcmp(flag, "-H") == 0) {
      hosts = static_cast<int>(std::strtol(value, &end, 10));
      if (end == value || *end != '\0' || hosts < 1) {
        std::fprintf(stderr, "braid-tune: -H %s is not a host count of at least 1\n", value);
        return 2;
      }
    } else if (std::strcmp(flag, "-n") == 0) {
      n = static_cast<int>(std::strtol(value, &end, 10));
      if (end == value || *end != '\0' || n < 1) {
        std::fprintf(stderr, "braid-tune: -n %s is not a rank count of at least 1\n", value);
        return 2;
      }
    } else if (std::strcmp(flag, "-e") == 0) {
      if (!core::parseByteSize(value, &maxBytes) || maxBytes < 8) {
        std::fprintf(stderr, "braid-tune: -e %s is not a size of at least 8 bytes (4096, 64K, 1G)\n", value);
        return 2;
      }
    } else {
      return usage(argv[0]);
    }
  }
  if (argc % 2 == 0 || file.empty() == (hosts == 0) || (hosts > 0 && (n < hosts))) return usage(argv[0]);
  tune::Tuner tuner;
  if (hosts > 0) {
    Status st = tune::Tuner::create(tune::hostMachine(n, hosts, false), {}, &tuner);
    if (!st.isOk()) {
      std::fprintf(stderr, "braid-tune: %s\n", st.message().c_str());
      return 1;
    }
    printDecisions(tuner, "host memory", maxBytes);
    return 0;
  }
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
  if (st.isOk()) st = tune::Tuner::create(tune::gpuMachine(search, static_cast<int>(ranks.size())), {}, &tuner);
  // The one-shot as a communicator of these ranks would reserve it (BRAID_GPU_ONESHOT_BYTES), taking
  // every GPU pair of a host to reach each other directly.
  if (st.isOk() && search.hosts == 1) {
    size_t block = exec::oneShotBlockLimit(static_cast<int>(ranks.size()),
                                           static_cast<size_t>(param::getInt(param::Id::kGpuOneShotBytes)));
    tuner.setOneShot(block, block == 0 ? 0 : device::kMaxOneShotChannels);
  }
  if (!st.isOk()) {
    std::fprintf(stderr, "braid-tune: %s\n", st.message().c_str());
    return 1;
  }
  printDecisions(tuner, file, maxBytes);
  return 0;
}

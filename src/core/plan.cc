#include "core/plan.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>

#include "algo/tree_builder.h"
#include "core/log.h"
#include "core/machine.h"
#include "exec/cuda_engine.h"

namespace braid::core {
namespace {

struct PlaceInfo {
  char host[128];
  int32_t device;
};

// The GPU node of CUDA device `dev` in `host`: the one with that ordinal, else the dev-th GPU.
int gpuNodeFor(const topology::Host& host, int dev) {
  std::vector<int> gpus = host.nodesOf(topology::NodeKind::kGpu);
  for (int g : gpus) {
    if (host.nodes[g].index == dev) return g;
  }
  return dev >= 0 && dev < static_cast<int>(gpus.size()) ? gpus[dev] : -1;
}

}  // namespace

Status makeGpuPlan(bootstrap::Bootstrap& bootstrap, int cudaDevice, const CommConfig& config, CommPlan* out) {
  CommPlan plan;
  BRAID_RETURN_IF_ERROR(communicatorTopology(bootstrap, &plan.system));
  const int n = bootstrap.nranks();
  std::vector<PlaceInfo> info(n);
  std::memset(info.data(), 0, info.size() * sizeof(PlaceInfo));
  std::string name = hostName();
  std::strncpy(info[bootstrap.rank()].host, name.c_str(), sizeof(info[0].host) - 1);
  info[bootstrap.rank()].device = cudaDevice;
  BRAID_RETURN_IF_ERROR(bootstrap.allGather(info.data(), sizeof(PlaceInfo)).withContext("gathering rank places"));
  for (int r = 0; r < n; ++r) {
    topology::RankPlace p;
    p.host = -1;
    for (size_t h = 0; h < plan.system.hosts.size(); ++h) {
      if (plan.system.hosts[h].id == info[r].host) p.host = static_cast<int>(h);
    }
    if (p.host < 0)
      return internalError("rank " + std::to_string(r) + "'s host '" + info[r].host + "' is not in the topology");
    p.gpu = gpuNodeFor(plan.system.hosts[p.host], info[r].device);
    if (p.gpu < 0) {
      return invalidUsage("rank " + std::to_string(r) + " uses CUDA device " + std::to_string(info[r].device) +
                          ", which the topology of host '" + info[r].host + "' does not show");
    }
    plan.places.push_back(p);
  }
  BRAID_RETURN_IF_ERROR(topology::searchRings(plan.system, plan.places, config.maxCTAs, &plan.search));
  BRAID_RETURN_IF_ERROR(tune::Tuner::create(tune::gpuMachine(plan.search, n), tunerConfig(config), &plan.tuner));
  *out = std::move(plan);
  return Status::ok();
}

Status checkLayoutAgreement(const std::vector<GpuLayoutSettings>& all) {
  for (size_t r = 1; r < all.size(); ++r) {
    const GpuLayoutSettings &a = all[0], &b = all[r];
    const std::pair<const char*, std::pair<int64_t, int64_t>> fields[] = {
        {"BRAID_GPU_SIMPLE_BYTES", {a.simpleSlotBytes, b.simpleSlotBytes}},
        {"BRAID_GPU_LL_BYTES", {a.llSlotBytes, b.llSlotBytes}},
        {"BRAID_GPU_LL128_BYTES", {a.ll128SlotBytes, b.ll128SlotBytes}},
        {"BRAID_GPU_ONESHOT_BYTES", {a.oneShotBytes, b.oneShotBytes}},
        {"channels (BRAID_MIN_CTAS / BRAID_MAX_CTAS)", {a.channels, b.channels}},
        {"channels for trees (BRAID_MIN_CTAS / BRAID_MAX_CTAS)", {a.fullChannels, b.fullChannels}},
        {"copy-engine slot bytes (BRAID_CE / BRAID_CE_SLOT_BYTES)", {a.ceSlotBytes, b.ceSlotBytes}}};
    for (const auto& f : fields) {
      if (f.second.first != f.second.second) {
        return invalidUsage("rank " + std::to_string(r) + " lays out its GPU buffers with " + f.first + " = " +
                            std::to_string(f.second.second) + " where rank 0 has " + std::to_string(f.second.first) +
                            ": every rank must set the same value");
      }
    }
  }
  return Status::ok();
}

std::string describeTrees(const std::vector<int>& ring) {
  std::ostringstream out;
  const int n = static_cast<int>(ring.size());
  for (int t = 0; t < 2; ++t) {
    algo::PositionTree tree = algo::buildDoubleTree(n, t);
    out << "Tree " << t << " : root " << ring[tree.root] << ";";
    for (int r = 0; r < n; ++r) {
      algo::TreeView v = algo::treeViewFor(tree, ring, r);
      out << " " << r;
      if (v.parent >= 0) out << "<-" << v.parent;
      if (v.nChildren > 0) {
        out << "[";
        for (int c = 0; c < v.nChildren; ++c) out << (c ? "," : "") << v.children[c];
        out << "]";
      }
    }
    out << "\n";
  }
  return out.str();
}

void logPlan(const CommPlan& plan) {
  BRAID_INFO(log::Subsys::kGraph, "machine:\n", topology::describe(plan.system));
  BRAID_INFO(log::Subsys::kGraph, "rings:\n", topology::describeSearch(plan.search));
  BRAID_INFO(log::Subsys::kGraph, "trees (rank<-parent[children]):\n", describeTrees(plan.search.rings[0].ranks));
  for (const std::string& why : plan.search.reasons) BRAID_INFO(log::Subsys::kGraph, "why: ", why);
  const tune::Machine& m = plan.tuner.machine();
  BRAID_INFO(log::Subsys::kTune, "one-shot: blocks up to ", m.oneShotBytes, " bytes on up to ", m.oneShotChannels,
             " CTAs", m.oneShotBytes == 0 ? " (not offered)" : "");
  BRAID_INFO(log::Subsys::kTune, "decisions (algorithm/protocol channels predicted time):\n",
             plan.tuner.table(size_t{1} << 32));
}

Status copyEngineSlots(const std::string& ce, int64_t slotBytes, const std::vector<transport::PeerIdentity>& ids,
                       bool reach, size_t* bytes, std::string* why) {
  if (ce != "0" && ce != "1" && ce != "auto") return invalidArgument("BRAID_CE='" + ce + "': must be 0, 1 or auto");
  *bytes = 0;
  why->clear();
  if (ce == "0" || !reach) return Status::ok();
  const int n = static_cast<int>(ids.size());
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (ids[a].pid != ids[b].pid || ids[a].host != ids[b].host || ids[a].device != ids[b].device) continue;
      *why = "ranks " + std::to_string(a) + " and " + std::to_string(b) + " share a process and CUDA device " +
             std::to_string(ids[a].device) +
             " (their streams' waits could block each other's hardware queues); run them as processes";
      return Status::ok();
    }
  }
  *bytes = exec::ceSlotLimit(n, static_cast<size_t>(std::max<int64_t>(0, slotBytes)));
  return Status::ok();
}

}  // namespace braid::core

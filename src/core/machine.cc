#include "core/machine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "exec/cuda_device.h"
#include "topology/discover.h"
#include "topology/topo_xml.h"

namespace braid::core {

namespace {
thread_local std::string tHostId;  // setThreadHostIdentity
}  // namespace

void setThreadHostIdentity(const std::string& id) { tHostId = id; }

std::string hostName() {
  if (!tHostId.empty()) return tHostId;
  std::string id = param::getString(param::Id::kHostId);
  if (!id.empty()) return id;
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  return name;
}

std::string hostIdentity() {
  if (!tHostId.empty()) return tHostId;
  if (!param::getString(param::Id::kHostId).empty()) return param::getString(param::Id::kHostId);
  std::string id = hostName();
  if (std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char boot[64] = {0};
    if (std::fgets(boot, sizeof(boot), f) != nullptr) {
      boot[std::strcspn(boot, "\n")] = '\0';
      id += std::string(":") + boot;
    }
    std::fclose(f);
  }
  return id;
}

namespace {

Status discover(const std::string& name, topology::Host* out) {
  std::vector<topology::CudaDeviceFacts> cuda;
  for (const exec::CudaDeviceInfo& d : exec::cudaDevices()) cuda.push_back({d.ordinal, d.busId, d.sm, d.name});
  return topology::discoverHost(name, cuda, out);
}

}  // namespace

Status localTopology(topology::Host* out) {
  std::string file = param::getString(param::Id::kTopoFile);
  std::string name = hostName();
  if (!file.empty()) {
    topology::System system;
    BRAID_RETURN_IF_ERROR(topology::readTopologyFile(file, &system).withContext("BRAID_TOPO_FILE"));
    for (const topology::Host& h : system.hosts) {
      if (h.id == name || system.hosts.size() == 1) {
        if (h.completes) {
          BRAID_RETURN_IF_ERROR(discover(name, out));
          topology::completeHost(h, out);
        } else {
          *out = h;
        }
        out->id = name;
        out->completes = false;
        BRAID_INFO(log::Subsys::kGraph, "topology of host ", name, h.completes ? " completed from " : " loaded from ",
                   file);
        return Status::ok();
      }
    }
    return invalidArgument("BRAID_TOPO_FILE " + file + " describes " + std::to_string(system.hosts.size()) +
                           " hosts, none named '" + name + "' (set BRAID_HOSTID to pick one)");
  }
  return discover(name, out);
}

Status communicatorTopology(bootstrap::Bootstrap& bootstrap, topology::System* out) {
  topology::System mine;
  mine.hosts.emplace_back();
  BRAID_RETURN_IF_ERROR(localTopology(&mine.hosts.back()));
  std::string text = topology::writeTopology(mine);
  // Two all-gathers: every rank's text length, then every text padded to the longest.
  const int n = bootstrap.nranks(), r = bootstrap.rank();
  std::vector<uint64_t> lengths(n, 0);
  lengths[r] = text.size();
  BRAID_RETURN_IF_ERROR(bootstrap.allGather(lengths.data(), sizeof(uint64_t)).withContext("gathering topologies"));
  size_t longest = 0;
  for (uint64_t l : lengths) longest = std::max<size_t>(longest, l);
  std::vector<char> texts(longest * n, ' ');
  std::copy(text.begin(), text.end(), texts.begin() + longest * r);
  BRAID_RETURN_IF_ERROR(bootstrap.allGather(texts.data(), longest).withContext("gathering topologies"));
  topology::System system;
  for (int q = 0; q < n; ++q) {
    topology::System theirs;
    std::string source = "topology of rank " + std::to_string(q);
    BRAID_RETURN_IF_ERROR(topology::readTopology(std::string(texts.data() + longest * q, lengths[q]), source, &theirs));
    for (topology::Host& h : theirs.hosts) {
      bool known = false;
      for (const topology::Host& k : system.hosts) known = known || k.id == h.id;
      if (!known) system.hosts.push_back(std::move(h));
    }
  }
  *out = std::move(system);
  return Status::ok();
}

}  // namespace braid::core

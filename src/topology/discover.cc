#include "topology/discover.h"

#include <dirent.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "core/log.h"

namespace braid::topology {
namespace {

constexpr unsigned kNvidiaVendor = 0x10de;

std::string readSysfs(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string busIdOf(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", static_cast<unsigned>(p.domain), p.bus, p.dev, p.func);
  return buf;
}

enum class Interest { kNone, kGpu, kNic, kNvSwitch };

Interest interestOf(const hwloc_obj_t obj) {
  if (obj->type != HWLOC_OBJ_PCI_DEVICE) return Interest::kNone;
  const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p = obj->attr->pcidev;
  unsigned cls = p.class_id >> 8;
  if (p.vendor_id == kNvidiaVendor && cls == 0x03) return Interest::kGpu;
  if (p.vendor_id == kNvidiaVendor && p.class_id == 0x0680) return Interest::kNvSwitch;
  if (p.class_id == 0x0200 || p.class_id == 0x0207) return Interest::kNic;
  return Interest::kNone;
}

// The PCIe generation and width of the link above the device at `busId`, from sysfs.
void pcieLinkOf(const std::string& busId, Link* link) {
  std::string base = "/sys/bus/pci/devices/" + busId + "/";
  link->pcieGen = pcieGenFromSpeed(readSysfs(base + "current_link_speed"));
  link->pcieWidth = std::atoi(readSysfs(base + "current_link_width").c_str());
}

// The network interface whose device is the PCI function at `busId` (directly, or through a
// virtio device below it), and its speed in Gb/s (unknown: 0).
void nicFacts(const std::string& busId, Node* nic) {
  if (DIR* d = opendir("/sys/class/net")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string link = std::string("/sys/class/net/") + e->d_name + "/device";
      char real[4096];
      if (realpath(link.c_str(), real) == nullptr) continue;
      std::string path(real);
      if (path.find("/" + busId + "/") == std::string::npos && path.size() >= busId.size() &&
          path.compare(path.size() - busId.size(), busId.size(), busId) != 0)
        continue;
      nic->name = e->d_name;
      break;
    }
    closedir(d);
  }
  if (!nic->name.empty()) {
    long mbps = std::atol(readSysfs("/sys/class/net/" + nic->name + "/speed").c_str());
    if (mbps > 0) nic->speedGbps = mbps / 1000.0;
  }
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// Builds the Host from one loaded hwloc topology.
class HwlocWalker {
 public:
  HwlocWalker(hwloc_topology_t topo, Host* host) : topo_(topo), host_(host) {}

  void run(const std::vector<CudaDeviceFacts>& cuda) {
    addCpus();
    std::vector<hwloc_obj_t> devices;
    for (hwloc_obj_t obj = hwloc_get_next_pcidev(topo_, nullptr); obj != nullptr;
         obj = hwloc_get_next_pcidev(topo_, obj)) {
      if (interestOf(obj) == Interest::kNone) continue;
      devices.push_back(obj);
      for (hwloc_obj_t a = obj->parent; a != nullptr; a = a->parent) ++below_[a];
    }
    for (hwloc_obj_t obj : devices) addDevice(obj, cuda);
  }

 private:
  void addCpus() {
    int numa = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < std::max(numa, 1); ++i) {
      Node cpu;
      cpu.kind = NodeKind::kCpu;
      cpu.id = "cpu" + std::to_string(i);
      cpu.index = i;
      if (hwloc_obj_t n = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, i)) {
        cpu.index = static_cast<int>(n->os_index);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, n);
        if (pkg == nullptr && n->parent != nullptr)
          pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, n->parent);
        if (pkg != nullptr) {
          if (const char* model = hwloc_obj_get_info_by_name(pkg, "CPUModel")) cpu.name = trimmed(model);
        }
      }
      cpuByNuma_[cpu.index] = static_cast<int>(host_->nodes.size());
      host_->nodes.push_back(cpu);
    }
    std::vector<int> cpus = host_->nodesOf(NodeKind::kCpu);
    for (size_t i = 0; i < cpus.size(); ++i) {
      for (size_t j = i + 1; j < cpus.size(); ++j) {
        Link l;
        l.a = cpus[i];
        l.b = cpus[j];
        l.kind = LinkKind::kCpu;
        host_->links.push_back(l);
      }
    }
  }

  // The CPU node closest to `obj` (its non-I/O ancestor's first NUMA node), or the first CPU.
  int cpuFor(hwloc_obj_t obj) {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, obj);
    if (anc != nullptr && anc->nodeset != nullptr) {
      int numa = hwloc_bitmap_first(anc->nodeset);
      auto it = cpuByNuma_.find(numa);
      if (it != cpuByNuma_.end()) return it->second;
    }
    return host_->nodesOf(NodeKind::kCpu).front();
  }

  // The node of a PCI bridge: made on first use, linked to its own parent in turn.
  int switchFor(hwloc_obj_t bridge) {
    auto it = switches_.find(bridge);
    if (it != switches_.end()) return it->second;
    Node sw;
    sw.kind = NodeKind::kPciSwitch;
    sw.id = "pci" + std::to_string(switches_.size());
    if (bridge->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
      sw.busId = busIdOf(bridge->attr->bridge.upstream.pci);
    int index = static_cast<int>(host_->nodes.size());
    host_->nodes.push_back(sw);
    switches_[bridge] = index;
    linkUp(bridge, index, sw.busId);
    return index;
  }

  // Links `node` (for hwloc object `obj`) to the nearest ancestor bridge that has more devices
  // below it than `obj`, or to its CPU.
  void linkUp(hwloc_obj_t obj, int node, const std::string& busId) {
    int count = below_.count(obj) != 0 ? below_[obj] : 1;
    int parent = -1;
    for (hwloc_obj_t a = obj->parent; a != nullptr && a->type == HWLOC_OBJ_BRIDGE; a = a->parent) {
      if (below_[a] > count) {
        parent = switchFor(a);
        break;
      }
    }
    if (parent < 0) parent = cpuFor(obj);
    Link l;
    l.a = node;
    l.b = parent;
    l.kind = LinkKind::kPcie;
    if (!busId.empty()) pcieLinkOf(busId, &l);
    host_->links.push_back(l);
  }

  void addDevice(hwloc_obj_t obj, const std::vector<CudaDeviceFacts>& cuda) {
    Node n;
    n.busId = busIdOf(obj->attr->pcidev);
    switch (interestOf(obj)) {
      case Interest::kGpu: {
        n.kind = NodeKind::kGpu;
        n.id = "gpu" + std::to_string(host_->count(NodeKind::kGpu));
        for (const CudaDeviceFacts& c : cuda) {
          if (normaliseBusId(c.busId) == n.busId) {
            n.index = c.ordinal;
            n.sm = c.sm;
            n.name = c.name;
          }
        }
        break;
      }
      case Interest::kNic:
        n.kind = NodeKind::kNic;
        n.id = "nic" + std::to_string(host_->count(NodeKind::kNic));
        nicFacts(n.busId, &n);
        break;
      case Interest::kNvSwitch:
        n.kind = NodeKind::kNvSwitch;
        n.id = "nvs" + std::to_string(host_->count(NodeKind::kNvSwitch));
        break;
      case Interest::kNone: return;
    }
    int index = static_cast<int>(host_->nodes.size());
    host_->nodes.push_back(n);
    // NVSwitches are reached over NVLink (found through NVML); their PCI side is management only.
    if (n.kind != NodeKind::kNvSwitch) linkUp(obj, index, n.busId);
  }

  hwloc_topology_t topo_;
  Host* host_;
  std::map<hwloc_obj_t, int> below_;     // interesting devices under each object
  std::map<hwloc_obj_t, int> switches_;  // bridge -> node
  std::map<int, int> cpuByNuma_;         // NUMA os index -> node
};

// NVML, opened at run time: only the few calls discovery needs, declared here (the ABI of
// libnvidia-ml.so.1's public header).
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
using NvmlDevice = void*;
constexpr int kNvmlMaxLinks = 18;
constexpr int kNvmlRemoteGpu = 0;  // NVML_NVLINK_DEVICE_TYPE_GPU (a far end of another type, 2, is an NVSwitch)
constexpr int kNvmlRemoteUnknown = 0xff;
constexpr int kNvmlP2pNvLink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK; status 0 is NVML_P2P_STATUS_OK

/// One active NVLink of a GPU: what NVML says is at the far end.
struct RemoteEnd {
  std::string busId;  // "" when NVML hides it (VMs report ffff:ff:ff.0)
  int type = kNvmlRemoteUnknown;
};

class Nvml {
 public:
  Nvml() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) return;
    load(&init_, "nvmlInit_v2");
    load(&shutdown_, "nvmlShutdown");
    load(&byBusId_, "nvmlDeviceGetHandleByPciBusId_v2");
    load(&linkState_, "nvmlDeviceGetNvLinkState");
    load(&remote_, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    load(&remoteType_, "nvmlDeviceGetNvLinkRemoteDeviceType");  // newer drivers only
    load(&p2p_, "nvmlDeviceGetP2PStatus");
    ready_ = init_ != nullptr && shutdown_ != nullptr && byBusId_ != nullptr && linkState_ != nullptr &&
             remote_ != nullptr && init_() == 0;
  }
  ~Nvml() {
    if (ready_) shutdown_();
    if (lib_ != nullptr) dlclose(lib_);
  }
  bool ready() const { return ready_; }

  /// The far ends of the active NVLinks of the GPU at `busId`.
  std::vector<RemoteEnd> remotes(const std::string& busId) {
    std::vector<RemoteEnd> out;
    NvmlDevice dev = device(busId);
    if (dev == nullptr) return out;
    for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
      int active = 0;
      if (linkState_(dev, link, &active) != 0 || active == 0) continue;
      RemoteEnd end;
      NvmlPciInfo pci{};
      if (remote_(dev, link, &pci) == 0) end.busId = normaliseBusId(pci.busId);
      if (end.busId.rfind("ffff:ff:ff", 0) == 0) end.busId.clear();
      if (remoteType_ != nullptr && remoteType_(dev, link, &end.type) != 0) end.type = kNvmlRemoteUnknown;
      out.push_back(end);
    }
    return out;
  }

  /// Whether NVML reports NVLink peer access between the GPUs at `a` and `b`.
  bool nvlinkPeers(const std::string& a, const std::string& b) {
    NvmlDevice x = device(a), y = device(b);
    int status = -1;
    return p2p_ != nullptr && x != nullptr && y != nullptr && p2p_(x, y, kNvmlP2pNvLink, &status) == 0 && status == 0;
  }

 private:
  template <class F>
  void load(F** fn, const char* name) {
    *fn = reinterpret_cast<F*>(dlsym(lib_, name));
  }
  NvmlDevice device(const std::string& busId) {
    NvmlDevice dev = nullptr;
    return byBusId_(busId.c_str(), &dev) == 0 ? dev : nullptr;
  }

  void* lib_ = nullptr;
  bool ready_ = false;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  int (*byBusId_)(const char*, NvmlDevice*) = nullptr;
  int (*linkState_)(NvmlDevice, unsigned, int*) = nullptr;
  int (*remote_)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  int (*remoteType_)(NvmlDevice, unsigned, int*) = nullptr;
  int (*p2p_)(NvmlDevice, NvmlDevice, int, int*) = nullptr;
};

int findByBusId(const Host& host, const std::string& busId) {
  for (size_t i = 0; i < host.nodes.size(); ++i) {
    if (!busId.empty() && host.nodes[i].busId == busId) return static_cast<int>(i);
  }
  return -1;
}

int addNvSwitch(Host* host, const std::string& busId) {
  Node sw;
  sw.kind = NodeKind::kNvSwitch;
  sw.id = "nvs" + std::to_string(host->count(NodeKind::kNvSwitch));
  sw.busId = busId;
  host->nodes.push_back(sw);
  return static_cast<int>(host->nodes.size()) - 1;
}

// Adds the NVLinks NVML reports, one Link per pair of ends with the link count. A far end is found
// by bus id (a GPU, or an NVSwitch made on first sight). Where NVML hides the far end's bus id (as
// in VMs), the links go to the GPU that NVML reports as the only NVLink peer, or, when there are
// several peers, to one switch shared by them.
void addNvLinks(Host* host) {
  Nvml nvml;
  if (!nvml.ready()) {
    BRAID_INFO(log::Subsys::kGraph, "NVML not available: no NVLink information (libnvidia-ml.so.1)");
    return;
  }
  std::map<std::pair<int, int>, int> counts;
  std::vector<int> gpus = host->nodesOf(NodeKind::kGpu);
  int hiddenSwitch = -1;
  for (int g : gpus) {
    int hidden = 0;
    for (const RemoteEnd& end : nvml.remotes(host->nodes[g].busId)) {
      int other = findByBusId(*host, end.busId);
      if (other < 0 && !end.busId.empty() && end.type != kNvmlRemoteGpu) other = addNvSwitch(host, end.busId);
      if (other < 0) {
        ++hidden;
        continue;
      }
      if (host->nodes[other].kind == NodeKind::kGpu && other < g) continue;  // counted from the other GPU
      ++counts[{g, other}];
    }
    if (hidden == 0) continue;
    std::vector<int> peers;
    for (int q : gpus) {
      if (q != g && nvml.nvlinkPeers(host->nodes[g].busId, host->nodes[q].busId)) peers.push_back(q);
    }
    if (peers.size() == 1) {
      if (peers[0] > g) counts[{g, peers[0]}] += hidden;
    } else {
      if (hiddenSwitch < 0) hiddenSwitch = addNvSwitch(host, "");
      counts[{g, hiddenSwitch}] += hidden;
    }
    BRAID_INFO(log::Subsys::kGraph, host->nodes[g].id, ": NVML hides the far end of ", hidden, " NVLink(s); ",
               peers.size() == 1 ? "they go to " + host->nodes[peers[0]].id + ", its only NVLink peer"
                                 : std::string("taken as a switch shared with its NVLink peers"));
  }
  for (const auto& kv : counts) {
    Link l;
    l.a = kv.first.first;
    l.b = kv.first.second;
    l.kind = LinkKind::kNvLink;
    l.count = kv.second;
    host->links.push_back(l);
  }
}

}  // namespace

std::string normaliseBusId(const std::string& busId) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(busId.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) {
    domain = 0;
    if (std::sscanf(busId.c_str(), "%x:%x.%x", &bus, &dev, &fn) != 3) {
      std::string lower = busId;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      return lower;
    }
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", domain & 0xffff, bus, dev, fn);
  return buf;
}

int pcieGenFromSpeed(const std::string& speed) {
  double gts = std::atof(speed.c_str());
  if (gts >= 60) return 6;
  if (gts >= 30) return 5;
  if (gts >= 15) return 4;
  if (gts >= 7.5) return 3;
  if (gts >= 4.5) return 2;
  if (gts >= 2) return 1;
  return 0;
}

// hwloc's components that start another vendor's runtime to list its devices. braid reads the CUDA
// devices itself (CudaDeviceFacts) and needs only the PCI tree, so none of them is loaded: they cost
// time at every init, and one of them changes the process's environment from the thread that runs
// discovery. hwloc's OpenCL component starts the installed OpenCL drivers; PoCL (Debian's and
// Ubuntu's CPU OpenCL driver) calls setenv("HWLOC_PLUGINS_PATH") while doing so. setenv that adds
// a variable moves the environment array and frees the old one, so another thread's getenv at that
// moment (another rank thread's hwloc, or CUDA) reads freed memory: the gpu tier's two SIGSEGVs in
// getenv under hwloc_topology_load (docs/reliability.md). TopologyDiscovery.LeavesTheEnvironmentAlone.
constexpr const char* kForeignRuntimeComponents[] = {"opencl", "levelzero", "rsmi", "cuda", "nvml", "gl"};

Status discoverHost(const std::string& hostId, const std::vector<CudaDeviceFacts>& cudaDevices, Host* out) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return systemError("hwloc_topology_init failed");
  std::unique_ptr<hwloc_topology, void (*)(hwloc_topology_t)> guard(topo, hwloc_topology_destroy);
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  for (const char* name : kForeignRuntimeComponents) {
    // -1: hwloc has no such component here, so there is nothing to leave out.
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, name);
  }
  {
    // Components are shared by every topology of the process; one discovery at a time.
    static std::mutex loading;
    std::lock_guard<std::mutex> lock(loading);
    if (hwloc_topology_load(topo) != 0) return systemError("hwloc_topology_load failed");
  }
  Host host;
  host.id = hostId;
  HwlocWalker(topo, &host).run(cudaDevices);
  addNvLinks(&host);
  *out = std::move(host);
  return Status::ok();
}

}  // namespace braid::topology

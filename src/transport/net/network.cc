#include "transport/net/network.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdarg>
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/log.h"
#include "core/param.h"
#include "transport/net/adapters.h"
#include "transport/net/socket_net.h"

namespace braid::network {
namespace {

thread_local std::string tWarnings;
thread_local std::string tLastInfo;  // the last informational line: a network may explain a failure so

const char* resultName(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "an unknown result";
  }
}

Code codeOf(ncclResult_t r) {
  switch (r) {
    case ncclRemoteError: return Code::kRemoteError;
    case ncclInvalidUsage: return Code::kInvalidUsage;
    case ncclInvalidArgument: return Code::kInvalidArgument;
    case ncclInternalError: return Code::kInternalError;
    default: return Code::kSystemError;
  }
}

std::string ptrSupportText(int bits) {
  std::string out;
  if (bits & kPtrHost) out += "HOST";
  if (bits & kPtrCuda) out += std::string(out.empty() ? "" : "|") + "CUDA";
  if (bits & kPtrDmaBuf) out += std::string(out.empty() ? "" : "|") + "DMABUF";
  return out.empty() ? "none" : out;
}

// BRAID_<name> wins over NCCL_<name>.
std::string setting(param::Id id, const char* ncclName) {
  std::string v = param::getString(id);
  if (!v.empty()) return v;
  const char* n = std::getenv(ncclName);
  return n != nullptr ? n : "";
}

// Loaded plugins stay loaded for the life of the process (as their tables are adapted once).
struct LoadedPlugin {
  void* lib = nullptr;
  NetV11 table{};
  std::string origin;
  std::string error;  // why it cannot be used ("" when usable)
  bool missing = false;
};

std::mutex gPluginsMu;
std::map<std::string, LoadedPlugin> gPlugins;

const LoadedPlugin& loadPlugin(const std::string& file) {
  std::lock_guard<std::mutex> lock(gPluginsMu);
  auto it = gPlugins.find(file);
  if (it != gPlugins.end()) return it->second;
  LoadedPlugin& p = gPlugins[file];
  p.lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p.lib == nullptr) {
    const char* why = dlerror();
    p.error = why != nullptr ? why : "dlopen failed";
    p.missing = p.error.find("No such file") != std::string::npos || p.error.find("cannot open") != std::string::npos;
    return p;
  }
  Status st = Status::ok();
  void* sym = nullptr;
  if ((sym = dlsym(p.lib, "ncclNetPlugin_v11")) != nullptr) {
    p.table = *static_cast<const NetV11*>(sym);
    p.origin = file + " (v11)";
  } else if ((sym = dlsym(p.lib, "ncclNetPlugin_v10")) != nullptr) {
    st = adaptV10(static_cast<const NetV10*>(sym), &p.table);
    p.origin = file + " (v10, adapted)";
  } else if ((sym = dlsym(p.lib, "ncclNetPlugin_v9")) != nullptr) {
    st = adaptV9(static_cast<const NetV9*>(sym), &p.table);
    p.origin = file + " (v9, adapted)";
  } else if ((sym = dlsym(p.lib, "ncclNetPlugin_v8")) != nullptr) {
    st = adaptV8(static_cast<const NetV8*>(sym), &p.table);
    p.origin = file + " (v8, adapted)";
  } else {
    p.error = "exports none of ncclNetPlugin_v11, _v10, _v9, _v8 (a plugin for another NCCL version?)";
    return p;
  }
  if (!st.isOk()) p.error = st.message();
  if (p.error.empty() && (p.table.name == nullptr || p.table.init == nullptr || p.table.devices == nullptr ||
                          p.table.getProperties == nullptr || p.table.listen == nullptr || p.table.connect == nullptr ||
                          p.table.accept == nullptr || p.table.isend == nullptr || p.table.irecv == nullptr ||
                          p.table.test == nullptr || p.table.closeSend == nullptr || p.table.closeRecv == nullptr ||
                          p.table.closeListen == nullptr || p.table.regMr == nullptr || p.table.deregMr == nullptr)) {
    p.error = "its table lacks a function every network must have";
  }
  return p;
}

}  // namespace

std::vector<std::string> pluginCandidates(const std::string& spec, bool* optional) {
  *optional = spec.empty();
  if (spec.empty()) return {"libnccl-net.so"};
  std::vector<std::string> out;
  if (strcasecmp(spec.c_str(), "none") == 0) return out;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string v = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    size_t b = v.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    v = v.substr(b, v.find_last_not_of(" \t") - b + 1);
    out.push_back(v);
    if (v.find('/') == std::string::npos) out.push_back("libnccl-net-" + v + ".so");
  }
  return out;
}

bool networkNameMatches(const std::string& wanted, const std::string& name, bool builtIn) {
  if (wanted.empty()) return true;
  if (strcasecmp(wanted.c_str(), name.c_str()) == 0) return true;
  return builtIn && strcasecmp(wanted.c_str(), "Socket") == 0;
}

std::string takePluginWarnings() {
  std::string out;
  out.swap(tWarnings);
  tLastInfo.clear();
  return out;
}

void pluginLogger(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  std::string message(text);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  if (level == kNetLogWarn || level == kNetLogAbort) {
    if (tWarnings.size() < 4096) tWarnings += (tWarnings.empty() ? "" : "; ") + message;
    BRAID_WARN(log::Subsys::kNet, message);
  } else if (level == kNetLogTrace) {
    BRAID_TRACE(log::Subsys::kNet, message);
  } else if (level != kNetLogNone) {
    tLastInfo = message;
    BRAID_INFO(log::Subsys::kNet, message);
  }
}

Status Network::init(const NetV11& table, const std::string& origin, bool builtIn, uint64_t commId,
                     std::unique_ptr<Network>* out) {
  std::unique_ptr<Network> n(new Network());
  n->table_ = table;
  n->name_ = table.name != nullptr ? table.name : "(unnamed)";
  n->origin_ = origin;
  n->builtIn_ = builtIn;
  takePluginWarnings();
  NetCommConfig config{kNetTrafficClassUndef};
  BRAID_RETURN_IF_ERROR(n->check(table.init(&n->ctx_, commId, &config, pluginLogger, nullptr), "init"));
  int count = 0;
  BRAID_RETURN_IF_ERROR(n->check(table.devices(&count), "devices"));
  if (count <= 0) return systemError("network " + n->name_ + " (" + origin + ") reports no device");
  for (int d = 0; d < count; ++d) {
    NetPropertiesV11 p{};
    BRAID_RETURN_IF_ERROR(n->check(table.getProperties(d, &p), "getProperties(" + std::to_string(d) + ")"));
    n->props_.push_back(p);
  }
  *out = std::move(n);
  return Status::ok();
}

Status Network::fromTable(const NetV11& table, const std::string& origin, uint64_t commId,
                          std::unique_ptr<Network>* out) {
  return init(table, origin, false, commId, out);
}

Status Network::open(uint64_t commId, std::unique_ptr<Network>* out) {
  std::string spec = setting(param::Id::kNetPlugin, "NCCL_NET_PLUGIN");
  std::string wanted = setting(param::Id::kNet, "NCCL_NET");
  bool optional = false;
  std::vector<std::string> files = pluginCandidates(spec, &optional);
  std::string tried;
  for (const std::string& file : files) {
    const LoadedPlugin& p = loadPlugin(file);
    if (!p.error.empty()) {
      if (!(p.missing && (optional || files.size() > 1))) {
        BRAID_WARN(log::Subsys::kNet, "net plugin ", file, " not used: ", p.error);
      } else {
        BRAID_INFO(log::Subsys::kNet, "net plugin ", file, " not found");
      }
      tried += (tried.empty() ? "" : ", ") + file + (p.missing ? " (not found)" : " (unusable)");
      continue;
    }
    std::string name = p.table.name != nullptr ? p.table.name : "";
    if (!networkNameMatches(wanted, name, false)) {
      BRAID_INFO(log::Subsys::kNet, "net plugin ", p.origin, " is network ", name, ", not BRAID_NET/NCCL_NET=", wanted);
      tried += (tried.empty() ? "" : ", ") + name + " from " + file;
      continue;
    }
    Status st = init(p.table, p.origin, false, commId, out);
    if (st.isOk()) {
      BRAID_INFO(log::Subsys::kNet, "using network ", (*out)->name(), " from ", p.origin);
      return st;
    }
    BRAID_WARN(log::Subsys::kNet, "net plugin ", p.origin, " not used: ", st.message());
    tried += (tried.empty() ? "" : ", ") + name + " from " + file + " (" + st.message() + ")";
  }
  const NetV11& builtIn = socketNetwork();
  if (!networkNameMatches(wanted, builtIn.name, true)) {
    return invalidUsage("BRAID_NET/NCCL_NET='" + wanted + "' names no network here: the built-in one is " +
                        builtIn.name + (tried.empty() ? std::string() : "; plugins tried: " + tried));
  }
  if (!spec.empty() && strcasecmp(spec.c_str(), "none") != 0) {
    BRAID_WARN(log::Subsys::kNet, "NET_PLUGIN='", spec, "': no plugin usable (", tried,
               "); using braid's built-in socket network");
  }
  BRAID_RETURN_IF_ERROR(init(builtIn, "built-in", true, commId, out));
  BRAID_INFO(log::Subsys::kNet, "using network ", (*out)->name(), " (built-in)");
  return Status::ok();
}

Network::~Network() {
  if (table_.finalize != nullptr && ctx_ != nullptr) table_.finalize(ctx_);
}

std::string Network::describeDevice(int dev) const {
  const NetPropertiesV11& p = properties(dev);
  return name_ + "/" + std::to_string(dev) + " (" + (p.name != nullptr ? p.name : "?") + ", ptrSupport " +
         ptrSupportText(p.ptrSupport) + ", " + std::to_string(p.speed) + " Mb/s)";
}

Status Network::check(ncclResult_t result, const std::string& call) const {
  if (result == ncclSuccess) return Status::ok();
  std::string info = tLastInfo;
  std::string said = takePluginWarnings();
  if (said.empty()) said = info;
  return Status(codeOf(result), "network " + name_ + ": " + call + " failed with " + resultName(result) +
                                    (said.empty() ? std::string(" (it logged nothing)") : ": " + said));
}

}  // namespace braid::network

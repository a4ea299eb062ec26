#include "nccl_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <mutex>

namespace braid::perf::nccl {
namespace {

// braid numbers its data types and ops as NCCL does, which is what lets toNccl cast.
static_assert(braidInt8 == ncclInt8 && braidUint8 == ncclUint8 && braidInt32 == ncclInt32 &&
                  braidUint32 == ncclUint32 && braidInt64 == ncclInt64 && braidUint64 == ncclUint64 &&
                  braidFloat16 == ncclFloat16 && braidFloat32 == ncclFloat32 && braidFloat64 == ncclFloat64 &&
                  braidBfloat16 == ncclBfloat16 && braidFloat8e4m3 == ncclFloat8e4m3 &&
                  braidFloat8e5m2 == ncclFloat8e5m2,
              "braid's data types are numbered as NCCL's");
static_assert(braidSum == ncclSum && braidProd == ncclProd && braidMax == ncclMax && braidMin == ncclMin &&
                  braidAvg == ncclAvg,
              "braid's reduction ops are numbered as NCCL's");

template <class F>
bool resolve(void* handle, const char* name, F* out, std::string* missing) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *out != nullptr;
}

}  // namespace

const Api* load(const std::string& path, std::string* error) {
  static std::mutex mu;
  static Api api;
  static std::string failure;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    // Local symbols: the library's nccl* must not stand in for anything else in this process.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      failure = "cannot load NCCL '" + path + "': " + (why != nullptr ? why : "dlopen failed") +
                " (install NCCL or name the library with --nccl-lib)";
    } else {
      std::string missing;
      resolve(handle, "ncclGetUniqueId", &api.getUniqueId, &missing);
      resolve(handle, "ncclCommInitRank", &api.commInitRank, &missing);
      resolve(handle, "ncclCommDestroy", &api.commDestroy, &missing);
      resolve(handle, "ncclAllReduce", &api.allReduce, &missing);
      resolve(handle, "ncclBroadcast", &api.broadcast, &missing);
      resolve(handle, "ncclReduce", &api.reduce, &missing);
      resolve(handle, "ncclAllGather", &api.allGather, &missing);
      resolve(handle, "ncclReduceScatter", &api.reduceScatter, &missing);
      resolve(handle, "ncclSend", &api.send, &missing);
      resolve(handle, "ncclRecv", &api.recv, &missing);
      resolve(handle, "ncclGroupStart", &api.groupStart, &missing);
      resolve(handle, "ncclGroupEnd", &api.groupEnd, &missing);
      resolve(handle, "ncclGetErrorString", &api.getErrorString, &missing);
      resolve(handle, "ncclGetVersion", &api.getVersion, &missing);
      // The file actually loaded, for the header: a bare name may resolve to braid's own drop-in
      // libnccl.so.2 if that comes first on the library path.
      struct link_map* map = nullptr;
      api.path = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name[0] ? map->l_name : path;
      if (!missing.empty()) {
        failure = "NCCL '" + api.path + "' lacks " + missing;
      } else if (api.getVersion(&api.version) != ncclSuccess) {
        failure = "NCCL '" + api.path + "': ncclGetVersion failed";
      }
    }
  }
  if (!failure.empty()) {
    *error = failure;
    return nullptr;
  }
  return &api;
}

}  // namespace braid::perf::nccl

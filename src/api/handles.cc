#include "api/handles.h"

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace braid::api {
namespace {

struct Registry {
  std::mutex mu;
  uintptr_t next = 1;
  std::unordered_map<uintptr_t, std::shared_ptr<core::Comm>> live;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: handles may be used during exit
  return *r;
}

// Handles are multiples of 16 so they look like (and align like) pointers to callers that print them.
constexpr uintptr_t kHandleShift = 4;

uintptr_t key(braidComm_t handle) { return reinterpret_cast<uintptr_t>(handle) >> kHandleShift; }

}  // namespace

braidComm_t registerComm(std::shared_ptr<core::Comm> comm) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  uintptr_t k = r.next++;
  r.live.emplace(k, std::move(comm));
  return reinterpret_cast<braidComm_t>(k << kHandleShift);
}

Status lookupComm(braidComm_t handle, const char* name, std::shared_ptr<core::Comm>* out) {
  if (handle == nullptr) return invalidArgument(std::string("'") + name + "' is NULL");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(key(handle));
  if ((reinterpret_cast<uintptr_t>(handle) & ((1u << kHandleShift) - 1)) != 0 || it == r.live.end()) {
    return invalidUsage(std::string("'") + name +
                        "' is not a live communicator (destroyed, aborted, or not made by braid)");
  }
  *out = it->second;
  return Status::ok();
}

Status usableComm(braidComm_t handle, std::shared_ptr<core::Comm>* out) {
  BRAID_RETURN_IF_ERROR(lookupComm(handle, "comm", out));
  return (*out)->checkUsable().withContext("'comm'");
}

std::shared_ptr<core::Comm> unregisterComm(braidComm_t handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(key(handle));
  if (it == r.live.end()) return nullptr;
  std::shared_ptr<core::Comm> comm = std::move(it->second);
  r.live.erase(it);
  return comm;
}

}  // namespace braid::api

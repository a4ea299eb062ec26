#include "core/registrations.h"

#include <atomic>
#include <string>

namespace braid::core {
namespace {

// Handles of every communicator's registrations, never reused: shifted so that they look like the
// aligned pointers callers expect and are never null.
std::atomic<uintptr_t> nextHandle{1};
constexpr int kHandleShift = 4;

void* toHandle(uintptr_t key) { return reinterpret_cast<void*>(key << kHandleShift); }
uintptr_t toKey(const void* handle) { return reinterpret_cast<uintptr_t>(handle) >> kHandleShift; }

const char* kindName(Registrations::Kind kind) {
  return kind == Registrations::Kind::kBuffer ? "buffer registration" : "window";
}

}  // namespace

Status Registrations::add(Kind kind, const void* base, size_t bytes, void** handle) {
  const auto at = reinterpret_cast<uintptr_t>(base);
  if (bytes > UINTPTR_MAX - at) {
    return invalidArgument("'size' = " + std::to_string(bytes) + " runs past the end of the address space");
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, e] : byHandle_) {
    if (e.kind == kind && e.base == at && e.bytes == bytes) {
      if (e.refs == INT32_MAX) return invalidUsage("this range is registered too many times");
      ++e.refs;
      *handle = toHandle(key);
      return Status::ok();
    }
  }
  const uintptr_t key = nextHandle.fetch_add(1, std::memory_order_relaxed);
  byHandle_.emplace(key, Entry{kind, at, bytes, 1});
  *handle = toHandle(key);
  return Status::ok();
}

Status Registrations::remove(Kind kind, const void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reinterpret_cast<uintptr_t>(handle) % (uintptr_t{1} << kHandleShift) == 0 ? byHandle_.find(toKey(handle))
                                                                                      : byHandle_.end();
  if (it == byHandle_.end() || it->second.kind != kind) {
    return invalidArgument(std::string("the handle is not a live ") + kindName(kind) +
                           " of this communicator (never made, deregistered already, or another communicator's)");
  }
  if (--it->second.refs == 0) byHandle_.erase(it);
  return Status::ok();
}

const Registrations::Entry* Registrations::find(const void* p, size_t bytes, const Kind* only, uintptr_t* key) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (const auto& [k, e] : byHandle_) {
    if (only != nullptr && e.kind != *only) continue;
    if (at >= e.base && at - e.base <= e.bytes && bytes <= e.bytes - (at - e.base) &&
        (bytes > 0 || at < e.base + e.bytes)) {
      *key = k;
      return &e;
    }
  }
  return nullptr;
}

bool Registrations::covers(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  uintptr_t key = 0;
  return find(p, bytes, nullptr, &key) != nullptr;
}

bool Registrations::within(Kind kind, const void* p, size_t bytes, void** handle) {
  std::lock_guard<std::mutex> lock(mu_);
  uintptr_t key = 0;
  if (find(p, bytes, &kind, &key) == nullptr) return false;
  *handle = toHandle(key);
  return true;
}

}  // namespace braid::core

#include "core/registrations.h"

#include <string>

namespace braid::core {
namespace {

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
  for (auto& [h, e] : byHandle_) {
    if (e->kind == kind && e->base == at && e->bytes == bytes) {
      if (e->refs == INT32_MAX) return invalidUsage("this range is registered too many times");
      ++e->refs;
      *handle = const_cast<void*>(h);
      return Status::ok();
    }
  }
  auto entry = std::make_unique<Entry>(Entry{kind, at, bytes, 1});
  *handle = entry.get();
  byHandle_.emplace(entry.get(), std::move(entry));
  return Status::ok();
}

Status Registrations::remove(Kind kind, const void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = byHandle_.find(handle);
  if (it == byHandle_.end() || it->second->kind != kind) {
    return invalidArgument(std::string("the handle is not a live ") + kindName(kind) +
                           " of this communicator (never made, deregistered already, or another communicator's)");
  }
  if (--it->second->refs == 0) byHandle_.erase(it);
  return Status::ok();
}

size_t Registrations::count(Kind kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [h, e] : byHandle_) n += e->kind == kind ? 1 : 0;
  return n;
}

}  // namespace braid::core

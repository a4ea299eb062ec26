// The one guard every C entry point runs its body in: it turns a Status (and any exception) into a
// braidResult_t, records the message as the thread's last error, and logs failures.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "braid/braid.h"
#include "core/status.h"

namespace braid::api {

/// Records `s` for braidGetLastError and logs it; returns the public code.
braidResult_t finish(const char* function, const Status& s);

/// The calling thread's last error message.
const char* lastError();

template <class Body>
braidResult_t guard(const char* function, Body&& body) noexcept {
  try {
    return finish(function, body());
  } catch (const std::bad_alloc&) {
    return finish(function, systemError("out of memory"));
  } catch (const std::exception& e) {
    return finish(function, internalError(std::string("unexpected exception: ") + e.what()));
  } catch (...) {
    return finish(function, internalError("unexpected exception of unknown type"));
  }
}

}  // namespace braid::api

#include "api/guard.h"

#include "core/log.h"

namespace braid::api {
namespace {
thread_local std::string tlsLastError;
}

static_assert(static_cast<int>(Code::kTimeout) == braidTimeout, "Code and braidResult_t agree");
static_assert(static_cast<int>(Code::kInProgress) == braidInProgress, "Code and braidResult_t agree");
static_assert(static_cast<int>(Code::kCudaError) == braidUnhandledCudaError, "Code and braidResult_t agree");

braidResult_t finish(const char* function, const Status& s) {
  if (s.isOk() || s.code() == Code::kInProgress) {
    tlsLastError.clear();
  } else {
    tlsLastError = std::string(function) + ": " + s.message();
    BRAID_WARN(log::Subsys::kInit, tlsLastError, " (", codeName(s.code()), ")");
  }
  return static_cast<braidResult_t>(s.code());
}

const char* lastError() { return tlsLastError.c_str(); }

}  // namespace braid::api

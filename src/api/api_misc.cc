// C entry points that need no communicator: version and error strings.
#include "api/guard.h"
#include "api/validate.h"

extern "C" {

braidResult_t braidGetVersion(int* version) {
  return braid::api::guard("braidGetVersion", [&]() -> braid::Status {
    BRAID_RETURN_IF_ERROR(braid::api::checkNotNull(version, "version"));
    *version = BRAID_VERSION_CODE;
    return braid::Status::ok();
  });
}

const char* braidGetErrorString(braidResult_t result) {
  if (static_cast<int>(result) < 0 || result >= braidNumResults) return "unknown result code";
  return braid::codeName(static_cast<braid::Code>(result));
}

const char* braidGetLastError(void) { return braid::api::lastError(); }

}  // extern "C"

#include "core/status.h"

#include <cstring>

namespace braid {

const char* codeName(Code code) {
  switch (code) {
    case Code::kOk: return "no error";
    case Code::kCudaError: return "unhandled CUDA error";
    case Code::kSystemError: return "system error";
    case Code::kInternalError: return "internal error";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kInvalidUsage: return "invalid usage";
    case Code::kRemoteError: return "remote error";
    case Code::kInProgress: return "operation in progress";
    case Code::kTimeout: return "timeout";
  }
  return "unknown error code";
}

Status Status::withContext(const std::string& context) const {
  if (isOk()) return *this;
  return Status(code_, context + ": " + message_);
}

Status errnoError(const std::string& what, int err) {
  char buf[256];
  // GNU strerror_r returns the message pointer, which may or may not be buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return Status(Code::kSystemError, what + ": " + text);
}

}  // namespace braid

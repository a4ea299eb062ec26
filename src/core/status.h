// Status: the one error value used inside braid.
//
// Every internal function that can fail returns a [[nodiscard]] Status: a code (the same set as the
// public braidResult_t) and a message that says what went wrong and with which rank or peer.
// BRAID_RETURN_IF_ERROR propagates it; src/api turns it into a braidResult_t at the C boundary.
#pragma once

#include <string>
#include <utility>

namespace braid {

/// Error codes; the values equal the public braidResult_t ones (checked in src/api).
enum class Code : int {
  kOk = 0,
  kCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
  kTimeout = 8,
};

/// Short name of a code, e.g. "invalid argument".
const char* codeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Returns the same status with `context + ": "` put in front of its message.
  Status withContext(const std::string& context) const;

  /// Marks a status that is deliberately dropped (cleanup paths).
  void ignore() const {}

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status invalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
inline Status invalidUsage(std::string m) { return Status(Code::kInvalidUsage, std::move(m)); }
inline Status systemError(std::string m) { return Status(Code::kSystemError, std::move(m)); }
inline Status internalError(std::string m) { return Status(Code::kInternalError, std::move(m)); }
inline Status remoteError(std::string m) { return Status(Code::kRemoteError, std::move(m)); }
inline Status timeoutError(std::string m) { return Status(Code::kTimeout, std::move(m)); }

/// A system call failed: message "<what>: <strerror(err)>".
Status errnoError(const std::string& what, int err);

}  // namespace braid

/// Returns from the enclosing function when `expr` yields a failed Status.
#define BRAID_RETURN_IF_ERROR(expr)                  \
  do {                                               \
    ::braid::Status braid_status_ = (expr);          \
    if (!braid_status_.isOk()) return braid_status_; \
  } while (0)

// The logger: one per process, configured from BRAID_DEBUG, BRAID_DEBUG_SUBSYS and BRAID_DEBUG_FILE.
//
// A line reads   host:pid:tid [rank] BRAID INFO BOOTSTRAP message
// The rank comes from the calling thread's log context (ScopedRank), set by the C entry points and
// by background threads that work for one communicator; "-" where no rank applies.
#pragma once

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

namespace braid::log {

enum class Level : int { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kTrace = 4 };

enum class Subsys : uint32_t {
  kInit = 1u << 0,
  kBootstrap = 1u << 1,
  kColl = 1u << 2,
  kTune = 1u << 3,
  kGraph = 1u << 4,
  kNet = 1u << 5,
  kEnv = 1u << 6,
  kAll = ~0u,
};

struct Settings {
  Level level = Level::kWarn;
  uint32_t subsysMask = static_cast<uint32_t>(Subsys::kAll);
  std::string file;  // empty: stderr
};

/// Parses a BRAID_DEBUG value (case-insensitive); false for an unknown name.
bool parseLevel(const std::string& text, Level* out);

/// Parses a BRAID_DEBUG_SUBSYS list such as "INIT,NET" or "ALL,^NET"; false for an unknown name.
bool parseSubsys(const std::string& text, uint32_t* mask);

/// Replaces %h by `host` and %p by `pid` in a BRAID_DEBUG_FILE pattern.
std::string expandFileName(const std::string& pattern, const std::string& host, long pid);

/// Formats one log line (without the trailing newline).
std::string formatLine(const std::string& host, long pid, long tid, int rank, Level level, Subsys subsys,
                       const std::string& message);

const char* levelName(Level level);
const char* subsysName(Subsys subsys);

/// True when a message of this level and subsystem would be written.
bool enabled(Level level, Subsys subsys);

/// Writes one message (thread-safe). Use the BRAID_WARN/INFO/TRACE macros instead.
void write(Level level, Subsys subsys, const std::string& message);

/// Logs `text` once per process at level VERSION: shown when BRAID_DEBUG is VERSION, INFO or TRACE
/// (not with the default WARN, so that a quiet run stays quiet).
void logVersionOnce(const std::string& text);

/// Re-reads the settings from the environment (tests change BRAID_DEBUG between cases).
void reloadFromEnvironment();

/// The rank shown in this thread's log lines while the object lives.
class ScopedRank {
 public:
  explicit ScopedRank(int rank);
  ~ScopedRank();
  ScopedRank(const ScopedRank&) = delete;
  ScopedRank& operator=(const ScopedRank&) = delete;

 private:
  int previous_;
};

template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace braid::log

#define BRAID_LOG(level, subsys, ...)                                        \
  do {                                                                       \
    if (::braid::log::enabled(level, subsys)) {                              \
      ::braid::log::write(level, subsys, ::braid::log::concat(__VA_ARGS__)); \
    }                                                                        \
  } while (0)
#define BRAID_WARN(subsys, ...) BRAID_LOG(::braid::log::Level::kWarn, subsys, __VA_ARGS__)
#define BRAID_INFO(subsys, ...) BRAID_LOG(::braid::log::Level::kInfo, subsys, __VA_ARGS__)
#define BRAID_TRACE(subsys, ...) BRAID_LOG(::braid::log::Level::kTrace, subsys, __VA_ARGS__)

#include "core/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <mutex>

#include "core/param.h"

namespace braid::log {
namespace {

struct SubsysName {
  Subsys subsys;
  const char* name;
};
constexpr SubsysName kSubsysNames[] = {
    {Subsys::kInit, "INIT"},   {Subsys::kBootstrap, "BOOTSTRAP"},
    {Subsys::kColl, "COLL"},   {Subsys::kTune, "TUNE"},
    {Subsys::kGraph, "GRAPH"}, {Subsys::kNet, "NET"},
    {Subsys::kEnv, "ENV"},     {Subsys::kAll, "ALL"},
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string hostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

thread_local int tlsRank = -1;

// The process logger. Settings are swapped under the mutex; `level` and `mask` are atomics so that
// enabled() costs two relaxed loads on paths that log nothing.
class Logger {
 public:
  Logger() { reload(); }
  ~Logger() { closeFile(); }

  void reload() {
    Settings s;
    std::string levelText = param::getString(param::Id::kDebug);
    std::string subsysText = param::getString(param::Id::kDebugSubsys);
    bool levelOk = parseLevel(levelText, &s.level);
    bool subsysOk = parseSubsys(subsysText, &s.subsysMask);
    s.file = param::getString(param::Id::kDebugFile);
    {
      std::lock_guard<std::mutex> lock(mu_);
      closeFile();
      if (!s.file.empty()) {
        std::string name = expandFileName(s.file, host_, static_cast<long>(getpid()));
        out_ = std::fopen(name.c_str(), "a");
        if (out_ == nullptr) {
          out_ = stderr;
          std::fprintf(stderr, "braid: cannot open BRAID_DEBUG_FILE '%s' (%s); logging to stderr\n", name.c_str(),
                       std::strerror(errno));
        }
      } else {
        out_ = stderr;
      }
      level_.store(static_cast<int>(s.level), std::memory_order_relaxed);
      mask_.store(s.subsysMask, std::memory_order_relaxed);
    }
    if (!levelOk) write(Level::kWarn, Subsys::kEnv, "BRAID_DEBUG='" + levelText + "' is not a level; using WARN");
    if (!subsysOk) write(Level::kWarn, Subsys::kEnv, "BRAID_DEBUG_SUBSYS='" + subsysText + "' has an unknown name");
  }

  bool enabled(Level level, Subsys subsys) const {
    return static_cast<int>(level) <= level_.load(std::memory_order_relaxed) &&
           (mask_.load(std::memory_order_relaxed) & static_cast<uint32_t>(subsys)) != 0;
  }

  void write(Level level, Subsys subsys, const std::string& message) {
    long tid = static_cast<long>(syscall(SYS_gettid));
    std::string line = formatLine(host_, static_cast<long>(getpid()), tid, tlsRank, level, subsys, message);
    std::lock_guard<std::mutex> lock(mu_);
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
  }

 private:
  void closeFile() {
    if (out_ != nullptr && out_ != stderr) std::fclose(out_);
    out_ = nullptr;
  }

  std::mutex mu_;
  std::FILE* out_ = nullptr;
  std::string host_ = hostName();
  std::atomic<int> level_{static_cast<int>(Level::kWarn)};
  std::atomic<uint32_t> mask_{static_cast<uint32_t>(Subsys::kAll)};
};

Logger& logger() {
  static Logger* instance = new Logger();  // never destroyed: threads may log during exit
  return *instance;
}

}  // namespace

bool parseLevel(const std::string& text, Level* out) {
  std::string t = upper(trim(text));
  if (t == "NONE")
    *out = Level::kNone;
  else if (t == "VERSION")
    *out = Level::kVersion;
  else if (t == "WARN")
    *out = Level::kWarn;
  else if (t == "INFO")
    *out = Level::kInfo;
  else if (t == "TRACE")
    *out = Level::kTrace;
  else
    return false;
  return true;
}

bool parseSubsys(const std::string& text, uint32_t* mask) {
  uint32_t include = 0, exclude = 0;
  bool sawInclude = false, ok = true;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = upper(trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) continue;
    bool negate = item[0] == '^';
    if (negate) item = item.substr(1);
    uint32_t bits = 0;
    for (const SubsysName& s : kSubsysNames) {
      if (item == s.name) bits = static_cast<uint32_t>(s.subsys);
    }
    if (bits == 0) {
      ok = false;
      continue;
    }
    if (negate) {
      exclude |= bits;
    } else {
      include |= bits;
      sawInclude = true;
    }
  }
  // "^NET" alone means everything but NET.
  if (!sawInclude) include = static_cast<uint32_t>(Subsys::kAll);
  *mask = include & ~exclude;
  return ok;
}

std::string expandFileName(const std::string& pattern, const std::string& host, long pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && (pattern[i + 1] == 'h' || pattern[i + 1] == 'p')) {
      out += pattern[i + 1] == 'h' ? host : std::to_string(pid);
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

const char* levelName(Level level) {
  switch (level) {
    case Level::kNone: return "NONE";
    case Level::kVersion: return "VERSION";
    case Level::kWarn: return "WARN";
    case Level::kInfo: return "INFO";
    case Level::kTrace: return "TRACE";
  }
  return "?";
}

const char* subsysName(Subsys subsys) {
  for (const SubsysName& s : kSubsysNames) {
    if (s.subsys == subsys) return s.name;
  }
  return "?";
}

std::string formatLine(const std::string& host, long pid, long tid, int rank, Level level, Subsys subsys,
                       const std::string& message) {
  std::string rankText = rank >= 0 ? std::to_string(rank) : std::string("-");
  return host + ":" + std::to_string(pid) + ":" + std::to_string(tid) + " [" + rankText + "] BRAID " +
         levelName(level) + " " + subsysName(subsys) + " " + message;
}

bool enabled(Level level, Subsys subsys) { return logger().enabled(level, subsys); }

void write(Level level, Subsys subsys, const std::string& message) { logger().write(level, subsys, message); }

void reloadFromEnvironment() { logger().reload(); }

void logVersionOnce(const std::string& text) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (enabled(Level::kInfo, Subsys::kInit) ||
        (enabled(Level::kVersion, Subsys::kInit) && !enabled(Level::kWarn, Subsys::kInit))) {
      write(Level::kVersion, Subsys::kInit, text);
    }
  });
}

ScopedRank::ScopedRank(int rank) : previous_(tlsRank) { tlsRank = rank; }
ScopedRank::~ScopedRank() { tlsRank = previous_; }

}  // namespace braid::log

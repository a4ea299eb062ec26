#include "core/param.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "core/log.h"

extern char** environ;

namespace braid::param {
namespace {

const Spec kTable[] = {
#define X(id, name, type, def, doc) {Id::id, name, Type::type, def, doc},
#include "core/param_table.def"
#undef X
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == kNumParams, "one row per id");

}  // namespace

const Spec* table() { return kTable; }

const Spec& spec(Id id) { return kTable[static_cast<int>(id)]; }

std::string getString(Id id) {
  const Spec& s = spec(id);
  const char* v = std::getenv(s.name);
  return (v != nullptr && v[0] != '\0') ? std::string(v) : std::string(s.defaultValue);
}

bool parseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') return false;
  *out = v;
  return true;
}

int64_t getInt(Id id) {
  const Spec& s = spec(id);
  int64_t value = 0;
  std::string text = getString(id);
  if (parseInt(text, &value)) return value;
  static std::mutex mu;
  static std::set<int> warned;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (warned.insert(static_cast<int>(id)).second) {
      BRAID_WARN(log::Subsys::kEnv, s.name, "='", text, "' is not an integer; using the default ", s.defaultValue);
    }
  }
  parseInt(s.defaultValue, &value);
  return value;
}

std::string unknownVariables(char** env) {
  std::string unknown;
  for (char** e = env; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "BRAID_", 6) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    std::string name = eq ? std::string(*e, eq - *e) : std::string(*e);
    bool known = false;
    for (const Spec& s : kTable) known = known || name == s.name;
    // BRAID_TEST_* variables belong to braid's own test programs, not to the library.
    if (!known && name.rfind("BRAID_TEST_", 0) != 0) unknown += (unknown.empty() ? "" : ", ") + name;
  }
  return unknown;
}

void warnUnknownOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::string unknown = unknownVariables(environ);
    if (!unknown.empty()) {
      BRAID_WARN(log::Subsys::kEnv, "unknown environment variable(s) ignored: ", unknown,
                 " (tools/braid-env lists the known ones)");
    }
  });
}

std::string markdown() {
  std::string out =
      "# Environment variables\n\n"
      "Generated from src/core/param_table.def by `braid-env --markdown`; do not edit by hand.\n\n"
      "| variable | type | default | meaning |\n|---|---|---|---|\n";
  for (const Spec& s : kTable) {
    out += std::string("| `") + s.name + "` | " + (s.type == Type::kInt ? "integer" : "string") + " | " +
           (s.defaultValue[0] ? std::string("`") + s.defaultValue + "`" : std::string("(unset)")) + " | " + s.doc +
           " |\n";
  }
  return out;
}

}  // namespace braid::param

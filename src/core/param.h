// The parameter table: every BRAID_* environment variable braid reads, declared once.
//
// Values are read from the environment at each call (they are read at init time, not on hot
// paths), so tests can change them. An unparsable integer is reported once and its default used.
#pragma once

#include <cstdint>
#include <string>

namespace braid::param {

enum class Type { kInt, kString };

enum class Id : int {
#define X(id, name, type, def, doc) id,
#include "core/param_table.def"
#undef X
  kCount
};

struct Spec {
  Id id;
  const char* name;
  Type type;
  const char* defaultValue;
  const char* doc;
};

/// All parameters, in table order.
const Spec* table();
constexpr int kNumParams = static_cast<int>(Id::kCount);

const Spec& spec(Id id);

/// The raw value: the environment's if set (and non-empty), otherwise the default.
std::string getString(Id id);

/// An integer parameter; an unparsable value is warned about once and the default returned.
int64_t getInt(Id id);

/// Parses a whole decimal integer; false for empty strings, junk or overflow.
bool parseInt(const std::string& text, int64_t* out);

/// Names of BRAID_* variables in `environ` that the table does not declare.
std::string unknownVariables(char** environ);

/// Logs a warning for each unknown BRAID_* variable of this process, once per process.
void warnUnknownOnce();

/// The table as a Markdown document (docs/environment.md).
std::string markdown();

}  // namespace braid::param

// Sizes on command lines: "4096", "64K", "1.5M", "2G" (powers of 1024).
#pragma once

#include <cstddef>
#include <cstdlib>

namespace braid::core {

/// Parses `s` as a byte count with an optional K, M or G suffix; false if anything else follows
/// the number or it is negative.
inline bool parseByteSize(const char* s, size_t* out) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || v < 0) return false;
  double mult = 1;
  if (*end == 'K' || *end == 'k')
    mult = 1024, ++end;
  else if (*end == 'M' || *end == 'm')
    mult = 1024.0 * 1024, ++end;
  else if (*end == 'G' || *end == 'g')
    mult = 1024.0 * 1024 * 1024, ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * mult);
  return true;
}

}  // namespace braid::core

// Facts about the public element types and reduction ops.
#pragma once

#include <cstddef>

#include "braid/braid.h"

namespace braid::core {

/// True for the values braid.h defines.
inline bool isValidType(int t) { return t >= 0 && t < braidNumTypes; }
inline bool isValidOp(int op) { return op >= 0 && op < braidNumOps; }

/// Bytes per element; 0 for an invalid type.
size_t typeSize(braidDataType_t type);

const char* typeName(braidDataType_t type);
const char* opName(braidRedOp_t op);

}  // namespace braid::core

#include "core/datatype.h"

namespace braid::core {
namespace {

struct TypeInfo {
  const char* name;
  size_t size;
};
// Indexed by braidDataType_t.
constexpr TypeInfo kTypes[braidNumTypes] = {
    {"int8", 1},    {"uint8", 1},   {"int32", 4},   {"uint32", 4},   {"int64", 8},      {"uint64", 8},
    {"float16", 2}, {"float32", 4}, {"float64", 8}, {"bfloat16", 2}, {"float8e4m3", 1}, {"float8e5m2", 1},
};
constexpr const char* kOps[braidNumOps] = {"sum", "prod", "max", "min", "avg"};

}  // namespace

size_t typeSize(braidDataType_t type) { return isValidType(type) ? kTypes[type].size : 0; }

const char* typeName(braidDataType_t type) { return isValidType(type) ? kTypes[type].name : "invalid"; }

const char* opName(braidRedOp_t op) { return isValidOp(op) ? kOps[op] : "invalid"; }

}  // namespace braid::core

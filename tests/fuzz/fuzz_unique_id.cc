// The 128 bytes of a braidUniqueId, which travel through the user's own channel (MPI, a file, an
// environment variable) and may arrive cut, stale or made up.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "bootstrap/bootstrap.h"

using namespace braid::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  UniqueIdBytes id{};
  std::memcpy(id.bytes, data, size < sizeof(id.bytes) ? size : sizeof(id.bytes));
  UniqueIdInfo info;
  decodeUniqueId(id, &info).ignore();
  return 0;
}

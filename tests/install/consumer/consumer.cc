// Links against an installed braid and checks that the library answers: version, a one-rank
// host communicator, and an error message for a bad argument.
#include <braid/braid.h>

#include <cstdio>
#include <cstring>

int main() {
  int version = 0;
  if (braidGetVersion(&version) != braidSuccess || version != BRAID_VERSION_CODE) {
    std::printf("version mismatch: library %d, header %d\n", version, BRAID_VERSION_CODE);
    return 1;
  }
  braidUniqueId id;
  braidComm_t comm = nullptr;
  braidConfig_t config = BRAID_CONFIG_INITIALIZER;
  config.deviceKind = braidDeviceHost;
  if (braidGetUniqueId(&id) != braidSuccess || braidCommInitRankConfig(&comm, 1, id, 0, &config) != braidSuccess) {
    std::printf("init failed: %s\n", braidGetLastError());
    return 1;
  }
  int n = 0;
  if (braidCommCount(comm, &n) != braidSuccess || n != 1) return 1;
  if (braidCommCount(comm, nullptr) != braidInvalidArgument || std::strstr(braidGetLastError(), "'count'") == nullptr) {
    std::printf("expected an invalid-argument error naming 'count', got '%s'\n", braidGetLastError());
    return 1;
  }
  if (braidCommDestroy(comm) != braidSuccess) return 1;
  std::printf("consumer ok: braid %d\n", version);
  return 0;
}

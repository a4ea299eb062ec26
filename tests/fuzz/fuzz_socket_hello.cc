// What the first bytes of a connection to a rank's socket-transport listener must be: the hello
// of one socket of a connection (anyone can connect; a wrong one is dropped and logged).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transport/net/net_transport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < sizeof(braid::transport::NetHello)) return 0;
  braid::transport::NetHello hello;
  std::memcpy(&hello, data, sizeof(hello));
  for (int rank : {0, 1, 3}) braid::transport::checkNetHello(hello, hello.commKey, rank, 4);
  braid::transport::checkNetHello(hello, hello.commKey ^ 1, 0, 1);
  return 0;
}

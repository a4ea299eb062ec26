// Linked into the fuzz targets whose inputs reach getaddrinfo (BRAID_COMM_ID, MASTER_ADDR): the
// C library's resolver, restricted to numeric addresses. A fuzzed host name would otherwise go to
// /etc/hosts and the DNS servers of resolv.conf, which may be slow or unreachable and would make a
// run's speed depend on the network. braid's own parsing (brackets, ports, families) runs as in a
// job; a name that is not a numeric address fails as an unknown name does (EAI_NONAME), which is
// what braid's callers already handle. The definition in the executable takes precedence over the
// C library's; the real one is found with dlsym(RTLD_NEXT).
#include <dlfcn.h>
#include <netdb.h>

extern "C" int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints, struct addrinfo** res) {
  using Fn = int (*)(const char*, const char*, const struct addrinfo*, struct addrinfo**);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "getaddrinfo"));
  struct addrinfo numeric = {};
  if (hints != nullptr) numeric = *hints;
  numeric.ai_flags |= AI_NUMERICHOST;
  return real(node, service, &numeric, res);
}

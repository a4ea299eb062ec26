// braid-env: lists braid's environment variables from the parameter table.
//   braid-env             name, current value and meaning of each variable
//   braid-env --markdown  the table as docs/environment.md
#include <cstdio>
#include <cstring>

#include "core/param.h"

int main(int argc, char** argv) {
  using namespace braid::param;
  if (argc > 1 && std::strcmp(argv[1], "--markdown") == 0) {
    std::fputs(markdown().c_str(), stdout);
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s [--markdown]\n", argv[0]);
    return 2;
  }
  for (int i = 0; i < kNumParams; ++i) {
    const Spec& s = table()[i];
    std::printf("%-24s = %-12s  %s\n", s.name, getString(s.id).c_str(), s.doc);
  }
  return 0;
}

#include "core/group.h"

namespace braid::core {
namespace {
thread_local int tlsDepth = 0;
}

Status groupStart() {
  ++tlsDepth;
  return Status::ok();
}

Status groupEnd() {
  if (tlsDepth == 0) return invalidUsage("braidGroupEnd without a matching braidGroupStart on this thread");
  --tlsDepth;
  return Status::ok();
}

int groupDepth() { return tlsDepth; }

}  // namespace braid::core

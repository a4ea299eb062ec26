// Group state of the calling thread: braidGroupStart/End nest, and calls made inside a group are
// held until the outermost braidGroupEnd. (Collectives join the group once they exist; today the
// group tracks nesting and refuses an end without a start.)
#pragma once

#include "core/status.h"

namespace braid::core {

Status groupStart();
Status groupEnd();

/// Nesting depth of the calling thread's group (0 outside any group).
int groupDepth();

}  // namespace braid::core

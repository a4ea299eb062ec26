// Topology files: a System as XML (docs/topology.md has the format), read and written losslessly.
//
//   <system version="1">
//     <host id="node0">
//       <cpu id="cpu0" numa="0"/>  <pci id="pci0" busid="..."/>  <gpu id="gpu0" dev="0" sm="90"/>
//       <nvswitch id="nvs0"/>  <nic id="nic0" name="mlx5_0" speed="400"/>
//       <link a="gpu0" b="nvs0" type="nvlink" count="5"/>
//       <link a="gpu0" b="pci0" type="pcie" gen="5" width="16" bw="50" lat="1"/>
//     </host>
//   </system>
//
// Unknown elements and attributes are errors (a typo must not be silently ignored); every error
// names the file and line.
#pragma once

#include <string>

#include "core/status.h"
#include "topology/graph.h"

namespace braid::topology {

/// Parses a topology document; `source` names it in errors. Bandwidths and latencies the file does
/// not give are filled from the link table; the result is validated.
Status readTopology(const std::string& text, const std::string& source, System* out);
Status readTopologyFile(const std::string& path, System* out);

/// The document for `system`: bandwidth and latency are written only where they were given (so
/// that a dumped file keeps following the table), every other field whenever it is known.
std::string writeTopology(const System& system);
Status writeTopologyFile(const std::string& path, const System& system);

}  // namespace braid::topology

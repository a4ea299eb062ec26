// BRAID_TOPO_FILE: a topology in XML, read by every rank (the reader and the XML parser below it).
#include <cstddef>
#include <cstdint>
#include <string>

#include "topology/topo_xml.h"
#include "topology/xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  braid::topology::XmlElement root;
  braid::topology::parseXml(text, "fuzz", &root).ignore();
  braid::topology::System system;
  braid::topology::readTopology(text, "fuzz", &system).ignore();
  return 0;
}

// A small XML reader and writer for topology files.
//
// braid dumps a machine's topology to XML and loads it back, so that a topology can be read,
// edited by hand and replayed elsewhere. The files are ours, so the reader takes what writeXml
// produces plus what a person editing one is likely to add, and nothing more:
//
//   <?xml version="1.0"?>                        optional, and only as the first thing in the file
//   <!-- a comment -->                           anywhere between elements, also around the root
//   <system version="1">                         exactly one root element
//     <cpu numaid="0" affinity='0000ffff'>       values in double or single quotes
//       <gpu dev="0" name="a &amp; b"/>         self-closing elements, entity references
//     </cpu>
//   </system>
//
// Everything else is an error, never silently skipped: text inside or outside elements, CDATA,
// DOCTYPE, processing instructions other than the declaration, entities other than &amp; &lt;
// &gt; &quot; &apos;, and character references (&#65; &#x41;) outside tab, newline, carriage return
// and printable ASCII. Names are ASCII XML names. Attribute values are kept byte for byte (no
// whitespace normalisation; UTF-8 passes through), which is what makes parse(write(x)) == x.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace braid::topology {

/// Deepest element nesting parseXml accepts (the root is depth 1); it bounds the parser's
/// recursion on hostile input. Real topology files nest fewer than ten levels.
constexpr int kMaxXmlDepth = 64;

/// One element of a parsed or to-be-written document.
struct XmlElement {
  std::string name;
  /// In document order; names are unique within an element.
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<XmlElement> children;
  /// 1-based line of the element's '<' in the parsed text; 0 for elements built in code.
  int line = 0;

  /// The value of attribute `key`, or nullptr when the element has none.
  const std::string* attribute(const std::string& key) const;
  /// Replaces the value of attribute `key` in place, or appends the attribute at the end.
  void set(const std::string& key, const std::string& value);
};

/// Parses one document into *root. `source` names the text in messages (usually the file path):
/// every error is invalidArgument("<source>:<line>: <what>"). On error *root is left empty.
Status parseXml(const std::string& text, const std::string& source, XmlElement* root);

/// Writes `<?xml version="1.0"?>` and the tree, one element per line, indented by two spaces,
/// ending in a newline. Names must be valid XML names; any attribute value can be written.
std::string writeXml(const XmlElement& root);

}  // namespace braid::topology

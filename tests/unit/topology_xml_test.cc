// The topology XML reader and writer: exact output, round trips, and what the reader refuses and where.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "topology/xml.h"

namespace braid::topology {
namespace {

XmlElement element(const std::string& name, std::vector<std::pair<std::string, std::string>> attributes,
                   std::vector<XmlElement> children = {}) {
  XmlElement e;
  e.name = name;
  e.attributes = std::move(attributes);
  e.children = std::move(children);
  return e;
}

// Same names, attributes (order and values) and children; `line` is not compared.
::testing::AssertionResult sameTree(const XmlElement& a, const XmlElement& b, const std::string& path = "") {
  std::string here = path + "/" + a.name;
  if (a.name != b.name) return ::testing::AssertionFailure() << here << ": name " << b.name;
  if (a.attributes != b.attributes) return ::testing::AssertionFailure() << here << ": attributes differ";
  if (a.children.size() != b.children.size()) {
    return ::testing::AssertionFailure() << here << ": " << a.children.size() << " vs " << b.children.size()
                                         << " children";
  }
  for (size_t i = 0; i < a.children.size(); ++i) {
    ::testing::AssertionResult r = sameTree(a.children[i], b.children[i], here);
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

// The message of parsing `text` as "topo.xml", or "ok".
std::string parseError(const std::string& text) {
  XmlElement root;
  Status st = parseXml(text, "topo.xml", &root);
  if (st.isOk()) return "ok";
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
  EXPECT_TRUE(root.name.empty() && root.children.empty()) << "root not left empty on error";
  return st.message();
}

// The line number of a "topo.xml:<line>: ..." message, or -1 when it has no such prefix.
int errorLine(const std::string& message) {
  const std::string prefix = "topo.xml:";
  if (message.compare(0, prefix.size(), prefix) != 0) return -1;
  size_t end = message.find(": ", prefix.size());
  std::string digits = message.substr(prefix.size(), end == std::string::npos ? 0 : end - prefix.size());
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

XmlElement sampleTree() {
  XmlElement gpu0 = element("gpu", {{"id", "gpu0"}, {"dev", "0"}, {"busid", "0000:17:00.0"}});
  XmlElement gpu1 = element("gpu", {{"id", "gpu1"}, {"dev", "1"}});
  XmlElement nic = element("nic", {{"name", "mlx5_0"}}, {element("net", {{"guid", "0x1"}, {"speed", "400"}})});
  XmlElement cpu =
      element("cpu", {{"numa", "0"}, {"model", "a&b <c> \"q\" 'x'"}, {"note", "tab\there\nline2"}}, {gpu0, gpu1, nic});
  return element("system", {{"version", "1"}}, {cpu, element("cpu", {})});
}

TEST(TopologyXmlElement, AttributeAndSetKeepOrder) {
  XmlElement e = element("gpu", {{"id", "gpu0"}, {"dev", "0"}});
  ASSERT_NE(e.attribute("dev"), nullptr);
  EXPECT_EQ(*e.attribute("dev"), "0");
  EXPECT_EQ(e.attribute("sm"), nullptr);
  e.set("id", "gpu7");
  e.set("sm", "90");
  std::vector<std::pair<std::string, std::string>> expected = {{"id", "gpu7"}, {"dev", "0"}, {"sm", "90"}};
  EXPECT_EQ(e.attributes, expected);
}

TEST(TopologyXmlRoundTrip, WritesTheExpectedTextAndReadsItBack) {
  XmlElement tree = sampleTree();
  std::string text = writeXml(tree);
  EXPECT_EQ(text,
            "<?xml version=\"1.0\"?>\n"
            "<system version=\"1\">\n"
            "  <cpu numa=\"0\" model=\"a&amp;b &lt;c&gt; &quot;q&quot; 'x'\" note=\"tab&#9;here&#10;line2\">\n"
            "    <gpu id=\"gpu0\" dev=\"0\" busid=\"0000:17:00.0\"/>\n"
            "    <gpu id=\"gpu1\" dev=\"1\"/>\n"
            "    <nic name=\"mlx5_0\">\n"
            "      <net guid=\"0x1\" speed=\"400\"/>\n"
            "    </nic>\n"
            "  </cpu>\n"
            "  <cpu/>\n"
            "</system>\n");

  XmlElement parsed;
  Status st = parseXml(text, "topo.xml", &parsed);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_TRUE(sameTree(tree, parsed));
  EXPECT_EQ(parsed.line, 2);
  EXPECT_EQ(parsed.children[0].line, 3);
  EXPECT_EQ(parsed.children[0].children[2].children[0].line, 7);
  EXPECT_EQ(parsed.children[1].line, 10);
  EXPECT_EQ(writeXml(parsed), text);
}

TEST(TopologyXmlRoundTrip, AnyAttributeValueSurvives) {
  std::string every;
  for (int c = 0; c < 256; ++c) every.push_back(static_cast<char>(c));
  XmlElement tree = element("a", {{"all", every}, {"empty", ""}, {"utf8", "\xc3\xa9t\xc3\xa9"}});
  XmlElement parsed;
  ASSERT_TRUE(parseXml(writeXml(tree), "topo.xml", &parsed).isOk());
  EXPECT_TRUE(sameTree(tree, parsed));
}

TEST(TopologyXmlParse, SkipsDeclarationAndComments) {
  const std::string text =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<!-- dumped by braid\n"
      "     on node0 -->\n"
      "<system version='1'>  <!-- after a start tag -->\n"
      "  <!-- before a child --><cpu   numa = \"0\"\n"
      "       name='&lt;&#65;&#x42;&apos;&quot;&amp;&gt;' />\n"
      "  <gpu dev=\"1\"></gpu>\n"
      "<!-- before the end --></system >\n"
      "<!-- trailing -->\n";
  XmlElement root;
  Status st = parseXml(text, "topo.xml", &root);
  ASSERT_TRUE(st.isOk()) << st.message();
  XmlElement expected =
      element("system", {{"version", "1"}},
              {element("cpu", {{"numa", "0"}, {"name", "<AB'\"&>"}}), element("gpu", {{"dev", "1"}})});
  EXPECT_TRUE(sameTree(expected, root));
  EXPECT_EQ(root.line, 4);
  EXPECT_EQ(root.children[0].line, 5);
  EXPECT_EQ(root.children[1].line, 7);
}

struct Malformed {
  std::string text;
  int line;
  std::string reason;
};

TEST(TopologyXmlErrors, MalformedInputsNameLineAndReason) {
  const std::vector<Malformed> cases = {
      {"<system>\n  <gpu id=\"1\"\n  <cpu/>\n</system>\n", 3, "expected '>' to close <gpu"},
      {"<system>\n<host>\n<cpu>\n</host>\n", 4, "</host> closes <cpu> opened at line 3"},
      {"<system>\n<cpu/>\n\n", 4, "unexpected end of file inside <system> opened at line 1"},
      {"<a id=\"1\"\n   id=\"2\"/>", 2, "duplicate attribute 'id'"},
      {"<a\n id=1/>", 2, "unquoted attribute value"},
      {"<a>\n  hello\n</a>", 2, "text outside a tag: 'hello'"},
      {"\n\nx<a/>", 3, "text outside a tag"},
      {"<a/>\n<b/>\n", 2, "more than one root element"},
      {"<a/>\n</a>\n", 2, "closing tag with no open element"},
      {"\n</a>", 2, "closing tag with no open element"},
      {"<a>\n<b>\n</b>\n</a\n x>", 5, "expected '>' to close </a"},
      {"<a x=\"1\"y=\"2\"/>", 1, "missing whitespace"},
      {"<a x\n\"1\"/>", 2, "expected '='"},
      {"<a>\n< b/></a>", 2, "expected an element name"},
      {"<a>\n</ >", 2, "expected an element name after '</'"},
      {"<a x=\"1 < 2\"/>", 1, "'<' in the value"},
      {"<a x=\"fish & chips\"/>", 1, "does not start a reference"},
      {"<a\nx=\"&nbsp;\"/>", 2, "unknown entity '&nbsp;'"},
      {"<a x=\"&#233;\"/>", 1, "unsupported character reference '&#233;'"},
      {"<a x=\"&#0;\"/>", 1, "unsupported character reference"},
      {"<a x=\"&#x;\"/>", 1, "unsupported character reference"},
      {"<a x=\"&#99999999999999999999;\"/>", 1, "does not start a reference"},
      {"<!DOCTYPE a>\n<a/>", 1, "DOCTYPE"},
      {"<a>\n<![CDATA[x]]>\n</a>", 2, "CDATA"},
      {"<a>\n<?pi x?>\n</a>", 2, "processing instructions"},
      {"<!-- c -->\n<?xml version=\"1.0\"?>\n<a/>", 2, "processing instructions"},
      {"<a>\n<!-- never closed\n\n", 4, "inside a comment opened at line 2"},
      {"<?xml version=\"1.0\"\n<a/>\n", 3, "inside the <?xml declaration opened at line 1"},
      {"<a x='1\n\n", 3, "inside the value of attribute 'x' opened at line 1"},
      {"<a\n x='1'", 2, "inside the tag <a opened at line 1"},
  };
  for (const Malformed& c : cases) {
    std::string message = parseError(c.text);
    EXPECT_EQ(errorLine(message), c.line) << c.text << "\n-> " << message;
    EXPECT_NE(message.find(c.reason), std::string::npos) << c.text << "\n-> " << message;
  }
}

TEST(TopologyXmlErrors, EmptyDocumentHasNoRoot) {
  EXPECT_EQ(parseError(""), "topo.xml:1: empty document: no root element");
  EXPECT_EQ(parseError("  \n\t\n"), "topo.xml:3: empty document: no root element");
  EXPECT_EQ(parseError("<?xml version=\"1.0\"?>\n<!-- nothing -->\n"), "topo.xml:3: empty document: no root element");
}

// A document using every construct the reader knows, ending exactly at the root's '>'.
std::string everyConstruct() {
  std::string text = writeXml(sampleTree());
  text.pop_back();  // the final newline
  return "<?xml version=\"1.0\"?>\n<!-- c -->\n<top a='&#x41;'>\n<!-- c -->\n" + text.substr(text.find('\n') + 1) +
         "\n</top>";
}

TEST(TopologyXmlErrors, EveryTruncationFailsWithALineNumber) {
  const std::string text = everyConstruct();
  XmlElement root;
  ASSERT_TRUE(parseXml(text, "topo.xml", &root).isOk());
  auto start = std::chrono::steady_clock::now();
  int lines = 1;
  for (size_t cut = 0; cut < text.size(); ++cut) {
    std::string prefix = text.substr(0, cut);
    std::string message = parseError(prefix);
    int line = errorLine(message);
    EXPECT_TRUE(line >= 1 && line <= lines) << "cut at " << cut << " (" << lines << " lines): " << message;
    if (text[cut] == '\n') ++lines;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

TEST(TopologyXmlErrors, CorruptedBytesNeverCrash) {
  const std::string text = everyConstruct();
  for (size_t i = 0; i < text.size(); ++i) {
    for (char c : std::string("<>/=\"'&;!?-#\n x\0", 16)) {
      std::string corrupted = text;
      corrupted[i] = c;
      std::string message = parseError(corrupted);
      EXPECT_TRUE(message == "ok" || errorLine(message) >= 1) << message;
    }
  }
}

// `depth` nested <e> elements, one per line.
std::string nested(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += "<e>\n";
  for (int i = 0; i < depth; ++i) text += "</e>\n";
  return text;
}

TEST(TopologyXmlErrors, DepthIsLimited) {
  EXPECT_EQ(parseError(nested(kMaxXmlDepth)), "ok");
  std::string message = parseError(nested(kMaxXmlDepth + 1));
  EXPECT_EQ(errorLine(message), kMaxXmlDepth + 1) << message;
  EXPECT_NE(message.find("nested deeper than 64"), std::string::npos) << message;

  std::string hostile;
  for (int i = 0; i < 1000000; ++i) hostile += "<e>";
  EXPECT_NE(parseError(hostile).find("nested deeper"), std::string::npos);
}

}  // namespace
}  // namespace braid::topology

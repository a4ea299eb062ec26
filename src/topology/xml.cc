#include "topology/xml.h"

#include <cstring>
#include <unordered_set>

namespace braid::topology {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isNameStart(char c) { return isLetter(c) || c == '_' || c == ':'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c) || c == '-' || c == '.'; }

int hexDigit(char c) {
  if (isDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes the body of a character reference ("#65" or "#x41") into *out. False when it is malformed
// or names a character outside tab, newline, carriage return and printable ASCII.
bool decodeCharacterReference(const std::string& body, char* out) {
  bool hex = body.size() > 1 && body[1] == 'x';
  size_t first = hex ? 2 : 1;
  if (body.size() <= first) return false;
  long code = 0;
  for (size_t i = first; i < body.size(); ++i) {
    int digit = hex ? hexDigit(body[i]) : (isDigit(body[i]) ? body[i] - '0' : -1);
    if (digit < 0) return false;
    code = code * (hex ? 16 : 10) + digit;
    if (code > 0x7f) return false;  // also keeps long digit strings from overflowing
  }
  if (code < 0x20 && code != '\t' && code != '\n' && code != '\r') return false;
  *out = static_cast<char>(code);
  return true;
}

// The five predefined entities, or '\0' for any other name.
char predefinedEntity(const std::string& name) {
  if (name == "amp") return '&';
  if (name == "lt") return '<';
  if (name == "gt") return '>';
  if (name == "quot") return '"';
  if (name == "apos") return '\'';
  return '\0';
}

// Reads one document left to right. Every move goes through advance(), which counts newlines, so
// line_ is always the line of the current position and each error names where it was found.
class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  Status parseDocument(XmlElement* root);

 private:
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool startsWith(const char* s) const { return text_.compare(pos_, std::strlen(s), s) == 0; }
  void advance(size_t n = 1);
  bool skipSpace();
  bool readName(std::string* name);

  Status error(const std::string& what) const { return errorAt(line_, what); }
  Status errorAt(int line, const std::string& what) const;
  Status textError() const;
  Status markupError() const;

  Status skipDelimited(const char* end, const std::string& what);
  Status skipDeclaration();
  Status skipCommentsAndSpace();
  Status parseElement(XmlElement* element, int depth);
  Status parseStartTag(XmlElement* element, bool* selfClosing);
  Status parseAttribute(const std::string& tag, std::string* name, std::string* value);
  Status parseAttributeValue(const std::string& attribute, std::string* value);
  Status parseReference(const std::string& attribute, std::string* value);
  Status parseContent(XmlElement* element, int depth);
  Status parseEndTag(const XmlElement& element);

  const std::string& text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
};

void Parser::advance(size_t n) {
  for (size_t i = 0; i < n && !atEnd(); ++i, ++pos_) {
    if (text_[pos_] == '\n') ++line_;
  }
}

// Returns whether there was any whitespace to skip.
bool Parser::skipSpace() {
  size_t start = pos_;
  while (!atEnd() && isSpace(peek())) advance();
  return pos_ != start;
}

bool Parser::readName(std::string* name) {
  name->clear();
  if (atEnd() || !isNameStart(peek())) return false;
  while (!atEnd() && isNameChar(peek())) {
    name->push_back(peek());
    advance();
  }
  return true;
}

Status Parser::errorAt(int line, const std::string& what) const {
  return invalidArgument(source_ + ":" + std::to_string(line) + ": " + what);
}

// At a character that is neither whitespace nor '<': quotes the start of the stray text.
Status Parser::textError() const {
  std::string snippet;
  for (size_t i = pos_; i < text_.size() && snippet.size() < 20 && text_[i] != '<' && text_[i] != '\n'; ++i) {
    snippet.push_back(text_[i] >= 0x20 && text_[i] < 0x7f ? text_[i] : '?');
  }
  return error("text outside a tag: '" + snippet + "' (element text is not supported)");
}

// At a '<' that starts neither an element, a comment nor the closing tag of an open element.
Status Parser::markupError() const {
  if (startsWith("</")) return error("closing tag with no open element");
  if (startsWith("<?")) return error("processing instructions are not supported (only a leading <?xml ...?>)");
  if (startsWith("<!")) return error("'<!' is only supported as a comment '<!--' (no DOCTYPE or CDATA)");
  return error("expected an element name after '<'");
}

// Skips from the current position past the next `end`; `what` names the construct for messages.
Status Parser::skipDelimited(const char* end, const std::string& what) {
  int openLine = line_;
  size_t found = text_.find(end, pos_);
  if (found == std::string::npos) {
    advance(text_.size() - pos_);
    return error("unexpected end of file inside " + what + " opened at line " + std::to_string(openLine));
  }
  advance(found + std::strlen(end) - pos_);
  return Status::ok();
}

Status Parser::skipDeclaration() {
  if (!startsWith("<?xml")) return Status::ok();
  char next = peek(5);
  if (pos_ + 5 < text_.size() && !isSpace(next) && next != '?') return Status::ok();  // e.g. <?xml-stylesheet
  return skipDelimited("?>", "the <?xml declaration");
}

Status Parser::skipCommentsAndSpace() {
  for (;;) {
    skipSpace();
    if (!startsWith("<!--")) return Status::ok();
    BRAID_RETURN_IF_ERROR(skipDelimited("-->", "a comment"));
  }
}

Status Parser::parseDocument(XmlElement* root) {
  skipSpace();
  BRAID_RETURN_IF_ERROR(skipDeclaration());
  BRAID_RETURN_IF_ERROR(skipCommentsAndSpace());
  if (atEnd()) return error("empty document: no root element");
  if (peek() != '<') return textError();
  BRAID_RETURN_IF_ERROR(parseElement(root, 1));
  BRAID_RETURN_IF_ERROR(skipCommentsAndSpace());
  if (atEnd()) return Status::ok();
  if (peek() == '<' && isNameStart(peek(1))) return error("more than one root element");
  return peek() == '<' ? markupError() : textError();
}

Status Parser::parseElement(XmlElement* element, int depth) {
  if (depth > kMaxXmlDepth) return error("elements nested deeper than " + std::to_string(kMaxXmlDepth) + " levels");
  bool selfClosing = false;
  BRAID_RETURN_IF_ERROR(parseStartTag(element, &selfClosing));
  return selfClosing ? Status::ok() : parseContent(element, depth);
}

// <name attr="value" ...> or <name ... />
Status Parser::parseStartTag(XmlElement* element, bool* selfClosing) {
  if (!isNameStart(peek(1))) return markupError();
  element->line = line_;
  advance();  // '<'
  readName(&element->name);
  std::unordered_set<std::string> seen;
  for (;;) {
    bool spaced = skipSpace();
    if (atEnd()) {
      return error("unexpected end of file inside the tag <" + element->name + " opened at line " +
                   std::to_string(element->line));
    }
    *selfClosing = startsWith("/>");
    if (*selfClosing || peek() == '>') {
      advance(*selfClosing ? 2 : 1);
      return Status::ok();
    }
    if (!isNameStart(peek())) return error("expected '>' to close <" + element->name);
    if (!spaced) return error("missing whitespace before an attribute in <" + element->name);
    int line = line_;
    std::string name, value;
    BRAID_RETURN_IF_ERROR(parseAttribute(element->name, &name, &value));
    if (!seen.insert(name).second) return errorAt(line, "duplicate attribute '" + name + "' in <" + element->name);
    element->attributes.emplace_back(std::move(name), std::move(value));
  }
}

// name = "value" (or 'value'), at the first character of the name.
Status Parser::parseAttribute(const std::string& tag, std::string* name, std::string* value) {
  readName(name);
  skipSpace();
  if (peek() != '=') return error("expected '=' after attribute '" + *name + "' in <" + tag);
  advance();
  skipSpace();
  if (atEnd()) return error("unexpected end of file before the value of attribute '" + *name + "'");
  if (peek() != '"' && peek() != '\'') return error("unquoted attribute value for '" + *name + "' in <" + tag);
  return parseAttributeValue(*name, value);
}

// At the opening quote; stops after the matching closing quote.
Status Parser::parseAttributeValue(const std::string& attribute, std::string* value) {
  int openLine = line_;
  char quote = peek();
  advance();
  for (;;) {
    if (atEnd()) {
      return error("unexpected end of file inside the value of attribute '" + attribute + "' opened at line " +
                   std::to_string(openLine));
    }
    char c = peek();
    if (c == quote) {
      advance();
      return Status::ok();
    }
    if (c == '<') return error("'<' in the value of attribute '" + attribute + "' (write &lt;)");
    if (c == '&') {
      BRAID_RETURN_IF_ERROR(parseReference(attribute, value));
      continue;
    }
    value->push_back(c);
    advance();
  }
}

// At '&': appends the character of one entity or character reference to *value.
Status Parser::parseReference(const std::string& attribute, std::string* value) {
  constexpr size_t kMaxBody = 8;  // "quot", "#127", "#x7f", with room for a few leading zeros
  size_t length = 0;
  while (length <= kMaxBody && (isNameChar(peek(1 + length)) || peek(1 + length) == '#')) ++length;
  if (length == 0 || length > kMaxBody || peek(1 + length) != ';') {
    return error("'&' in the value of attribute '" + attribute + "' does not start a reference like &amp;");
  }
  std::string body = text_.substr(pos_ + 1, length);
  char c = '\0';
  if (body[0] == '#') {
    if (!decodeCharacterReference(body, &c)) {
      return error("unsupported character reference '&" + body +
                   ";' (only tab, newline, carriage return and printable ASCII)");
    }
  } else {
    c = predefinedEntity(body);
    if (c == '\0') return error("unknown entity '&" + body + ";' in the value of attribute '" + attribute + "'");
  }
  value->push_back(c);
  advance(length + 2);
  return Status::ok();
}

// Children, comments and whitespace up to and including the element's closing tag.
Status Parser::parseContent(XmlElement* element, int depth) {
  for (;;) {
    BRAID_RETURN_IF_ERROR(skipCommentsAndSpace());
    if (atEnd()) {
      return error("unexpected end of file inside <" + element->name + "> opened at line " +
                   std::to_string(element->line));
    }
    if (startsWith("</")) return parseEndTag(*element);
    if (peek() != '<') return textError();
    element->children.emplace_back();
    BRAID_RETURN_IF_ERROR(parseElement(&element->children.back(), depth + 1));
  }
}

// </name>, which must match the element it closes.
Status Parser::parseEndTag(const XmlElement& element) {
  int line = line_;
  advance(2);  // "</"
  std::string name;
  readName(&name);
  skipSpace();
  if (atEnd()) return error("unexpected end of file inside the closing tag </" + name);
  if (name.empty()) return error("expected an element name after '</'");
  if (name != element.name) {
    return errorAt(line,
                   "</" + name + "> closes <" + element.name + "> opened at line " + std::to_string(element.line));
  }
  if (peek() != '>') return error("expected '>' to close </" + name);
  advance();
  return Status::ok();
}

void appendEscaped(const std::string& value, std::string* out) {
  for (char c : value) {
    switch (c) {
      case '&': *out += "&amp;"; break;
      case '<': *out += "&lt;"; break;
      case '>': *out += "&gt;"; break;
      case '"': *out += "&quot;"; break;
      // Written as references so that every element stays on one line.
      case '\n': *out += "&#10;"; break;
      case '\r': *out += "&#13;"; break;
      case '\t': *out += "&#9;"; break;
      default: *out += c;
    }
  }
}

void writeElement(const XmlElement& element, int depth, std::string* out) {
  std::string indent(2 * depth, ' ');
  *out += indent + "<" + element.name;
  for (const auto& [name, value] : element.attributes) {
    *out += " " + name + "=\"";
    appendEscaped(value, out);
    *out += "\"";
  }
  if (element.children.empty()) {
    *out += "/>\n";
    return;
  }
  *out += ">\n";
  for (const XmlElement& child : element.children) writeElement(child, depth + 1, out);
  *out += indent + "</" + element.name + ">\n";
}

}  // namespace

const std::string* XmlElement::attribute(const std::string& key) const {
  for (const auto& attr : attributes) {
    if (attr.first == key) return &attr.second;
  }
  return nullptr;
}

void XmlElement::set(const std::string& key, const std::string& value) {
  for (auto& attr : attributes) {
    if (attr.first == key) {
      attr.second = value;
      return;
    }
  }
  attributes.emplace_back(key, value);
}

Status parseXml(const std::string& text, const std::string& source, XmlElement* root) {
  *root = XmlElement();
  XmlElement parsed;
  BRAID_RETURN_IF_ERROR(Parser(text, source).parseDocument(&parsed));
  *root = std::move(parsed);
  return Status::ok();
}

std::string writeXml(const XmlElement& root) {
  std::string out = "<?xml version=\"1.0\"?>\n";
  writeElement(root, 0, &out);
  return out;
}

}  // namespace braid::topology

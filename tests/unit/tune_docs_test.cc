// docs/tuning.md's table of the cost model's constants against src/tune/constants.h: every
// constant of the header is in the table with its value, and the table names no other, so the
// figures the docs quote cannot drift from the code again. The header is read as text (so that
// a constant added there is caught without editing this test); a few values read that way are
// checked against the compiled constants, so the reading itself is tested.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "tune/constants.h"

namespace braid::tune {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// name -> value of every `constexpr Constant kName = {value, ...}` (value: a product of numbers).
std::map<std::string, double> headerConstants(const std::string& text) {
  std::map<std::string, double> out;
  std::regex decl(R"(constexpr Constant (k\w+) = \{\s*([0-9.*\s]+),)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator(); ++it) {
    double v = 1;
    std::stringstream factors((*it)[2].str());
    std::string f;
    while (std::getline(factors, f, '*')) v *= std::stod(f);
    out[(*it)[1].str()] = v;
  }
  return out;
}

// name -> value of every table row "| `kName` | value |".
std::map<std::string, double> docTable(const std::string& text) {
  std::map<std::string, double> out;
  std::regex row(R"(\| `(k\w+)` \| ([0-9.e+-]+) \|)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator(); ++it)
    out[(*it)[1].str()] = std::stod((*it)[2].str());
  return out;
}

TEST(TuneDocs, ConstantsTableMatchesTheHeader) {
  const std::map<std::string, double> header = headerConstants(readFile(BRAID_SOURCE_DIR "/src/tune/constants.h"));
  const std::map<std::string, double> doc = docTable(readFile(BRAID_SOURCE_DIR "/docs/tuning.md"));
  ASSERT_GE(header.size(), 20u) << "src/tune/constants.h read as text";
  EXPECT_DOUBLE_EQ(header.at("kLl128Efficiency"), kLl128Efficiency.value);
  EXPECT_DOUBLE_EQ(header.at("kOneShotBytesPerChannel"), kOneShotBytesPerChannel.value);
  EXPECT_DOUBLE_EQ(header.at("kSimpleBytesPerChannel"), kSimpleBytesPerChannel.value);
  for (const auto& [name, value] : header) {
    auto it = doc.find(name);
    if (it == doc.end()) {
      ADD_FAILURE() << name << " (" << value << ") is missing from docs/tuning.md's table";
      continue;
    }
    EXPECT_NEAR(it->second, value, 1e-9 * std::max(1.0, value)) << name << " in docs/tuning.md";
  }
  for (const auto& [name, value] : doc)
    EXPECT_TRUE(header.count(name)) << "docs/tuning.md lists " << name << ", which src/tune/constants.h lacks";
}

}  // namespace
}  // namespace braid::tune

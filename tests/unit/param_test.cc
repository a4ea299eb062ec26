#include "core/param.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace braid::param {
namespace {

TEST(Param, TableNamesAreUniqueAndDocumented) {
  std::set<std::string> names;
  for (int i = 0; i < kNumParams; ++i) {
    const Spec& s = table()[i];
    EXPECT_EQ(static_cast<int>(s.id), i);
    EXPECT_EQ(std::string(s.name).rfind("BRAID_", 0), 0u) << s.name;
    EXPECT_GT(std::string(s.doc).size(), 10u) << s.name;
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
    int64_t v = 0;
    if (s.type == Type::kInt) {
      EXPECT_TRUE(parseInt(s.defaultValue, &v)) << s.name;
    }
  }
}

TEST(Param, ReadsEnvironmentOverDefault) {
  unsetenv("BRAID_BOOTSTRAP_TIMEOUT");
  EXPECT_EQ(getInt(Id::kBootstrapTimeout), 120);
  setenv("BRAID_BOOTSTRAP_TIMEOUT", "7", 1);
  EXPECT_EQ(getInt(Id::kBootstrapTimeout), 7);
  setenv("BRAID_BOOTSTRAP_TIMEOUT", "7s", 1);  // junk: the default, with a warning
  EXPECT_EQ(getInt(Id::kBootstrapTimeout), 120);
  unsetenv("BRAID_BOOTSTRAP_TIMEOUT");
}

TEST(Param, ParseIntRejectsJunk) {
  int64_t v = 0;
  EXPECT_TRUE(parseInt("-12", &v));
  EXPECT_EQ(v, -12);
  EXPECT_FALSE(parseInt("", &v));
  EXPECT_FALSE(parseInt("12x", &v));
  EXPECT_FALSE(parseInt("99999999999999999999999", &v));
}

TEST(Param, FindsUnknownBraidVariables) {
  char a[] = "BRAID_DEBUG=INFO";
  char b[] = "BRAID_DEBGU=INFO";
  char c[] = "PATH=/bin";
  char d[] = "BRAID_TEST_ID=abc";
  char e[] = "BRAID_NOPE";
  char* env[] = {a, b, c, d, e, nullptr};
  EXPECT_EQ(unknownVariables(env), "BRAID_DEBGU, BRAID_NOPE");
}

TEST(Param, MarkdownListsEveryVariable) {
  std::string md = markdown();
  for (int i = 0; i < kNumParams; ++i) EXPECT_NE(md.find(table()[i].name), std::string::npos);
}

// docs/environment.md is generated from the table; this fails when someone forgets to regenerate it.
TEST(Param, DocsMatchTheTable) {
  std::ifstream in(std::string(BRAID_SOURCE_DIR) + "/docs/environment.md");
  ASSERT_TRUE(in.good()) << "docs/environment.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), markdown()) << "regenerate with: braid-env --markdown > docs/environment.md";
}

}  // namespace
}  // namespace braid::param

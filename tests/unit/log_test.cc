#include "core/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace braid::log {
namespace {

TEST(Log, ParsesLevelsCaseInsensitively) {
  Level l = Level::kNone;
  EXPECT_TRUE(parseLevel("info", &l));
  EXPECT_EQ(l, Level::kInfo);
  EXPECT_TRUE(parseLevel(" TRACE ", &l));
  EXPECT_EQ(l, Level::kTrace);
  EXPECT_TRUE(parseLevel("Version", &l));
  EXPECT_EQ(l, Level::kVersion);
  EXPECT_FALSE(parseLevel("LOUD", &l));
}

TEST(Log, ParsesSubsystemLists) {
  uint32_t m = 0;
  EXPECT_TRUE(parseSubsys("INIT,NET", &m));
  EXPECT_EQ(m, static_cast<uint32_t>(Subsys::kInit) | static_cast<uint32_t>(Subsys::kNet));
  EXPECT_TRUE(parseSubsys("^NET", &m));
  EXPECT_EQ(m, ~static_cast<uint32_t>(Subsys::kNet));
  EXPECT_TRUE(parseSubsys("ALL,^GRAPH,^tune", &m));
  EXPECT_EQ(m, ~(static_cast<uint32_t>(Subsys::kGraph) | static_cast<uint32_t>(Subsys::kTune)));
  EXPECT_TRUE(parseSubsys("bootstrap", &m));
  EXPECT_EQ(m, static_cast<uint32_t>(Subsys::kBootstrap));
  EXPECT_FALSE(parseSubsys("INIT,DISK", &m));
  EXPECT_EQ(m, static_cast<uint32_t>(Subsys::kInit));  // the known part still applies
}

TEST(Log, ExpandsHostAndPidInFileName) {
  EXPECT_EQ(expandFileName("/tmp/braid.%h.%p.log", "node7", 4242), "/tmp/braid.node7.4242.log");
  EXPECT_EQ(expandFileName("plain%", "h", 1), "plain%");
  EXPECT_EQ(expandFileName("%x%p", "h", 9), "%x9");
}

TEST(Log, LineCarriesHostPidRankLevelSubsys) {
  EXPECT_EQ(formatLine("node7", 11, 12, 3, Level::kInfo, Subsys::kBootstrap, "hello"),
            "node7:11:12 [3] BRAID INFO BOOTSTRAP hello");
  EXPECT_EQ(formatLine("h", 1, 2, -1, Level::kWarn, Subsys::kEnv, "x"), "h:1:2 [-] BRAID WARN ENV x");
}

// End to end through the environment: level and subsystem filtering, file output, rank prefix.
TEST(Log, WritesFilteredLinesToDebugFile) {
  std::string pattern = "/tmp/braid_log_test.%p.log";
  std::string path = expandFileName(pattern, "", static_cast<long>(getpid()));
  std::remove(path.c_str());
  setenv("BRAID_DEBUG", "INFO", 1);
  setenv("BRAID_DEBUG_SUBSYS", "^NET", 1);
  setenv("BRAID_DEBUG_FILE", pattern.c_str(), 1);
  reloadFromEnvironment();
  {
    ScopedRank scoped(5);
    BRAID_INFO(Subsys::kInit, "visible ", 42);
    BRAID_INFO(Subsys::kNet, "filtered by subsystem");
    BRAID_TRACE(Subsys::kInit, "filtered by level");
  }
  BRAID_WARN(Subsys::kColl, "no rank");
  unsetenv("BRAID_DEBUG");
  unsetenv("BRAID_DEBUG_SUBSYS");
  unsetenv("BRAID_DEBUG_FILE");
  reloadFromEnvironment();

  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  EXPECT_NE(s.find("[5] BRAID INFO INIT visible 42\n"), std::string::npos) << s;
  EXPECT_NE(s.find("[-] BRAID WARN COLL no rank\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("filtered"), std::string::npos) << s;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace braid::log

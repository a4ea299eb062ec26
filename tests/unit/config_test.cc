#include "core/config.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace braid::core {
namespace {

CommConfig defaults() {
  CommConfig c;
  c.timeoutMs = 120000;
  return c;
}

TEST(Config, NullConfigKeepsBase) {
  CommConfig out;
  ASSERT_TRUE(applyUserConfig(nullptr, defaults(), &out).isOk());
  EXPECT_TRUE(out.blocking);
  EXPECT_EQ(out.minCTAs, 1);
  EXPECT_EQ(out.maxCTAs, kMaxChannels);
  EXPECT_EQ(out.timeoutMs, 120000);
}

TEST(Config, InitializerLeavesEverythingUnset) {
  braidConfig_t user = BRAID_CONFIG_INITIALIZER;
  CommConfig out;
  ASSERT_TRUE(applyUserConfig(&user, defaults(), &out).isOk());
  EXPECT_TRUE(out.blocking);
  EXPECT_EQ(out.deviceKind, DeviceKind::kAuto);
  EXPECT_EQ(out.algorithm, "");
}

TEST(Config, SetFieldsOverrideBase) {
  braidConfig_t user = BRAID_CONFIG_INITIALIZER;
  user.blocking = 0;
  user.minCTAs = 4;
  user.maxCTAs = 16;
  user.deviceKind = braidDeviceHost;
  user.algorithm = "^Tree";
  user.protocol = "ll,LL128";
  user.timeoutMs = 2500;
  CommConfig out;
  ASSERT_TRUE(applyUserConfig(&user, defaults(), &out).isOk());
  EXPECT_FALSE(out.blocking);
  EXPECT_EQ(out.minCTAs, 4);
  EXPECT_EQ(out.maxCTAs, 16);
  EXPECT_EQ(out.deviceKind, DeviceKind::kHost);
  EXPECT_EQ(out.algorithm, "^Tree");
  EXPECT_EQ(out.protocol, "ll,LL128");
  EXPECT_EQ(out.timeoutMs, 2500);
}

// A caller built against an older, shorter braidConfig_t: fields past its size are not read.
TEST(Config, OlderShorterStructReadsOnlyItsFields) {
  braidConfig_t user = BRAID_CONFIG_INITIALIZER;
  user.minCTAs = 2;
  user.maxCTAs = 3;
  user.algorithm = "bogus";  // outside the older struct: must be ignored, not validated
  user.size = offsetof(braidConfig_t, deviceKind);
  CommConfig out;
  ASSERT_TRUE(applyUserConfig(&user, defaults(), &out).isOk());
  EXPECT_EQ(out.minCTAs, 2);
  EXPECT_EQ(out.maxCTAs, 3);
  EXPECT_EQ(out.algorithm, "");
}

struct BadConfig {
  const char* name;
  void (*mutate)(braidConfig_t*);
  const char* mentions;
};

class ConfigRejects : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigRejects, WithMessageNamingTheField) {
  braidConfig_t user = BRAID_CONFIG_INITIALIZER;
  GetParam().mutate(&user);
  CommConfig out;
  Status s = applyUserConfig(&user, defaults(), &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find(GetParam().mentions), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Fields, ConfigRejects,
    ::testing::Values(BadConfig{"tiny", [](braidConfig_t* c) { c->size = 4; }, "size 4"},
                      BadConfig{"magic", [](braidConfig_t* c) { c->magic = 0; }, "magic"},
                      BadConfig{"newer", [](braidConfig_t* c) { c->version = 99; }, "version 99"},
                      BadConfig{"zeroVersion", [](braidConfig_t* c) { c->version = 0; }, "version 0"},
                      BadConfig{"blocking", [](braidConfig_t* c) { c->blocking = 2; }, "'config->blocking'"},
                      BadConfig{"minCTAs", [](braidConfig_t* c) { c->minCTAs = 0; }, "'config->minCTAs'"},
                      BadConfig{"maxCTAs", [](braidConfig_t* c) { c->maxCTAs = 65; }, "'config->maxCTAs'"},
                      BadConfig{"maxBelowMin",
                                [](braidConfig_t* c) {
                                  c->minCTAs = 8;
                                  c->maxCTAs = 4;
                                },
                                "'config->maxCTAs'"},
                      BadConfig{"deviceKind", [](braidConfig_t* c) { c->deviceKind = 9; }, "'config->deviceKind'"},
                      BadConfig{"algorithm", [](braidConfig_t* c) { c->algorithm = "ring,spiral"; }, "'spiral'"},
                      BadConfig{"emptyAlgorithm", [](braidConfig_t* c) { c->algorithm = "^"; }, "'config->algorithm'"},
                      BadConfig{"protocol", [](braidConfig_t* c) { c->protocol = "LL256"; }, "'config->protocol'"},
                      BadConfig{"timeout", [](braidConfig_t* c) { c->timeoutMs = -1; }, "'config->timeoutMs'"}),
    [](const ::testing::TestParamInfo<BadConfig>& p) { return std::string(p.param.name); });

TEST(Config, DefaultsComeFromParameters) {
  setenv("BRAID_BOOTSTRAP_TIMEOUT", "3", 1);
  setenv("BRAID_DEVICE", "cpu", 1);
  CommConfig c;
  ASSERT_TRUE(defaultConfig(&c).isOk());
  EXPECT_EQ(c.timeoutMs, 3000);
  EXPECT_EQ(c.deviceKind, DeviceKind::kHost);
  setenv("BRAID_DEVICE", "tpu", 1);
  Status s = defaultConfig(&c);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("BRAID_DEVICE"), std::string::npos);
  setenv("BRAID_DEVICE", "cpu", 1);
  setenv("BRAID_BOOTSTRAP_TIMEOUT", "0", 1);
  EXPECT_EQ(defaultConfig(&c).code(), Code::kInvalidArgument);
  unsetenv("BRAID_BOOTSTRAP_TIMEOUT");
  unsetenv("BRAID_DEVICE");
}

}  // namespace
}  // namespace braid::core

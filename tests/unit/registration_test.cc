// Buffer registration and windows (braidCommRegister, braidCommWindowRegister and their NCCL
// twins' braid side): handles, reference counts, ownership, and the errors, on host-memory
// communicators of thread ranks; a call on a registered sub-range is checked against the reference.
#include <braid/braid.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/registrations.h"
#include "thread_ranks.h"

namespace {

std::string lastError() { return braidGetLastError(); }

TEST(Registration, TheSameRangeTwiceIsOneHandleDeregisteredTwice) {
  braid::test::ThreadRanks ranks(1);
  std::vector<float> buf(1024);
  void* a = nullptr;
  void* b = nullptr;
  void* part = nullptr;
  ASSERT_EQ(braidCommRegister(ranks[0], buf.data(), buf.size() * sizeof(float), &a), braidSuccess) << lastError();
  ASSERT_EQ(braidCommRegister(ranks[0], buf.data(), buf.size() * sizeof(float), &b), braidSuccess) << lastError();
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(a, b) << "the same range registered twice gets the same handle";
  ASSERT_EQ(braidCommRegister(ranks[0], buf.data() + 16, 64, &part), braidSuccess) << lastError();
  EXPECT_NE(part, a) << "another range is another registration";
  EXPECT_EQ(braidCommDeregister(ranks[0], a), braidSuccess) << lastError();
  EXPECT_EQ(braidCommDeregister(ranks[0], a), braidSuccess) << "the second reference: " << lastError();
  EXPECT_EQ(braidCommDeregister(ranks[0], a), braidInvalidArgument) << "a third deregistration";
  EXPECT_NE(lastError().find("not a live buffer registration of this communicator"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("rank 0"), std::string::npos) << lastError();
  EXPECT_EQ(braidCommDeregister(ranks[0], part), braidSuccess) << lastError();
  // A later registration never answers to an ended one's handle (nor the other way round).
  void* later = nullptr;
  ASSERT_EQ(braidCommRegister(ranks[0], buf.data(), buf.size() * sizeof(float), &later), braidSuccess);
  EXPECT_NE(later, a);
  EXPECT_EQ(braidCommDeregister(ranks[0], a), braidInvalidArgument) << "an ended handle after a new registration";
  EXPECT_EQ(braidCommDeregister(ranks[0], later), braidSuccess) << lastError();
}

TEST(Registration, ForeignHandlesAndBadArgumentsAreRefused) {
  braid::test::ThreadRanks ranks(1), other(1);
  std::vector<char> buf(4096);
  void* handle = nullptr;
  ASSERT_EQ(braidCommRegister(ranks[0], buf.data(), buf.size(), &handle), braidSuccess) << lastError();
  EXPECT_EQ(braidCommDeregister(other[0], handle), braidInvalidArgument) << "another communicator's handle";
  int junk = 0;
  EXPECT_EQ(braidCommDeregister(ranks[0], &junk), braidInvalidArgument) << "a pointer that is no handle";
  EXPECT_EQ(braidCommWindowDeregister(ranks[0], static_cast<braidWindow_t>(handle)), braidInvalidArgument)
      << "a buffer registration is not a window";
  EXPECT_NE(lastError().find("not a live window"), std::string::npos) << lastError();
  EXPECT_EQ(braidCommRegister(ranks[0], nullptr, 16, &handle), braidInvalidArgument);
  EXPECT_NE(lastError().find("'buff'"), std::string::npos) << lastError();
  EXPECT_EQ(braidCommRegister(ranks[0], buf.data(), 0, &handle), braidInvalidArgument);
  EXPECT_NE(lastError().find("'size' is 0"), std::string::npos) << lastError();
  EXPECT_EQ(braidCommRegister(ranks[0], buf.data(), 16, nullptr), braidInvalidArgument);
  EXPECT_EQ(braidCommDeregister(ranks[0], nullptr), braidInvalidArgument);
  EXPECT_EQ(braidCommRegister(nullptr, buf.data(), 16, &handle), braidInvalidArgument);
  EXPECT_EQ(braidCommDeregister(ranks[0], handle), braidSuccess) << "the registration survived the refusals";
}

TEST(Registration, WindowsAreRegistrationsOfTheirOwnKind) {
  braid::test::ThreadRanks ranks(1);
  std::vector<char> buf(8192);
  braidWindow_t w1 = nullptr, w2 = nullptr;
  ASSERT_EQ(braidCommWindowRegister(ranks[0], buf.data(), buf.size(), &w1, BRAID_WIN_DEFAULT), braidSuccess)
      << lastError();
  ASSERT_EQ(braidCommWindowRegister(ranks[0], buf.data(), buf.size(), &w2, BRAID_WIN_COLL_SYMMETRIC), braidSuccess)
      << lastError();
  EXPECT_EQ(w1, w2);
  void* asBuffer = nullptr;
  ASSERT_EQ(braidCommRegister(ranks[0], buf.data(), buf.size(), &asBuffer), braidSuccess);
  EXPECT_NE(static_cast<void*>(w1), asBuffer) << "a window and a buffer registration of one range stay apart";
  EXPECT_EQ(braidCommDeregister(ranks[0], w1), braidInvalidArgument) << "a window is not a buffer registration";
  braidWindow_t refused = w1;
  EXPECT_EQ(braidCommWindowRegister(ranks[0], buf.data(), buf.size(), &refused, 0x4), braidInvalidArgument);
  EXPECT_NE(lastError().find("'winFlags' = 4"), std::string::npos) << lastError();
  EXPECT_EQ(refused, nullptr) << "a refused registration leaves no handle behind";
  EXPECT_EQ(braidCommWindowDeregister(ranks[0], w2), braidSuccess);
  EXPECT_EQ(braidCommWindowDeregister(ranks[0], w2), braidSuccess);
  EXPECT_EQ(braidCommWindowDeregister(ranks[0], w2), braidInvalidArgument);
  EXPECT_EQ(braidCommDeregister(ranks[0], asBuffer), braidSuccess);
}

// Collectives on a registered buffer's sub-range give the reference's result, also when the
// registration ends between the calls (registration changes nothing a call does).
TEST(Registration, CallsOnARegisteredSubRangeAreCorrect) {
  const int n = 3;
  braid::test::ThreadRanks ranks(n);
  const size_t count = 1000, offset = 24;
  std::vector<std::vector<float>> buf(n, std::vector<float>(count + 2 * offset));
  std::vector<void*> handles(n);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(braidCommRegister(ranks[r], buf[r].data(), buf[r].size() * sizeof(float), &handles[r]), braidSuccess);
    for (size_t i = 0; i < buf[r].size(); ++i) buf[r][i] = static_cast<float>((i * 7 + r) % 13);
  }
  std::vector<std::vector<float>> before = buf;
  std::vector<std::string> errors;
  auto rc = ranks.each(
      [&](int r) {
        float* p = buf[r].data() + offset;
        braidResult_t res = braidAllReduce(p, p, count, braidFloat32, braidSum, ranks[r], nullptr);
        if (res == braidSuccess) res = braidCommDeregister(ranks[r], handles[r]);
        return res;
      },
      &errors);
  for (int r = 0; r < n; ++r) ASSERT_EQ(rc[r], braidSuccess) << errors[r];
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < buf[r].size(); ++i) {
      float want = before[r][i];
      if (i >= offset && i < offset + count) {
        want = 0;
        for (int q = 0; q < n; ++q) want += before[q][i];
      }
      ASSERT_EQ(buf[r][i], want) << "rank " << r << " element " << i;
    }
  }
}

// What a direct call asks of a registration (core/registrations.h): the whole range inside one live
// registration of either kind, the ends included, nothing past them; gone with the last reference.
TEST(Registration, CoversOnlyRangesInsideOneLiveRegistration) {
  braid::core::Registrations regs;
  std::vector<char> mem(1024, 0);
  char* a = mem.data() + 256;  // registered [256, 512) and, as a window, [640, 896) of mem
  char* b = mem.data() + 640;
  void* ha = nullptr;
  void* hb = nullptr;
  ASSERT_TRUE(regs.add(braid::core::Registrations::Kind::kBuffer, a, 256, &ha).isOk());
  ASSERT_TRUE(regs.add(braid::core::Registrations::Kind::kWindow, b, 256, &hb).isOk());
  EXPECT_TRUE(regs.covers(a, 256));
  EXPECT_TRUE(regs.covers(a + 100, 156));
  EXPECT_TRUE(regs.covers(a + 255, 1));
  EXPECT_TRUE(regs.covers(a + 10, 0));
  EXPECT_FALSE(regs.covers(a + 100, 157)) << "one byte past the end";
  EXPECT_FALSE(regs.covers(a - 1, 2)) << "one byte before the start";
  EXPECT_FALSE(regs.covers(a + 256, 0)) << "the end itself";
  EXPECT_TRUE(regs.covers(b + 1, 255)) << "a window counts";
  EXPECT_FALSE(regs.covers(a + 200, 500)) << "a range across two registrations is in neither";
  EXPECT_FALSE(regs.covers(nullptr, 8));
  ASSERT_TRUE(regs.remove(braid::core::Registrations::Kind::kBuffer, ha).isOk());
  EXPECT_FALSE(regs.covers(a, 1)) << "deregistered";
  EXPECT_TRUE(regs.covers(b, 1));
}

}  // namespace

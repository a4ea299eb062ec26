// On a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) a gpu test process prints its stack before it
// dies: each frame as module and offset (`addr2line -f -C -e MODULE OFFSET` names the line), so a
// crash seen once in a parallel ctest run on a GPU machine can be read afterwards. Installed before
// main by a static initialiser; the signal is then raised again with its default action.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace {

void report(int sig, siginfo_t* info, void*) {
  char line[512];
  int n = std::snprintf(line, sizeof(line), "\n*** signal %d (%s) at address %p, thread %ld; stack:\n", sig,
                        strsignal(sig), info != nullptr ? info->si_addr : nullptr, static_cast<long>(gettid()));
  (void)!write(STDERR_FILENO, line, n);
  void* frames[64];
  int depth = backtrace(frames, 64);
  for (int i = 0; i < depth; ++i) {
    Dl_info where{};
    const char* module = "?";
    const char* symbol = "";
    unsigned long offset = 0;
    if (dladdr(frames[i], &where) != 0 && where.dli_fname != nullptr) {
      module = where.dli_fname;
      symbol = where.dli_sname != nullptr ? where.dli_sname : "";
      offset = static_cast<unsigned long>(static_cast<char*>(frames[i]) - static_cast<char*>(where.dli_fbase));
    }
    n = std::snprintf(line, sizeof(line), "  #%d %s +0x%lx %s\n", i, module, offset, symbol);
    (void)!write(STDERR_FILENO, line, n);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

struct Installer {
  Installer() {
    struct sigaction sa {};
    sa.sa_sigaction = report;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
  }
} installer;

}  // namespace

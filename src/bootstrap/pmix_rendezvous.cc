#include "bootstrap/pmix_rendezvous.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "core/param.h"

#if BRAID_HAVE_PMIX
#include <pmix.h>
#endif

namespace braid::bootstrap {

#if !BRAID_HAVE_PMIX

bool pmixBuiltIn() { return false; }

Status pmixUniqueId(int, int, UniqueIdBytes*) {
  return invalidUsage("this braid was built without PMIx's header (pmix.h, Debian: libpmix-dev)");
}

#else

namespace {

constexpr const char* kKey = "braid.uniqueid";

// The client calls braid makes, found in the library loaded at run time (none is linked).
struct Pmix {
  void* lib = nullptr;
  pmix_status_t (*init)(pmix_proc_t*, pmix_info_t[], size_t) = nullptr;
  pmix_status_t (*finalize)(const pmix_info_t[], size_t) = nullptr;
  pmix_status_t (*put)(pmix_scope_t, const char[], pmix_value_t*) = nullptr;
  pmix_status_t (*commit)() = nullptr;
  pmix_status_t (*fence)(const pmix_proc_t[], size_t, const pmix_info_t[], size_t) = nullptr;
  pmix_status_t (*get)(const pmix_proc_t*, const char[], const pmix_info_t[], size_t, pmix_value_t**) = nullptr;
  const char* (*errorString)(pmix_status_t) = nullptr;
  void (*valueDestruct)(pmix_value_t*) = nullptr;

  std::string error(const char* call, pmix_status_t rc) const {
    return std::string(call) + " failed: " + (errorString != nullptr ? errorString(rc) : "") + " (" +
           std::to_string(rc) + ")";
  }
};

template <class Fn>
bool resolve(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  return *out != nullptr;
}

Status loadPmix(Pmix* p) {
  const std::string path = param::getString(param::Id::kPmixLibrary);
  p->lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (p->lib == nullptr) {
    const char* why = dlerror();
    return invalidUsage("could not load the PMIx client library " + path +
                        " (BRAID_PMIX_LIBRARY): " + (why != nullptr ? why : "unknown error"));
  }
  const bool all = resolve(p->lib, "PMIx_Init", &p->init) && resolve(p->lib, "PMIx_Finalize", &p->finalize) &&
                   resolve(p->lib, "PMIx_Put", &p->put) && resolve(p->lib, "PMIx_Commit", &p->commit) &&
                   resolve(p->lib, "PMIx_Fence", &p->fence) && resolve(p->lib, "PMIx_Get", &p->get);
  resolve(p->lib, "PMIx_Error_string", &p->errorString);
  resolve(p->lib, "PMIx_Value_destruct", &p->valueDestruct);
  if (!all)
    return invalidUsage(path + " lacks PMIx_Init, _Put, _Commit, _Fence, _Get or _Finalize: not a PMIx library");
  return Status::ok();
}

Status exchange(const Pmix& p, const pmix_proc_t& me, int rank, UniqueIdBytes* out) {
  if (rank == 0) {
    BRAID_RETURN_IF_ERROR(createLocalUniqueId(out).withContext("PMIx rendezvous: rank 0's unique id"));
    pmix_value_t v;
    std::memset(&v, 0, sizeof(v));
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = reinterpret_cast<char*>(out->bytes);
    v.data.bo.size = sizeof(out->bytes);
    pmix_status_t rc = p.put(PMIX_GLOBAL, kKey, &v);
    if (rc != PMIX_SUCCESS) return internalError(p.error("PMIx_Put of rank 0's unique id", rc));
    rc = p.commit();
    if (rc != PMIX_SUCCESS) return internalError(p.error("PMIx_Commit", rc));
  }
  pmix_proc_t all = me;
  all.rank = PMIX_RANK_WILDCARD;
  pmix_info_t collect;
  std::memset(&collect, 0, sizeof(collect));
  std::strncpy(collect.key, PMIX_COLLECT_DATA, PMIX_MAX_KEYLEN);
  collect.value.type = PMIX_BOOL;
  collect.value.data.flag = true;
  pmix_status_t rc = p.fence(&all, 1, &collect, 1);
  if (rc != PMIX_SUCCESS) return internalError(p.error("PMIx_Fence over the job", rc));
  if (rank == 0) return Status::ok();
  pmix_proc_t root = me;
  root.rank = 0;
  pmix_value_t* got = nullptr;
  rc = p.get(&root, kKey, nullptr, 0, &got);
  if (rc != PMIX_SUCCESS || got == nullptr) {
    return internalError(p.error("PMIx_Get of rank 0's unique id", rc) +
                         " (does rank 0 run braid's launcher init too?)");
  }
  Status st = got->type == PMIX_BYTE_OBJECT && got->data.bo.size == sizeof(out->bytes)
                  ? Status::ok()
                  : internalError("PMIx: rank 0's \"" + std::string(kKey) + "\" is not a " +
                                  std::to_string(sizeof(out->bytes)) + "-byte unique id (another braid version?)");
  if (st.isOk()) std::memcpy(out->bytes, got->data.bo.bytes, sizeof(out->bytes));
  if (p.valueDestruct != nullptr) p.valueDestruct(got);
  std::free(got);
  return st;
}

}  // namespace

bool pmixBuiltIn() { return true; }

Status pmixUniqueId(int rank, int nranks, UniqueIdBytes* out) {
  Pmix p;
  BRAID_RETURN_IF_ERROR(loadPmix(&p));
  pmix_proc_t me;
  std::memset(&me, 0, sizeof(me));
  pmix_status_t rc = p.init(&me, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    return invalidUsage(p.error("PMIx_Init", rc) + ": no PMIx server reachable (run under mpirun, or srun --mpi=pmix)");
  }
  Status st = static_cast<int>(me.rank) == rank
                  ? exchange(p, me, rank, out)
                  : invalidUsage("PMIx says this process is rank " + std::to_string(me.rank) + " of namespace " +
                                 me.nspace + " but the launcher's variables say rank " + std::to_string(rank) + " of " +
                                 std::to_string(nranks));
  if (st.isOk()) {
    BRAID_INFO(log::Subsys::kBootstrap, "PMIx rendezvous: rank ", rank, " of ", nranks, " in namespace ", me.nspace,
               rank == 0 ? ": published the unique id" : ": got rank 0's unique id");
  }
  p.finalize(nullptr, 0);  // PMIx counts its inits: an MPI library's own stays
  return st;
}

#endif

}  // namespace braid::bootstrap

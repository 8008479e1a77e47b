//===- ModuleCache.h - the process-wide cache of loaded modules -*- C++ -*-===//
//
// One instance per kind of compiled program (updates, norms), keyed by the
// compile key and the CUDA context the module is loaded into; and the
// entries each kernel object keeps of the modules it already looked up.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_MODULECACHE_H
#define KFUSE_RUNTIME_MODULECACHE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

typedef struct CUctx_st *CUcontext;

namespace kfuse {

/// Loaded modules by compile key and context, one process-wide instance per
/// kind of compiled program (updates, norms). Never destroyed: at process
/// exit the driver may already be gone, and unloading into it would crash.
template <typename Compiled> struct ModuleCache {
  using Result = llvm::Expected<std::shared_ptr<Compiled>>;

  /// The module under (`key`, `context`), made by `compile` on the first
  /// request. Concurrent requests for one key wait for that one compile;
  /// requests for other keys compile alongside. A failed compile is not
  /// kept: the next request tries again.
  /// `*made` (where given) says whether this call ran `compile`.
  Result getOrCompile(const std::string &key, CUcontext context,
                      llvm::function_ref<Result()> compile,
                      bool *made = nullptr) {
    if (made)
      *made = false;
    std::shared_ptr<Slot> slot;
    {
      std::lock_guard<std::mutex> lock(mutex);
      std::shared_ptr<Slot> &entry = slots[{key, context}];
      if (!entry)
        entry = std::make_shared<Slot>();
      slot = entry;
    }
    std::lock_guard<std::mutex> lock(slot->mutex);
    if (slot->compiled)
      return slot->compiled;
    Result compiled = compile();
    if (made)
      *made = true;
    if (compiled)
      slot->compiled = *compiled;
    return compiled;
  }

  static ModuleCache &get() {
    static ModuleCache *cache = new ModuleCache();
    return *cache;
  }

private:
  struct Slot {
    std::mutex mutex; // held while the module compiles
    std::shared_ptr<Compiled> compiled;
  };
  std::mutex mutex; // guards `slots`
  std::map<std::pair<std::string, CUcontext>, std::shared_ptr<Slot>> slots;
};

/// The modules one kernel object (an Update, a Norm) already looked up, by
/// what it compiled them for (a `Spec` and an `Options`, compared with ==)
/// and the context: spares hashing the IR on every launch. A kernel sees a
/// few, so a list compared field by field (no key built, nothing copied)
/// keeps a hit well under a microsecond.
template <typename Spec, typename Options, typename Compiled>
class LaunchEntries {
public:
  /// The module looked up for (`spec`, `options`, `context`), or null.
  std::shared_ptr<Compiled> find(const Spec &spec, const Options &options,
                                 CUcontext context) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Entry &entry : entries)
      if (entry.context == context && entry.spec == spec &&
          entry.options == options)
        return entry.compiled;
    return nullptr;
  }

  /// Remembers `compiled` for (`spec`, `options`, `context`) unless an
  /// entry is there already.
  void add(const Spec &spec, const Options &options, CUcontext context,
           std::shared_ptr<Compiled> compiled) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Entry &entry : entries)
      if (entry.context == context && entry.spec == spec &&
          entry.options == options)
        return;
    entries.push_back({spec, options, context, std::move(compiled)});
  }

private:
  struct Entry {
    Spec spec;
    Options options;
    CUcontext context;
    std::shared_ptr<Compiled> compiled;
  };
  std::mutex mutex;
  std::vector<Entry> entries;
};

} // namespace kfuse

#endif // KFUSE_RUNTIME_MODULECACHE_H

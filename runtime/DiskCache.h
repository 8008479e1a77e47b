//===- DiskCache.h - an on-disk cache of compiled kernels -------*- C++ -*-===//
//
// Stores opaque bytes (a cubin, a PTX string) under a key given by the caller
// (the hex SHA-256 of compileCacheKey) in a directory that many processes, on
// one machine or on a shared file system, use at once. It knows nothing of
// CUDA.
//
// An entry is written to a unique temporary file beside its final name and
// renamed into place, so a reader sees a whole entry or none, and concurrent
// writers of one key both succeed. Each entry carries a checksum of its
// payload and its own key, so a torn, corrupted or misplaced file reads as a
// miss. Nothing here fails the caller: the cache only saves compile time, so a
// read-only or full disk, a corrupt entry or an unusable key becomes a miss or
// a warning, never an error, an exception or an abort.
//
// Layout: <root>/v1/<first two hex digits of the key>/<key>.bin, where the
// root is KFUSE_CACHE_DIR, else $XDG_CACHE_HOME/kfuse, else
// $HOME/.cache/kfuse. The total size is bounded (KFUSE_CACHE_MAX_BYTES, 1 GiB
// by default): after a store that takes it over the bound, the least recently
// used entries (by modification time, which a hit refreshes) are deleted until
// it is under 90 % of it.
//
// A DiskCache is thread-safe: its options never change, its counters are
// atomic, and its size estimate sits behind a mutex.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_DISKCACHE_H
#define KFUSE_RUNTIME_DISKCACHE_H

#include "llvm/ADT/StringRef.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace kfuse {

/// Why DiskCache::lookup returned no payload.
enum class CacheMiss {
  None,    // a hit
  Absent,  // no entry under the key
  Corrupt, // an entry that failed verification (removed best-effort)
  Error,   // an unusable key or cache directory, or an I/O error
};

/// What DiskCache::lookup found.
struct CacheLookup {
  CacheMiss miss = CacheMiss::Absent;
  std::string payload; // the stored bytes, on a hit
  std::string reason;  // why it missed, for a log line; empty on a hit

  bool hit() const { return miss == CacheMiss::None; }
};

/// What DiskCache::store did: stored the entry, or has a warning for the log
/// (the caller keeps its in-memory result either way).
struct CacheStoreStatus {
  bool stored = false;
  std::string warning;

  explicit operator bool() const { return stored; }
};

/// What DiskCache::clear removed.
struct CacheClearResult {
  uint64_t entries = 0;
  uint64_t bytes = 0;
  std::string warning; // set when some file could not be listed or removed
};

/// The entries on disk now (all processes' together).
struct DiskCacheStats {
  std::string directory; // the cache root
  uint64_t entries = 0;
  uint64_t totalBytes = 0; // entry files, headers included
  std::string warning;     // set when the directory could not be read
};

/// What this DiskCache object did since it was made.
struct DiskCacheCounters {
  uint64_t hits = 0;
  uint64_t missesAbsent = 0;
  uint64_t missesCorrupt = 0;
  uint64_t missesError = 0;
  uint64_t stores = 0;
  uint64_t storeFailures = 0;
  uint64_t evictions = 0; // entries this object deleted to stay in bounds
};

struct DiskCacheOptions {
  static constexpr uint64_t kDefaultMaxBytes = uint64_t(1) << 30;

  /// The cache root; empty disables the cache (every lookup misses with
  /// CacheMiss::Error, every store warns).
  std::string directory;
  /// The bound on the entries' total size, headers included.
  uint64_t maxBytes = kDefaultMaxBytes;
  /// fsync each entry before renaming it into place (off: a crash may lose a
  /// recent entry, which then reads as absent or corrupt, never as valid).
  bool syncWrites = false;
  /// A hit refreshes the entry's modification time only when it is older
  /// than this, sparing a metadata write per hit on shared file systems.
  std::chrono::seconds touchInterval{60};
  /// The size of the cache is known from a directory scan plus this object's
  /// own stores since; a store rescans (to see other processes' stores) when
  /// that estimate goes over the bound, on the first store, and after this
  /// many stores. 1 scans after every store: exact, but a scan stats every
  /// entry, which is slow on network file systems.
  unsigned storesBetweenScans = 16;

  /// The root from KFUSE_CACHE_DIR, else $XDG_CACHE_HOME/kfuse, else
  /// $HOME/.cache/kfuse (else empty); the bound from KFUSE_CACHE_MAX_BYTES
  /// (bytes, or with a K, M, G or T suffix: binary multiples). A malformed
  /// bound keeps the default and sets `*warning` when given.
  static DiskCacheOptions fromEnvironment(std::string *warning = nullptr);
};

class DiskCache {
public:
  /// On-disk format version: entries live under <root>/v<kFormatVersion>.
  static constexpr uint32_t kFormatVersion = 1;

  explicit DiskCache(DiskCacheOptions options);
  /// A cache configured from the environment (DiskCacheOptions::
  /// fromEnvironment).
  DiskCache();

  DiskCache(const DiskCache &) = delete;
  DiskCache &operator=(const DiskCache &) = delete;

  /// The payload stored under `key`, when the entry verifies (magic, format
  /// version, sizes, key, checksum); otherwise a miss with its reason. A
  /// corrupt entry is removed best-effort. Never fails otherwise.
  CacheLookup lookup(llvm::StringRef key);

  /// Stores `payload` under `key` (lowercase hex, 2 to 128 digits), replacing
  /// any entry there, then evicts least recently used entries if the cache
  /// went over its bound. Any failure is a warning.
  CacheStoreStatus store(llvm::StringRef key, llvm::StringRef payload);

  /// Counts the entries on disk (a directory scan).
  DiskCacheStats stats() const;

  /// Removes every entry (and temporary files that crashed writers left);
  /// leaves other files in the directory alone.
  CacheClearResult clear();

  /// The cache root (empty when disabled).
  const std::string &path() const { return options.directory; }
  /// Where the entry for `key` lives (empty for an invalid key).
  std::string entryPath(llvm::StringRef key) const;
  const DiskCacheOptions &getOptions() const { return options; }

  DiskCacheCounters counters() const;

  /// Whether `key` is one this cache accepts: lowercase hex, 2 to 128 digits.
  static bool isValidKey(llvm::StringRef key);

private:
  /// Counts a store of `entryBytes` toward the size estimate and evicts when
  /// the estimate, or a periodic rescan, finds the cache over its bound.
  void noteStored(uint64_t entryBytes, llvm::StringRef keepPath);
  /// Deletes least recently used entries (never `keepPath`) until the total
  /// is under 90 % of the bound. One thread at a time: a thread that finds
  /// a scan running leaves a request for another pass and returns.
  void evict(llvm::StringRef keepPath);
  /// One pass of evict(), under evictionMutex.
  void scanAndEvict(llvm::StringRef keepPath);

  const DiskCacheOptions options;

  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> missesAbsent{0};
  std::atomic<uint64_t> missesCorrupt{0};
  std::atomic<uint64_t> missesError{0};
  std::atomic<uint64_t> stores{0};
  std::atomic<uint64_t> storeFailures{0};
  std::atomic<uint64_t> evictions{0};

  /// The total size as of the last scan plus this object's stores since
  /// (other processes' stores show up at the next scan).
  std::mutex sizeMutex;
  std::optional<uint64_t> estimatedBytes;
  unsigned storesSinceScan = 0;

  std::mutex evictionMutex;
  /// A store landed while a scan ran: the scanning thread makes another pass.
  std::atomic<bool> rescanWanted{false};
};

} // namespace kfuse

#endif // KFUSE_RUNTIME_DISKCACHE_H

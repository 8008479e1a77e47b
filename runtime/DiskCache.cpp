//===- DiskCache.cpp - a crash-safe on-disk cache of compiled kernels -----===//
//
// Entry file format (little-endian):
//
//   offset  size  field
//        0     8  magic "KFUSEKC\0"
//        8     4  format version (DiskCache::kFormatVersion)
//       12     4  key length in bytes
//       16     8  payload size in bytes
//       24     8  xxh3_64 of the payload
//       32     8  xxh3_64 of bytes 0..32 followed by the key
//       40     -  the key, then the payload
//
// The checksums catch torn and bit-flipped files, not tampering: anyone who
// can write the cache directory can make the process load what they like.
//
//===----------------------------------------------------------------------===//

#include "runtime/DiskCache.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;
using llvm::StringRef;
using llvm::Twine;

namespace kfuse {

namespace {

constexpr char kMagic[8] = {'K', 'F', 'U', 'S', 'E', 'K', 'C', '\0'};
constexpr size_t kHeaderSize = 40;
constexpr size_t kChecksummedHeaderBytes = 32;
constexpr size_t kMaxKeyLength = 128;
constexpr StringRef kEntrySuffix = ".bin";
constexpr StringRef kTempSuffix = ".tmp";

/// Eviction stops under this fraction of the bound, so that the next few
/// stores do not each trigger a scan.
constexpr double kEvictTargetFraction = 0.9;
/// Temporary files older than this belong to writers that crashed.
constexpr std::chrono::hours kStaleTempAge{1};

llvm::sys::TimePoint<> now() {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now());
}

std::string entriesDirectory(StringRef root) {
  llvm::SmallString<256> dir(root);
  path::append(dir, "v" + Twine(DiskCache::kFormatVersion));
  return std::string(dir);
}

bool isHexDigits(StringRef text) {
  return llvm::all_of(text, [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

std::string buildHeader(StringRef key, StringRef payload) {
  using namespace llvm::support::endian;
  std::string header(kHeaderSize, '\0');
  char *bytes = header.data();
  std::memcpy(bytes, kMagic, sizeof(kMagic));
  write32le(bytes + 8, DiskCache::kFormatVersion);
  write32le(bytes + 12, static_cast<uint32_t>(key.size()));
  write64le(bytes + 16, payload.size());
  write64le(bytes + 24, llvm::xxh3_64bits(payload));
  std::string checksummed =
      (StringRef(bytes, kChecksummedHeaderBytes) + key).str();
  write64le(bytes + 32, llvm::xxh3_64bits(checksummed));
  return header;
}

/// Closes a file on every path out of a function.
class FileCloser {
public:
  explicit FileCloser(fs::file_t file) : file(file) {}
  ~FileCloser() { (void)fs::closeFile(file); }

private:
  fs::file_t file;
};

/// Reads exactly `buffer.size()` bytes. An end of file first (the file shrank
/// since it was measured) sets `complete` to false; it is no I/O error.
std::error_code readExactly(fs::file_t file, llvm::MutableArrayRef<char> buffer,
                            bool &complete) {
  complete = false;
  size_t done = 0;
  while (done < buffer.size()) {
    llvm::Expected<size_t> read =
        fs::readNativeFile(file, buffer.drop_front(done));
    if (!read)
      return llvm::errorToErrorCode(read.takeError());
    if (*read == 0)
      return {};
    done += *read;
  }
  complete = true;
  return {};
}

/// Verifies the entry open as `file` against `key` and reads its payload.
/// Returns CacheMiss::None on success, else the miss kind with `reason`.
CacheMiss readEntry(fs::file_t file, StringRef key, std::string &payload,
                    std::string &reason) {
  using namespace llvm::support::endian;
  fs::file_status status;
  if (std::error_code ec = fs::status(file, status)) {
    reason = "cannot stat: " + ec.message();
    return CacheMiss::Error;
  }
  if (status.type() != fs::file_type::regular_file) {
    reason = "not a regular file";
    return CacheMiss::Corrupt;
  }
  uint64_t fileSize = status.getSize();
  if (fileSize < kHeaderSize) {
    reason = ("truncated: " + Twine(fileSize) + " bytes, shorter than the " +
              Twine(kHeaderSize) + "-byte header")
                 .str();
    return CacheMiss::Corrupt;
  }

  bool complete = false;
  char header[kHeaderSize];
  if (std::error_code ec = readExactly(file, header, complete)) {
    reason = "cannot read: " + ec.message();
    return CacheMiss::Error;
  }
  if (!complete) {
    reason = "truncated while reading the header";
    return CacheMiss::Corrupt;
  }
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
    reason = "not a kfuse cache entry (bad magic)";
    return CacheMiss::Corrupt;
  }
  uint32_t version = read32le(header + 8);
  if (version != DiskCache::kFormatVersion) {
    reason = ("format version " + Twine(version) + ", expected " +
              Twine(DiskCache::kFormatVersion))
                 .str();
    return CacheMiss::Corrupt;
  }
  uint32_t keyLength = read32le(header + 12);
  uint64_t payloadSize = read64le(header + 16);
  uint64_t payloadChecksum = read64le(header + 24);
  uint64_t headerChecksum = read64le(header + 32);
  if (keyLength == 0 || keyLength > kMaxKeyLength) {
    reason = ("bad key length " + Twine(keyLength)).str();
    return CacheMiss::Corrupt;
  }
  if (fileSize - kHeaderSize < keyLength ||
      payloadSize != fileSize - kHeaderSize - keyLength) {
    reason =
        ("size mismatch: the header promises " +
         Twine(kHeaderSize + keyLength) + " + " + Twine(payloadSize) +
         " bytes, the file holds " + Twine(fileSize) + " (truncated or torn)")
            .str();
    return CacheMiss::Corrupt;
  }

  std::string storedKey(keyLength, '\0');
  if (std::error_code ec = readExactly(file, storedKey, complete)) {
    reason = "cannot read: " + ec.message();
    return CacheMiss::Error;
  }
  if (!complete) {
    reason = "truncated while reading the key";
    return CacheMiss::Corrupt;
  }
  std::string checksummed =
      (StringRef(header, kChecksummedHeaderBytes) + storedKey).str();
  if (llvm::xxh3_64bits(checksummed) != headerChecksum) {
    reason = "header checksum mismatch";
    return CacheMiss::Corrupt;
  }
  if (storedKey != key) {
    reason = "holds key " + storedKey +
             ", not the one looked up (a renamed or misplaced file)";
    return CacheMiss::Corrupt;
  }

  // The size was checked against the file, so a corrupt header cannot ask
  // for an allocation larger than the file itself.
  payload.resize(payloadSize);
  if (std::error_code ec = readExactly(file, payload, complete)) {
    reason = "cannot read: " + ec.message();
    return CacheMiss::Error;
  }
  if (!complete) {
    reason = "truncated while reading the payload";
    return CacheMiss::Corrupt;
  }
  if (llvm::xxh3_64bits(payload) != payloadChecksum) {
    reason = "payload checksum mismatch";
    return CacheMiss::Corrupt;
  }
  return CacheMiss::None;
}

/// Removes `filePath` if it still names the file open as `file`: a writer may
/// have renamed a fresh entry onto the name since it was opened.
/// Removes whatever stands at `filePath`, a directory tree included.
/// (fs::remove refuses FIFOs, sockets and devices.)
std::error_code removeAny(StringRef filePath, fs::file_type type) {
  std::error_code ec;
  if (type == fs::file_type::directory_file)
    ec = fs::remove_directories(filePath, /*IgnoreErrors=*/false);
  else if (::unlink(std::string(filePath).c_str()) != 0)
    ec = std::error_code(errno, std::generic_category());
  // Gone already (a concurrent eviction) is as good as removed.
  return ec == llvm::errc::no_such_file_or_directory ? std::error_code() : ec;
}

void removeIfUnchanged(StringRef filePath, fs::file_t file) {
  fs::file_status openStatus;
  fs::UniqueID onDisk;
  if (fs::status(file, openStatus) || fs::getUniqueID(filePath, onDisk))
    return;
  if (openStatus.getUniqueID() == onDisk)
    (void)removeAny(filePath, openStatus.type());
}

/// Refreshes the modification time of the entry open as `file` (for LRU
/// eviction), unless it is recent. Best-effort.
void touchEntry(fs::file_t file, std::chrono::seconds interval) {
  fs::file_status status;
  if (fs::status(file, status))
    return;
  llvm::sys::TimePoint<> time = now();
  if (time - status.getLastModificationTime() < interval)
    return;
  if (!fs::setLastAccessAndModificationTime(file, time))
    return;
  // Setting an explicit time needs ownership; "now" needs only write access,
  // which a cache shared by a group grants to entries others wrote.
  (void)::futimens(file, nullptr);
}

/// One entry file found by a scan.
struct EntryFile {
  std::string path;
  uint64_t size;
  llvm::sys::TimePoint<> modified;
  /// Other than a regular file (a FIFO, a directory) at an entry's name:
  /// never read as an entry (a lookup removes it as corrupt), 0 bytes.
  fs::file_type type = fs::file_type::regular_file;
};

/// Lists every entry under `root` (and, with `removeStaleTemps`, deletes
/// temporary files that crashed writers left). Files the cache did not name
/// are ignored. Appends to `warning` for directories it cannot read.
std::vector<EntryFile> scanEntries(StringRef root, bool removeStaleTemps,
                                   std::string &warning) {
  std::vector<EntryFile> entries;
  auto note = [&](StringRef dir, std::error_code ec) {
    if (!ec || ec == llvm::errc::no_such_file_or_directory)
      return;
    if (!warning.empty())
      warning += "; ";
    warning += ("cannot list " + dir + ": " + ec.message()).str();
  };
  std::string top = entriesDirectory(root);
  std::error_code topError;
  for (fs::directory_iterator shard(top, topError, /*follow_symlinks=*/false),
       end;
       !topError && shard != end; shard.increment(topError)) {
    StringRef shardName = path::filename(shard->path());
    if (shardName.size() != 2 || !isHexDigits(shardName))
      continue;
    std::error_code shardError;
    for (fs::directory_iterator file(shard->path(), shardError,
                                     /*follow_symlinks=*/false);
         !shardError && file != end; file.increment(shardError)) {
      StringRef name = path::filename(file->path());
      // Only names store() makes: "<key>.bin" and "<key>.<pid>.<random>.tmp"
      // with the key in its shard.
      StringRef key = name.split('.').first;
      if (!DiskCache::isValidKey(key) || !key.starts_with(shardName))
        continue;
      if (name.ends_with(kTempSuffix)) {
        if (!removeStaleTemps)
          continue;
        llvm::ErrorOr<fs::basic_file_status> status = file->status();
        if (status && status->type() == fs::file_type::regular_file &&
            now() - status->getLastModificationTime() > kStaleTempAge)
          (void)fs::remove(file->path());
        continue;
      }
      if (name != (key + kEntrySuffix).str())
        continue;
      // A concurrent eviction may have deleted it since it was listed.
      llvm::ErrorOr<fs::basic_file_status> status = file->status();
      if (!status)
        continue;
      bool regular = status->type() == fs::file_type::regular_file;
      entries.push_back({file->path(), regular ? status->getSize() : 0,
                         status->getLastModificationTime(), status->type()});
    }
    note(shard->path(), shardError);
  }
  note(top, topError);
  return entries;
}

/// Parses "1073741824", "512M", "2GiB", "1g": bytes or binary multiples.
std::optional<uint64_t> parseByteCount(StringRef text) {
  text = text.trim();
  uint64_t value = 0;
  if (text.consumeInteger(10, value))
    return std::nullopt;
  std::string unit = text.trim().lower();
  unsigned shift = 0;
  if (!unit.empty()) {
    StringRef rest(unit);
    switch (rest.front()) {
    case 'k':
      shift = 10;
      break;
    case 'm':
      shift = 20;
      break;
    case 'g':
      shift = 30;
      break;
    case 't':
      shift = 40;
      break;
    case 'b':
      break;
    default:
      return std::nullopt;
    }
    if (shift != 0)
      rest = rest.drop_front();
    if (!rest.empty() && rest != "b" && rest != "ib")
      return std::nullopt;
  }
  // Sizes are reported as signed 64-bit numbers (JSON, the C API).
  constexpr uint64_t kMax = INT64_MAX;
  if (value == 0 || value > (kMax >> shift))
    return std::nullopt;
  return value << shift;
}

std::string envOrEmpty(const char *name) {
  std::optional<std::string> value = llvm::sys::Process::GetEnv(name);
  return value ? *value : std::string();
}

} // namespace

DiskCacheOptions DiskCacheOptions::fromEnvironment(std::string *warning) {
  DiskCacheOptions options;
  llvm::SmallString<256> root;
  if (std::string dir = envOrEmpty("KFUSE_CACHE_DIR"); !dir.empty()) {
    root = dir;
  } else if (std::string xdg = envOrEmpty("XDG_CACHE_HOME");
             !xdg.empty() && path::is_absolute(xdg)) {
    // The XDG spec says to ignore a relative XDG_CACHE_HOME.
    root = xdg;
    path::append(root, "kfuse");
  } else if (std::string home = envOrEmpty("HOME"); !home.empty()) {
    root = home;
    path::append(root, ".cache", "kfuse");
  }
  if (!root.empty())
    (void)fs::make_absolute(root);
  options.directory = std::string(root);

  if (std::string bound = envOrEmpty("KFUSE_CACHE_MAX_BYTES"); !bound.empty()) {
    if (std::optional<uint64_t> bytes = parseByteCount(bound))
      options.maxBytes = *bytes;
    else if (warning)
      *warning = "ignoring KFUSE_CACHE_MAX_BYTES='" + bound +
                 "': expected a positive byte count below 2^63 such as "
                 "1073741824 or 512M; using " +
                 std::to_string(kDefaultMaxBytes);
  }
  return options;
}

DiskCache::DiskCache(DiskCacheOptions options) : options(std::move(options)) {}

DiskCache::DiskCache() : DiskCache(DiskCacheOptions::fromEnvironment()) {}

bool DiskCache::isValidKey(StringRef key) {
  return key.size() >= 2 && key.size() <= kMaxKeyLength && isHexDigits(key);
}

std::string DiskCache::entryPath(StringRef key) const {
  if (!isValidKey(key) || options.directory.empty())
    return {};
  llvm::SmallString<256> file(entriesDirectory(options.directory));
  path::append(file, key.take_front(2), key + kEntrySuffix);
  return std::string(file);
}

DiskCacheCounters DiskCache::counters() const {
  DiskCacheCounters result;
  result.hits = hits.load();
  result.missesAbsent = missesAbsent.load();
  result.missesCorrupt = missesCorrupt.load();
  result.missesError = missesError.load();
  result.stores = stores.load();
  result.storeFailures = storeFailures.load();
  result.evictions = evictions.load();
  return result;
}

CacheLookup DiskCache::lookup(StringRef key) {
  CacheLookup result;
  auto miss = [&](CacheMiss kind, const Twine &reason) {
    result.miss = kind;
    result.payload.clear();
    result.reason = reason.str();
    switch (kind) {
    case CacheMiss::Absent:
      ++missesAbsent;
      break;
    case CacheMiss::Corrupt:
      ++missesCorrupt;
      break;
    default:
      ++missesError;
      break;
    }
    return result;
  };
  if (options.directory.empty())
    return miss(CacheMiss::Error, "no cache directory: set KFUSE_CACHE_DIR, "
                                  "XDG_CACHE_HOME or HOME");
  if (!isValidKey(key))
    return miss(CacheMiss::Error,
                "invalid cache key '" + key +
                    "': expected 2 to 128 lowercase hex digits");

  std::string filePath = entryPath(key);
  // Without blocking: opening a FIFO for reading waits for a writer, and
  // readEntry refuses anything but a regular file (on which O_NONBLOCK does
  // nothing).
  int file = ::open(filePath.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (file < 0) {
    std::error_code ec(errno, std::generic_category());
    if (ec == llvm::errc::no_such_file_or_directory)
      return miss(CacheMiss::Absent, "no entry at " + filePath);
    return miss(CacheMiss::Error,
                "cannot open " + filePath + ": " + ec.message());
  }
  FileCloser closer(file);
  std::string reason;
  CacheMiss kind = readEntry(file, key, result.payload, reason);
  if (kind == CacheMiss::Corrupt)
    removeIfUnchanged(filePath, file);
  if (kind != CacheMiss::None)
    return miss(kind, filePath + ": " + reason);
  touchEntry(file, options.touchInterval);
  result.miss = CacheMiss::None;
  ++hits;
  return result;
}

CacheStoreStatus DiskCache::store(StringRef key, StringRef payload) {
  CacheStoreStatus result;
  auto warn = [&](const Twine &message) {
    ++storeFailures;
    result.stored = false;
    result.warning = message.str();
    return result;
  };
  if (options.directory.empty())
    return warn("kernel cache disabled: no cache directory (set "
                "KFUSE_CACHE_DIR, XDG_CACHE_HOME or HOME)");
  if (!isValidKey(key))
    return warn("invalid cache key '" + key +
                "': expected 2 to 128 lowercase hex digits");
  uint64_t entryBytes = kHeaderSize + key.size() + payload.size();
  if (entryBytes > options.maxBytes)
    return warn("cache entry of " + Twine(entryBytes) +
                " bytes exceeds the cache bound of " + Twine(options.maxBytes) +
                " bytes; not stored");

  std::string finalPath = entryPath(key);
  StringRef shardDir = path::parent_path(finalPath);
  if (std::error_code ec = fs::create_directories(shardDir))
    return warn("cannot create cache directory " + shardDir + ": " +
                ec.message());

  // pid and random digits: unique among concurrent writers of this key, and
  // named after the key so that clear() and stale-file cleanup recognize it.
  int fd = -1;
  llvm::SmallString<256> tempPath;
  std::string model =
      (shardDir + "/" + key + "." + Twine(llvm::sys::Process::getProcessId()) +
       ".%%%%%%%%" + kTempSuffix)
          .str();
  if (std::error_code ec = fs::createUniqueFile(model, fd, tempPath))
    return warn("cannot create a file in " + shardDir + ": " + ec.message());

  auto fail = [&](StringRef what, std::error_code ec) {
    if (fd >= 0)
      (void)fs::closeFile(fd);
    (void)fs::remove(tempPath);
    return warn("cannot " + what + " " + tempPath + ": " + ec.message());
  };

  std::string header = buildHeader(key, payload);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/false, /*unbuffered=*/true);
    os << header << key << payload;
    os.flush();
    std::error_code ec = os.error();
    // Without this, raw_fd_ostream's destructor aborts on a write error.
    os.clear_error();
    if (ec)
      return fail("write", ec);
  }
  if (options.syncWrites && ::fsync(fd) != 0)
    return fail("sync", std::error_code(errno, std::generic_category()));
  // The kernel's coarse clock could order a fresh entry before one touched a
  // few milliseconds earlier; set the same fine clock that touches use.
  (void)fs::setLastAccessAndModificationTime(fd, now());
  if (std::error_code ec = fs::closeFile(fd)) {
    fd = -1;
    return fail("close", ec);
  }
  fd = -1;
  if (std::error_code ec = fs::rename(tempPath, finalPath))
    return fail("rename into place", ec);
  if (options.syncWrites) {
    int dirFd =
        ::open(shardDir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirFd >= 0) {
      (void)::fsync(dirFd);
      (void)::close(dirFd);
    }
  }

  ++stores;
  result.stored = true;
  noteStored(entryBytes, finalPath);
  return result;
}

void DiskCache::noteStored(uint64_t entryBytes, StringRef keepPath) {
  bool scan = false;
  {
    std::lock_guard<std::mutex> lock(sizeMutex);
    if (!estimatedBytes || ++storesSinceScan >= options.storesBetweenScans) {
      scan = true;
    } else {
      *estimatedBytes += entryBytes;
      scan = *estimatedBytes > options.maxBytes;
    }
  }
  if (scan)
    evict(keepPath);
}

void DiskCache::evict(StringRef keepPath) {
  // A thread that finds a scan running asks it for one more pass instead of
  // waiting: the running scan may have listed the directory before this
  // store landed, and after a burst of stores the cache would otherwise stay
  // over its bound until some later store.
  rescanWanted = true;
  while (rescanWanted.load()) {
    std::unique_lock<std::mutex> evicting(evictionMutex, std::try_to_lock);
    if (!evicting.owns_lock())
      return; // the thread holding it checks rescanWanted when it is done
    if (!rescanWanted.exchange(false))
      return;
    scanAndEvict(keepPath);
  }
}

void DiskCache::scanAndEvict(StringRef keepPath) {
  std::string warning;
  std::vector<EntryFile> entries =
      scanEntries(options.directory, /*removeStaleTemps=*/true, warning);
  uint64_t total = 0;
  for (const EntryFile &entry : entries)
    total += entry.size;

  if (total > options.maxBytes) {
    auto target =
        static_cast<uint64_t>(options.maxBytes * kEvictTargetFraction);
    llvm::sort(entries, [](const EntryFile &a, const EntryFile &b) {
      return std::tie(a.modified, a.path) < std::tie(b.modified, b.path);
    });
    for (const EntryFile &entry : entries) {
      if (total <= target)
        break;
      if (entry.path == keepPath)
        continue;
      std::error_code ec = removeAny(entry.path, entry.type);
      if (ec)
        break; // a read-only directory: nothing more will go either
      // Gone, by this process or a concurrent one: either way it no longer
      // counts.
      total -= entry.size;
      ++evictions;
    }
  }

  std::lock_guard<std::mutex> lock(sizeMutex);
  estimatedBytes = total;
  storesSinceScan = 0;
}

DiskCacheStats DiskCache::stats() const {
  DiskCacheStats result;
  result.directory = options.directory;
  if (options.directory.empty()) {
    result.warning = "no cache directory (set KFUSE_CACHE_DIR, "
                     "XDG_CACHE_HOME or HOME)";
    return result;
  }
  for (const EntryFile &entry : scanEntries(
           options.directory, /*removeStaleTemps=*/false, result.warning)) {
    ++result.entries;
    result.totalBytes += entry.size;
  }
  return result;
}

CacheClearResult DiskCache::clear() {
  CacheClearResult result;
  if (options.directory.empty()) {
    result.warning = "no cache directory (set KFUSE_CACHE_DIR, "
                     "XDG_CACHE_HOME or HOME)";
    return result;
  }
  for (const EntryFile &entry : scanEntries(
           options.directory, /*removeStaleTemps=*/true, result.warning)) {
    std::error_code ec = removeAny(entry.path, entry.type);
    if (ec) {
      if (!result.warning.empty())
        result.warning += "; ";
      result.warning += "cannot remove " + entry.path + ": " + ec.message();
      continue;
    }
    ++result.entries;
    result.bytes += entry.size;
  }
  std::lock_guard<std::mutex> lock(sizeMutex);
  estimatedBytes.reset();
  return result;
}

} // namespace kfuse

//===- DiskCacheTest.cpp - the on-disk kernel cache -----------------------===//
//
// Every test works in its own temporary directory. Corruption is made by hand
// (truncation, a flipped byte, a file copied under another key's name) and
// must read as a miss, never as an error or a crash.
//
//===----------------------------------------------------------------------===//

#include "runtime/DiskCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kfuse;
namespace fs = llvm::sys::fs;

namespace {

/// The hex SHA-256 of `name`, the kind of key compileCacheKey returns.
std::string keyFor(llvm::StringRef name) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(name)),
                     /*LowerCase=*/true);
}

/// `size` deterministic bytes for `name`, zeros and high bytes included.
std::string payloadFor(llvm::StringRef name, size_t size) {
  std::string bytes(size, '\0');
  uint64_t state = 0x9e3779b97f4a7c15ull ^ llvm::xxh3_64bits(name);
  for (size_t i = 0; i < size; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    bytes[i] = static_cast<char>(state >> 56);
  }
  return bytes;
}

std::string readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

void writeFile(llvm::StringRef path, llvm::StringRef contents) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  ASSERT_FALSE(ec) << ec.message();
  os << contents;
}

uint64_t fileSize(llvm::StringRef path) {
  uint64_t size = 0;
  EXPECT_FALSE(fs::file_size(path, size));
  return size;
}

class DiskCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(fs::createUniqueDirectory("kfuse-disk-cache", root));
  }
  void TearDown() override {
    // A test may leave directories read-only.
    (void)fs::setPermissions(root, fs::all_all);
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end;
         it.increment(ec))
      if (it->type() == fs::file_type::directory_file)
        (void)fs::setPermissions(it->path(), fs::all_all);
    (void)fs::remove_directories(root);
  }

  DiskCacheOptions
  options(uint64_t maxBytes = DiskCacheOptions::kDefaultMaxBytes) {
    DiskCacheOptions result;
    result.directory = std::string(root);
    result.maxBytes = maxBytes;
    result.touchInterval = std::chrono::seconds(0);
    return result;
  }

  llvm::SmallString<128> root;
};

TEST_F(DiskCacheTest, StoreThenLookupReturnsIdenticalBytes) {
  DiskCache cache(options());
  std::string key = keyFor("adamw");
  std::string payload = payloadFor("adamw", 4099);

  CacheLookup before = cache.lookup(key);
  EXPECT_FALSE(before.hit());
  EXPECT_EQ(before.miss, CacheMiss::Absent);

  CacheStoreStatus stored = cache.store(key, payload);
  ASSERT_TRUE(stored) << stored.warning;
  EXPECT_TRUE(stored.warning.empty());

  CacheLookup found = cache.lookup(key);
  ASSERT_TRUE(found.hit()) << found.reason;
  EXPECT_EQ(found.payload, payload);
  EXPECT_TRUE(found.reason.empty());

  // The layout is the documented one.
  llvm::SmallString<128> expected(root);
  llvm::sys::path::append(expected, "v1", key.substr(0, 2), key + ".bin");
  EXPECT_EQ(cache.entryPath(key), std::string(expected));
  EXPECT_TRUE(fs::exists(expected));
  EXPECT_EQ(cache.path(), std::string(root));

  // Another object (another process, in real use) sees the entry.
  DiskCache other(options());
  CacheLookup seen = other.lookup(key);
  ASSERT_TRUE(seen.hit()) << seen.reason;
  EXPECT_EQ(seen.payload, payload);

  DiskCacheCounters counters = cache.counters();
  EXPECT_EQ(counters.hits, 1u);
  EXPECT_EQ(counters.missesAbsent, 1u);
  EXPECT_EQ(counters.missesCorrupt, 0u);
  EXPECT_EQ(counters.stores, 1u);
  EXPECT_EQ(counters.storeFailures, 0u);

  DiskCacheStats stats = cache.stats();
  EXPECT_EQ(stats.directory, std::string(root));
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.totalBytes, fileSize(cache.entryPath(key)));
  EXPECT_TRUE(stats.warning.empty()) << stats.warning;
  // No temporary file is left behind.
  std::error_code ec;
  unsigned files = 0;
  for (fs::directory_iterator it(llvm::sys::path::parent_path(expected), ec),
       end;
       !ec && it != end; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1u);
}

TEST_F(DiskCacheTest, StoreReplacesAnExistingEntry) {
  DiskCache cache(options());
  std::string key = keyFor("replace");
  ASSERT_TRUE(cache.store(key, "first"));
  ASSERT_TRUE(cache.store(key, "second, longer"));
  CacheLookup found = cache.lookup(key);
  ASSERT_TRUE(found.hit()) << found.reason;
  EXPECT_EQ(found.payload, "second, longer");
  EXPECT_EQ(cache.stats().entries, 1u);
}

TEST_F(DiskCacheTest, EntryTruncatedInTheHeaderIsACorruptMiss) {
  DiskCache cache(options());
  std::string key = keyFor("truncated-header");
  std::string payload = payloadFor("truncated-header", 1000);
  ASSERT_TRUE(cache.store(key, payload));
  std::string path = cache.entryPath(key);
  {
    std::string contents = readFile(path);
    writeFile(path, llvm::StringRef(contents).take_front(17));
  }

  CacheLookup found = cache.lookup(key);
  EXPECT_FALSE(found.hit());
  EXPECT_EQ(found.miss, CacheMiss::Corrupt);
  EXPECT_NE(found.reason.find("truncated"), std::string::npos) << found.reason;
  EXPECT_NE(found.reason.find(path), std::string::npos) << found.reason;
  EXPECT_TRUE(found.payload.empty());
  // Removed best-effort, so the next lookup is a plain miss.
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(cache.lookup(key).miss, CacheMiss::Absent);
  EXPECT_EQ(cache.counters().missesCorrupt, 1u);

  ASSERT_TRUE(cache.store(key, payload));
  CacheLookup again = cache.lookup(key);
  ASSERT_TRUE(again.hit()) << again.reason;
  EXPECT_EQ(again.payload, payload);
}

TEST_F(DiskCacheTest, EntryTruncatedMidPayloadIsACorruptMiss) {
  DiskCache cache(options());
  std::string key = keyFor("truncated-payload");
  std::string payload = payloadFor("truncated-payload", 1000);
  ASSERT_TRUE(cache.store(key, payload));
  std::string path = cache.entryPath(key);
  std::string contents = readFile(path);
  ASSERT_EQ(contents.size(), 40 + key.size() + payload.size());
  writeFile(path, llvm::StringRef(contents).drop_back(500));

  CacheLookup found = cache.lookup(key);
  EXPECT_EQ(found.miss, CacheMiss::Corrupt);
  EXPECT_NE(found.reason.find("size mismatch"), std::string::npos)
      << found.reason;

  // A store over a corrupt entry (not yet looked up) replaces it.
  writeFile(path, llvm::StringRef(contents).drop_back(500));
  ASSERT_TRUE(cache.store(key, payload));
  CacheLookup again = cache.lookup(key);
  ASSERT_TRUE(again.hit()) << again.reason;
  EXPECT_EQ(again.payload, payload);
}

TEST_F(DiskCacheTest, FlippedPayloadByteIsACorruptMiss) {
  DiskCache cache(options());
  std::string key = keyFor("flipped");
  std::string payload = payloadFor("flipped", 256);
  ASSERT_TRUE(cache.store(key, payload));
  std::string path = cache.entryPath(key);
  std::string contents = readFile(path);
  contents[contents.size() - 100] ^= 0x01;
  writeFile(path, contents);

  CacheLookup found = cache.lookup(key);
  EXPECT_EQ(found.miss, CacheMiss::Corrupt);
  EXPECT_NE(found.reason.find("payload checksum mismatch"), std::string::npos)
      << found.reason;
  EXPECT_TRUE(found.payload.empty());
}

TEST_F(DiskCacheTest, FlippedHeaderByteIsACorruptMiss) {
  DiskCache cache(options());
  std::string key = keyFor("flipped-header");
  ASSERT_TRUE(cache.store(key, "payload"));
  std::string path = cache.entryPath(key);
  std::string contents = readFile(path);
  contents[26] ^= 0x40; // inside the payload checksum field
  writeFile(path, contents);
  CacheLookup found = cache.lookup(key);
  EXPECT_EQ(found.miss, CacheMiss::Corrupt);
  EXPECT_NE(found.reason.find("header checksum mismatch"), std::string::npos)
      << found.reason;
}

TEST_F(DiskCacheTest, ForeignFileIsACorruptMiss) {
  DiskCache cache(options());
  std::string key = keyFor("foreign");
  std::string path = cache.entryPath(key);
  ASSERT_FALSE(fs::create_directories(llvm::sys::path::parent_path(path)));
  writeFile(path, std::string(100, 'x'));
  CacheLookup found = cache.lookup(key);
  EXPECT_EQ(found.miss, CacheMiss::Corrupt);
  EXPECT_NE(found.reason.find("bad magic"), std::string::npos) << found.reason;
}

TEST_F(DiskCacheTest, NonRegularEntriesAreCorruptMissesAndCleared) {
  DiskCache cache(options());
  std::string fifoKey = keyFor("fifo"), dirKey = keyFor("directory"),
              idleFifoKey = keyFor("idle-fifo"),
              idleDirKey = keyFor("idle-directory");
  for (const std::string &key : {fifoKey, dirKey, idleFifoKey, idleDirKey})
    ASSERT_FALSE(fs::create_directories(
        llvm::sys::path::parent_path(cache.entryPath(key))));
  for (const std::string &key : {fifoKey, idleFifoKey})
    ASSERT_EQ(::mkfifo(cache.entryPath(key).c_str(), 0600), 0);
  for (const std::string &key : {dirKey, idleDirKey}) {
    ASSERT_FALSE(fs::create_directory(cache.entryPath(key)));
    writeFile(cache.entryPath(key) + "/inside", "x");
  }

  // A FIFO opened for reading waits for a writer: the lookup must not.
  auto pending =
      std::async(std::launch::async, [&] { return cache.lookup(fifoKey); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Unblock the reader so that the test ends, then fail.
    int writer = ::open(cache.entryPath(fifoKey).c_str(), O_WRONLY);
    ::close(writer);
    FAIL() << "the lookup of a FIFO entry blocked";
  }
  CacheLookup fifo = pending.get();
  EXPECT_EQ(fifo.miss, CacheMiss::Corrupt);
  EXPECT_NE(fifo.reason.find("not a regular file"), std::string::npos)
      << fifo.reason;
  // Removed as a corrupt entry is, so that the next store lands.
  EXPECT_FALSE(fs::exists(cache.entryPath(fifoKey)));
  ASSERT_TRUE(cache.store(fifoKey, "payload"));
  EXPECT_TRUE(cache.lookup(fifoKey).hit());

  CacheLookup directory = cache.lookup(dirKey);
  EXPECT_EQ(directory.miss, CacheMiss::Corrupt);
  EXPECT_NE(directory.reason.find("not a regular file"), std::string::npos)
      << directory.reason;
  EXPECT_FALSE(fs::exists(cache.entryPath(dirKey)));

  // clear removes whatever stands at an entry's name: the stored entry and
  // the FIFO and directory no lookup has met.
  EXPECT_EQ(cache.stats().entries, 3u);
  CacheClearResult cleared = cache.clear();
  EXPECT_TRUE(cleared.warning.empty()) << cleared.warning;
  EXPECT_EQ(cleared.entries, 3u);
  for (const std::string &key : {fifoKey, idleFifoKey, idleDirKey})
    EXPECT_FALSE(fs::exists(cache.entryPath(key))) << key;
}

TEST_F(DiskCacheTest, EntryCopiedUnderAnotherKeyIsACorruptMiss) {
  DiskCache cache(options());
  std::string key = keyFor("original");
  std::string other = keyFor("other");
  ASSERT_TRUE(cache.store(key, payloadFor("original", 300)));
  std::string otherPath = cache.entryPath(other);
  ASSERT_FALSE(fs::create_directories(llvm::sys::path::parent_path(otherPath)));
  ASSERT_FALSE(fs::copy_file(cache.entryPath(key), otherPath));

  CacheLookup found = cache.lookup(other);
  EXPECT_EQ(found.miss, CacheMiss::Corrupt);
  EXPECT_NE(found.reason.find("holds key " + key), std::string::npos)
      << found.reason;
  // The original is untouched.
  EXPECT_TRUE(cache.lookup(key).hit());
}

TEST_F(DiskCacheTest, ReadOnlyDirectoryWarnsAndMisses) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root ignores directory permissions";
  DiskCache cache(options());
  std::string kept = keyFor("kept");
  ASSERT_TRUE(cache.store(kept, "kept"));
  std::string shard =
      std::string(llvm::sys::path::parent_path(cache.entryPath(kept)));
  ASSERT_FALSE(fs::setPermissions(shard, fs::perms(0555)));
  ASSERT_FALSE(fs::setPermissions(root + "/v1", fs::perms(0555)));
  ASSERT_FALSE(fs::setPermissions(root, fs::perms(0555)));

  // A new shard cannot be made.
  std::string key = keyFor("read-only");
  CacheStoreStatus stored = cache.store(key, "payload");
  EXPECT_FALSE(stored);
  EXPECT_NE(stored.warning.find("cannot create cache directory"),
            std::string::npos)
      << stored.warning;
  CacheLookup found = cache.lookup(key);
  EXPECT_FALSE(found.hit());
  EXPECT_EQ(found.miss, CacheMiss::Absent);

  // An existing shard cannot take a file.
  std::string sameShard;
  for (int i = 0; sameShard.empty(); ++i) {
    std::string candidate = keyFor("same-shard-" + std::to_string(i));
    if (candidate.compare(0, 2, kept, 0, 2) == 0)
      sameShard = candidate;
  }
  CacheStoreStatus inShard = cache.store(sameShard, "payload");
  EXPECT_FALSE(inShard);
  EXPECT_NE(inShard.warning.find("cannot create a file"), std::string::npos)
      << inShard.warning;

  // What is there still reads (the touch fails silently).
  CacheLookup old = cache.lookup(kept);
  ASSERT_TRUE(old.hit()) << old.reason;
  EXPECT_EQ(old.payload, "kept");
  EXPECT_EQ(cache.counters().storeFailures, 2u);

  CacheClearResult cleared = cache.clear();
  EXPECT_EQ(cleared.entries, 0u);
  EXPECT_NE(cleared.warning.find("cannot remove"), std::string::npos)
      << cleared.warning;
}

TEST_F(DiskCacheTest, WriteErrorWarnsAndLeavesNothing) {
  // A file size limit makes write() fail with EFBIG, as a full disk fails it
  // with ENOSPC.
  DiskCache cache(options());
  std::string key = keyFor("write-error");
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit limited = saved;
  limited.rlim_cur = 4096;
  auto savedHandler = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  CacheStoreStatus stored = cache.store(key, payloadFor(key, 65536));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, savedHandler);

  EXPECT_FALSE(stored);
  EXPECT_NE(stored.warning.find("cannot write"), std::string::npos)
      << stored.warning;
  EXPECT_EQ(cache.lookup(key).miss, CacheMiss::Absent);
  EXPECT_EQ(cache.counters().storeFailures, 1u);
  // The temporary file is gone too.
  std::error_code ec;
  std::string shard =
      std::string(llvm::sys::path::parent_path(cache.entryPath(key)));
  fs::directory_iterator it(shard, ec), end;
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(it == end) << it->path();
  // With the limit lifted, the same store succeeds.
  EXPECT_TRUE(cache.store(key, payloadFor(key, 65536)));
}

TEST_F(DiskCacheTest, UnusableKeysAndDirectoriesNeverThrow) {
  DiskCache cache(options());
  for (llvm::StringRef key :
       {"", "a", "ABCDEF", "../../etc/passwd", "zz", "0123456789abcdef/x"}) {
    CacheLookup found = cache.lookup(key);
    EXPECT_EQ(found.miss, CacheMiss::Error) << key.str();
    EXPECT_NE(found.reason.find("invalid cache key"), std::string::npos);
    CacheStoreStatus stored = cache.store(key, "x");
    EXPECT_FALSE(stored);
    EXPECT_NE(stored.warning.find("invalid cache key"), std::string::npos);
  }
  EXPECT_EQ(cache.counters().missesError, 6u);
  EXPECT_EQ(cache.counters().storeFailures, 6u);

  DiskCacheOptions disabledOptions;
  disabledOptions.directory.clear();
  DiskCache disabled(disabledOptions);
  EXPECT_EQ(disabled.lookup(keyFor("x")).miss, CacheMiss::Error);
  EXPECT_FALSE(disabled.store(keyFor("x"), "x"));
  EXPECT_FALSE(disabled.stats().warning.empty());

  // The root is a plain file: creating the shard fails, and is a warning.
  std::string file = std::string(root) + "/plain-file";
  writeFile(file, "x");
  DiskCacheOptions onFile = options();
  onFile.directory = file;
  DiskCache broken(onFile);
  CacheStoreStatus stored = broken.store(keyFor("x"), "x");
  EXPECT_FALSE(stored);
  EXPECT_FALSE(stored.warning.empty());
  EXPECT_EQ(broken.lookup(keyFor("x")).miss, CacheMiss::Error);
  EXPECT_EQ(broken.stats().entries, 0u);
}

TEST_F(DiskCacheTest, EntryLargerThanTheBoundIsNotStored) {
  DiskCache cache(options(/*maxBytes=*/1000));
  CacheStoreStatus stored = cache.store(keyFor("big"), std::string(2000, 'x'));
  EXPECT_FALSE(stored);
  EXPECT_NE(stored.warning.find("exceeds the cache bound"), std::string::npos)
      << stored.warning;
}

TEST_F(DiskCacheTest, EvictionKeepsTheBoundAndRemovesLeastRecentlyUsed) {
  const size_t payloadSize = 1000;
  const uint64_t entrySize = 40 + 64 + payloadSize;
  const uint64_t bound = 10 * entrySize + 50;
  DiskCache cache(options(bound));
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) {
    keys.push_back(keyFor("lru-" + std::to_string(i)));
    ASSERT_TRUE(cache.store(keys.back(), payloadFor(keys.back(), payloadSize)));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(cache.stats().totalBytes, 10 * entrySize);
  EXPECT_EQ(cache.counters().evictions, 0u);

  // Key 0 is used again, so keys 1 and 2 are now the least recently used.
  ASSERT_TRUE(cache.lookup(keys[0]).hit());
  std::this_thread::sleep_for(std::chrono::milliseconds(2));

  keys.push_back(keyFor("lru-10"));
  ASSERT_TRUE(cache.store(keys.back(), payloadFor(keys.back(), payloadSize)));
  // 11 entries are over the bound; eviction goes under 90 % of it: 9 left.
  DiskCacheStats stats = cache.stats();
  EXPECT_LE(stats.totalBytes, bound * 9 / 10);
  EXPECT_EQ(stats.entries, 9u);
  EXPECT_EQ(cache.counters().evictions, 2u);
  EXPECT_TRUE(cache.lookup(keys[0]).hit());
  EXPECT_EQ(cache.lookup(keys[1]).miss, CacheMiss::Absent);
  EXPECT_EQ(cache.lookup(keys[2]).miss, CacheMiss::Absent);
  for (int i = 3; i <= 10; ++i)
    EXPECT_TRUE(cache.lookup(keys[i]).hit()) << i;

  // Many more stores: the total never passes the bound.
  for (int i = 11; i < 60; ++i) {
    std::string key = keyFor("lru-" + std::to_string(i));
    ASSERT_TRUE(cache.store(key, payloadFor(key, payloadSize)));
    EXPECT_LE(cache.stats().totalBytes, bound) << i;
  }
  // The newest entry always survives.
  EXPECT_TRUE(cache.lookup(keyFor("lru-59")).hit());
}

TEST_F(DiskCacheTest, ClearRemovesEntriesOnly) {
  DiskCache cache(options());
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(cache.store(keyFor("clear-" + std::to_string(i)), "payload"));
  std::string shard = std::string(
      llvm::sys::path::parent_path(cache.entryPath(keyFor("clear-0"))));
  std::string other = std::string(root) + "/notes.txt";
  std::string otherInShard = shard + "/notes.bin";
  writeFile(other, "keep me");
  writeFile(otherInShard, "keep me too");
  // A crashed writer's temporary: removed once stale, kept while fresh.
  std::string key = keyFor("clear-0");
  std::string staleTemp = shard + "/" + key + ".123.abcdef01.tmp";
  std::string freshTemp = shard + "/" + key + ".124.abcdef02.tmp";
  writeFile(staleTemp, "partial");
  writeFile(freshTemp, "partial");
  {
    int fd;
    ASSERT_FALSE(fs::openFileForWrite(staleTemp, fd, fs::CD_OpenExisting));
    EXPECT_FALSE(fs::setLastAccessAndModificationTime(
        fd, std::chrono::time_point_cast<std::chrono::nanoseconds>(
                std::chrono::system_clock::now() - std::chrono::hours(3))));
    ::close(fd);
  }

  EXPECT_EQ(cache.stats().entries, 5u);
  CacheClearResult cleared = cache.clear();
  EXPECT_EQ(cleared.entries, 5u);
  EXPECT_EQ(cleared.bytes, 5 * (40 + 64 + 7u));
  EXPECT_TRUE(cleared.warning.empty()) << cleared.warning;
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.lookup(key).miss, CacheMiss::Absent);
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(otherInShard));
  EXPECT_FALSE(fs::exists(staleTemp));
  EXPECT_TRUE(fs::exists(freshTemp));

  // Clearing an empty or absent cache is fine.
  EXPECT_EQ(cache.clear().entries, 0u);
  DiskCacheOptions absent = options();
  absent.directory = std::string(root) + "/does-not-exist";
  DiskCache empty(absent);
  CacheClearResult none = empty.clear();
  EXPECT_EQ(none.entries, 0u);
  EXPECT_TRUE(none.warning.empty()) << none.warning;
  EXPECT_EQ(empty.stats().entries, 0u);
}

TEST_F(DiskCacheTest, EmptyPayload) {
  DiskCache cache(options());
  std::string key = keyFor("empty");
  ASSERT_TRUE(cache.store(key, ""));
  CacheLookup found = cache.lookup(key);
  ASSERT_TRUE(found.hit()) << found.reason;
  EXPECT_TRUE(found.payload.empty());
}

TEST_F(DiskCacheTest, LargePayload) {
  DiskCache cache(options());
  std::string key = keyFor("large");
  std::string payload = payloadFor("large", size_t(64) << 20);
  CacheStoreStatus stored = cache.store(key, payload);
  ASSERT_TRUE(stored) << stored.warning;
  CacheLookup found = cache.lookup(key);
  ASSERT_TRUE(found.hit()) << found.reason;
  EXPECT_TRUE(found.payload == payload); // no 64 MiB diff on failure
}

/// 8 threads store and look up shared and private keys; with a small bound,
/// eviction runs concurrently with both.
void hammer(DiskCache &cache) {
  constexpr int kThreads = 8;
  constexpr int kIterations = 150;
  std::vector<std::string> shared;
  for (int i = 0; i < 12; ++i)
    shared.push_back(keyFor("shared-" + std::to_string(i)));
  std::atomic<int> mismatches{0};
  std::atomic<int> failedStores{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        std::string key = (i % 3 == 0) ? keyFor("private-" + std::to_string(t) +
                                                "-" + std::to_string(i % 12))
                                       : shared[(i * 7 + t) % shared.size()];
        std::string expected = payloadFor(key, 64 + (key[0] % 16) * 257);
        CacheLookup found = cache.lookup(key);
        if (found.hit() && found.payload != expected)
          ++mismatches;
        if (!found.hit() && found.miss != CacheMiss::Absent)
          ++mismatches; // torn or otherwise unreadable entry
        if (!found.hit() && !cache.store(key, expected))
          ++failedStores;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(failedStores.load(), 0);
  DiskCacheCounters counters = cache.counters();
  EXPECT_EQ(counters.hits + counters.missesAbsent,
            uint64_t(kThreads) * kIterations);
  EXPECT_EQ(counters.missesCorrupt, 0u);
}

TEST_F(DiskCacheTest, ConcurrentThreads) {
  DiskCache cache(options());
  hammer(cache);
  EXPECT_GT(cache.counters().hits, 0u);
  EXPECT_LE(cache.stats().entries, 12u + 8 * 12);
}

TEST_F(DiskCacheTest, ConcurrentThreadsWithEviction) {
  const uint64_t bound = 20000;
  DiskCache cache(options(bound));
  hammer(cache);
  EXPECT_GT(cache.counters().evictions, 0u);
  EXPECT_LE(cache.stats().totalBytes, bound + 8 * 4200u);
}

/// Sets (or unsets, for a null value) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = ::getenv(name))
      saved = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved)
      ::setenv(name, saved->c_str(), 1);
    else
      ::unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> saved;
};

TEST(DiskCacheOptionsTest, DirectoryFromTheEnvironment) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv dir("KFUSE_CACHE_DIR", "/scratch/kernels");
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(DiskCacheOptions::fromEnvironment().directory,
              "/scratch/kernels");
  }
  {
    ScopedEnv dir("KFUSE_CACHE_DIR", "");
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(DiskCacheOptions::fromEnvironment().directory, "/xdg/kfuse");
  }
  {
    ScopedEnv dir("KFUSE_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");
    EXPECT_EQ(DiskCacheOptions::fromEnvironment().directory,
              "/home/someone/.cache/kfuse");
  }
  {
    ScopedEnv dir("KFUSE_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv noHome("HOME", nullptr);
    EXPECT_EQ(DiskCacheOptions::fromEnvironment().directory, "");
  }
}

TEST(DiskCacheOptionsTest, BoundFromTheEnvironment) {
  auto bound = [](const char *value, std::string *warning = nullptr) {
    ScopedEnv env("KFUSE_CACHE_MAX_BYTES", value);
    return DiskCacheOptions::fromEnvironment(warning).maxBytes;
  };
  EXPECT_EQ(bound(nullptr), DiskCacheOptions::kDefaultMaxBytes);
  EXPECT_EQ(bound("1000"), 1000u);
  EXPECT_EQ(bound("512M"), uint64_t(512) << 20);
  EXPECT_EQ(bound("2GiB"), uint64_t(2) << 30);
  EXPECT_EQ(bound("64k"), uint64_t(64) << 10);
  EXPECT_EQ(bound("9223372036854775807"), uint64_t(INT64_MAX));
  // Past 2^63 - 1 a size no longer reads back as a signed 64-bit number.
  for (const char *bad :
       {"lots", "-5", "0", "12X", "99999999999T", "18446744073709551615",
        "9223372036854775808", "8388608T"}) {
    std::string warning;
    EXPECT_EQ(bound(bad, &warning), DiskCacheOptions::kDefaultMaxBytes) << bad;
    EXPECT_NE(warning.find("ignoring KFUSE_CACHE_MAX_BYTES"), std::string::npos)
        << bad;
  }
}

} // namespace

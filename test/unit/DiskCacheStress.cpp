//===- DiskCacheStress.cpp - one of many processes sharing a DiskCache ----===//
//
//   kfuse-disk-cache-stress DIR [--rounds=N] [--max-bytes=N]
//                               [--scan-every=N]
//
// Stores and reads back 20 keys, each with a payload computed from the key
// alone, in a cache at DIR that other processes use at the same time. Every
// payload read must equal the computed one, and no read may find a corrupt
// entry (a torn write would show as one). Prints one line per key that
// depends only on the payloads, so every process prints the same thing, and
// exits 1 on the first problem. Counters go to stderr.
//
//===----------------------------------------------------------------------===//

#include "runtime/DiskCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

using namespace kfuse;

namespace {

constexpr int kKeys = 20;
constexpr const char *kUsage = "usage: kfuse-disk-cache-stress DIR "
                               "[--rounds=N] [--max-bytes=N] "
                               "[--scan-every=N]\n";

std::string keyFor(int index) {
  std::string name = "kfuse-disk-cache-stress/" + std::to_string(index);
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(name)),
                     /*LowerCase=*/true);
}

/// Sizes from empty to 2 MiB, so that a torn write has room to show.
size_t sizeFor(int index) {
  if (index == 0)
    return 0;
  if (index == kKeys - 1)
    return size_t(2) << 20;
  return size_t(index) * 7919 % 65536 + 1;
}

std::string payloadFor(int index) {
  std::string bytes(sizeFor(index), '\0');
  uint64_t state = 0x9e3779b97f4a7c15ull * uint64_t(index + 1);
  for (char &byte : bytes) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    byte = static_cast<char>(state >> 56);
  }
  return bytes;
}

bool parseFlag(llvm::StringRef arg, llvm::StringRef name, uint64_t &value) {
  if (!arg.consume_front(name))
    return false;
  if (arg.getAsInteger(10, value)) {
    llvm::outs() << "error: bad value for " << name << arg << "\n";
    std::exit(2);
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::string directory;
  uint64_t rounds = 5;
  uint64_t maxBytes = DiskCacheOptions::kDefaultMaxBytes;
  uint64_t scanEvery = DiskCacheOptions().storesBetweenScans;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (parseFlag(arg, "--rounds=", rounds) ||
        parseFlag(arg, "--max-bytes=", maxBytes) ||
        parseFlag(arg, "--scan-every=", scanEvery))
      continue;
    if (arg.starts_with("-") || !directory.empty()) {
      llvm::outs() << kUsage;
      return 2;
    }
    directory = arg.str();
  }
  if (directory.empty()) {
    llvm::outs() << kUsage;
    return 2;
  }

  DiskCacheOptions options;
  options.directory = directory;
  options.maxBytes = maxBytes;
  options.touchInterval = std::chrono::seconds(0); // touch on every hit
  options.storesBetweenScans = static_cast<unsigned>(scanEvery);
  DiskCache cache(options);

  std::vector<std::string> keys, payloads;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back(keyFor(i));
    payloads.push_back(payloadFor(i));
  }

  // Each process visits the keys in its own order.
  std::mt19937 random(static_cast<unsigned>(::getpid()));
  std::vector<int> order(kKeys);
  for (int i = 0; i < kKeys; ++i)
    order[i] = i;

  auto visit = [&](int index) {
    CacheLookup found = cache.lookup(keys[index]);
    if (found.hit()) {
      if (found.payload != payloads[index]) {
        llvm::outs() << "error: key " << index << ": read "
                     << found.payload.size() << " bytes that differ from the "
                     << payloads[index].size() << " stored\n";
        return false;
      }
      return true;
    }
    if (found.miss != CacheMiss::Absent) {
      llvm::outs() << "error: key " << index << ": " << found.reason << "\n";
      return false;
    }
    CacheStoreStatus stored = cache.store(keys[index], payloads[index]);
    if (!stored) {
      llvm::outs() << "error: key " << index << ": " << stored.warning << "\n";
      return false;
    }
    return true;
  };

  for (uint64_t round = 0; round < rounds; ++round) {
    std::shuffle(order.begin(), order.end(), random);
    for (int index : order)
      if (!visit(index))
        return 1;
  }
  // Read everything back once more (evicted keys are stored again).
  for (int index = 0; index < kKeys; ++index)
    if (!visit(index))
      return 1;

  for (int index = 0; index < kKeys; ++index)
    llvm::outs() << "key " << index << " " << keys[index].substr(0, 16)
                 << " size " << payloads[index].size() << " xxh3 "
                 << llvm::format_hex_no_prefix(
                        llvm::xxh3_64bits(payloads[index]), 16)
                 << "\n";
  llvm::outs() << "verified " << kKeys << " keys\n";

  DiskCacheCounters counters = cache.counters();
  llvm::errs() << "hits " << counters.hits << " absent "
               << counters.missesAbsent << " corrupt " << counters.missesCorrupt
               << " stores " << counters.stores << " evictions "
               << counters.evictions << "\n";
  return 0;
}

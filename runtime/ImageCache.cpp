//===- ImageCache.cpp - NVRTC output through the on-disk cache ------------===//

#include "runtime/ImageCache.h"
#include "runtime/CacheKey.h"
#include "runtime/Log.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace kfuse {

/// Bumped whenever the code generators change what a source means to the
/// runtime (launch ABI), or this encoding changes.
static constexpr llvm::StringLiteral kImageFormat = "kfuse-image-1";

const char *cacheSourceName(CacheSource source) {
  switch (source) {
  case CacheSource::miss:
    return "miss";
  case CacheSource::hitMemory:
    return "hit-memory";
  case CacheSource::hitDisk:
    return "hit-disk";
  }
  return "miss";
}

double compileMsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

std::string imageCacheKey(llvm::StringRef source, const NvrtcOptions &options,
                          int driverVersion) {
  CacheKeyHasher hash;
  hash.field(kImageFormat);
  hash.field(source);
  hash.field(options.ptxOnly ? "ptx" : "cubin");
  hash.nvrtcFields(options);
  hash.field(std::to_string(driverVersion));
  return hash.hex();
}

DiskCache *processDiskCache() {
  static std::once_flag once;
  static DiskCache *cache = nullptr;
  std::call_once(once, [] {
    const char *enabled = std::getenv("KFUSE_CACHE");
    if (enabled && llvm::StringRef(enabled) == "0")
      return;
    std::string warning;
    DiskCacheOptions options = DiskCacheOptions::fromEnvironment(&warning);
    if (!warning.empty())
      logWarning(warning);
    // Said once here rather than as a failed lookup at every compile.
    if (options.directory.empty()) {
      logWarning("no kernel cache directory (set KFUSE_CACHE_DIR, "
                 "XDG_CACHE_HOME or HOME): compiling in memory only");
      return;
    }
    // Never destroyed: kernels may compile during static destruction.
    cache = new DiskCache(std::move(options));
  });
  return cache;
}

static void appendString(std::string &out, llvm::StringRef text) {
  char size[8];
  llvm::support::endian::write64le(size, text.size());
  out.append(size, sizeof(size));
  out.append(text.data(), text.size());
}

static bool readString(llvm::StringRef &in, std::string &text) {
  if (in.size() < 8)
    return false;
  uint64_t size = llvm::support::endian::read64le(in.data());
  in = in.drop_front(8);
  if (size > in.size())
    return false;
  text = in.take_front(size).str();
  in = in.drop_front(size);
  return true;
}

std::string encodeImage(const NvrtcResult &nvrtc) {
  std::string out;
  appendString(out, kImageFormat);
  appendString(out, nvrtc.ptx);
  appendString(out, nvrtc.cubin);
  appendString(out, nvrtc.log);
  appendString(out, llvm::join(nvrtc.options, "\n"));
  return out;
}

llvm::Expected<NvrtcResult> decodeImage(llvm::StringRef bytes) {
  NvrtcResult nvrtc;
  std::string format, options;
  if (!readString(bytes, format) || format != kImageFormat ||
      !readString(bytes, nvrtc.ptx) || !readString(bytes, nvrtc.cubin) ||
      !readString(bytes, nvrtc.log) || !readString(bytes, options) ||
      !bytes.empty())
    return llvm::createStringError("not a " + kImageFormat.str() + " entry");
  if (!options.empty())
    for (llvm::StringRef option : llvm::split(options, '\n'))
      nvrtc.options.push_back(option.str());
  nvrtc.resources = parsePtxasLog(nvrtc.log);
  return nvrtc;
}

llvm::Expected<CompiledImage>
compileImage(const std::string &source, const std::string &programName,
             const NvrtcOptions &options, int driverVersion, DiskCache *cache) {
  using Clock = std::chrono::steady_clock;
  CompiledImage image;
  image.key = imageCacheKey(source, options, driverVersion);
  const std::string &key = image.key;
  if (cache) {
    auto start = Clock::now();
    CacheLookup found = cache->lookup(key);
    if (found.hit()) {
      llvm::Expected<NvrtcResult> decoded = decodeImage(found.payload);
      if (decoded &&
          (options.ptxOnly ? !decoded->ptx.empty() : !decoded->cubin.empty())) {
        image.nvrtc = std::move(*decoded);
        image.source = CacheSource::hitDisk;
        image.diskMs = compileMsSince(start);
        return image;
      }
      image.warning = "kernel cache entry " + cache->entryPath(key) + ": " +
                      (decoded ? std::string("holds no image")
                               : llvm::toString(decoded.takeError())) +
                      "; recompiling";
    } else if (found.miss != CacheMiss::Absent) {
      image.warning = found.reason;
    }
    image.diskMs = compileMsSince(start);
  }
  if (!image.warning.empty())
    logWarning(image.warning);
  llvm::Expected<NvrtcResult> nvrtc =
      compileWithNvrtc(source, programName, options);
  if (!nvrtc)
    return nvrtc.takeError();
  image.nvrtc = std::move(*nvrtc);
  if (cache) {
    auto start = Clock::now();
    CacheStoreStatus stored = cache->store(key, encodeImage(image.nvrtc));
    if (!stored && image.warning.empty()) {
      image.warning = stored.warning;
      logWarning(image.warning);
    }
    image.diskMs += compileMsSince(start);
  }
  return image;
}

} // namespace kfuse

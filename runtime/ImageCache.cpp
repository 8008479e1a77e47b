//===- ImageCache.cpp - NVRTC output through the on-disk cache ------------===//

#include "runtime/ImageCache.h"
#include "runtime/CacheKey.h"
#include "runtime/Log.h"
#include "runtime/NvJitLink.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace kfuse {

/// Bumped whenever the code generators change what a source means to the
/// runtime (launch ABI), or this encoding changes.
static constexpr llvm::StringLiteral kImageFormat = "kfuse-image-2";

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
  appendString(out, nvrtc.compiler);
  return out;
}

llvm::Expected<NvrtcResult> decodeImage(llvm::StringRef bytes) {
  NvrtcResult nvrtc;
  std::string format, options;
  if (!readString(bytes, format) || format != kImageFormat ||
      !readString(bytes, nvrtc.ptx) || !readString(bytes, nvrtc.cubin) ||
      !readString(bytes, nvrtc.log) || !readString(bytes, options) ||
      !readString(bytes, nvrtc.compiler) || !bytes.empty())
    return llvm::createStringError("not a " + kImageFormat.str() + " entry");
  if (!options.empty())
    for (llvm::StringRef option : llvm::split(options, '\n'))
      nvrtc.options.push_back(option.str());
  nvrtc.resources = parsePtxasLog(nvrtc.log);
  return nvrtc;
}

std::optional<CompiledImage> lookupImage(DiskCache &cache, llvm::StringRef key,
                                         bool wantCubin, std::string &warning) {
  auto start = std::chrono::steady_clock::now();
  CacheLookup found = cache.lookup(key);
  if (found.hit()) {
    llvm::Expected<NvrtcResult> decoded = decodeImage(found.payload);
    if (decoded &&
        (wantCubin ? !decoded->cubin.empty() : !decoded->ptx.empty())) {
      CompiledImage image;
      image.nvrtc = std::move(*decoded);
      image.key = key.str();
      image.source = CacheSource::hitDisk;
      image.diskMs = compileMsSince(start);
      image.onDisk = true;
      return image;
    }
    warning = "kernel cache entry " + cache.entryPath(key) + ": " +
              (decoded ? std::string("holds no image")
                       : llvm::toString(decoded.takeError())) +
              "; recompiling";
  } else if (found.miss != CacheMiss::Absent) {
    warning = found.reason;
  }
  return std::nullopt;
}

/// The image under `key`: read from `cache` where it holds one with what
/// `wantCubin` needs, else made by `compile` and stored.
static llvm::Expected<CompiledImage>
cachedCompile(std::string imageKey, bool wantCubin, DiskCache *cache,
              llvm::function_ref<llvm::Expected<NvrtcResult>()> compile) {
  using Clock = std::chrono::steady_clock;
  CompiledImage image;
  image.key = std::move(imageKey);
  const std::string &key = image.key;
  if (cache) {
    auto start = Clock::now();
    if (std::optional<CompiledImage> found =
            lookupImage(*cache, key, wantCubin, image.warning))
      return std::move(*found);
    image.diskMs = compileMsSince(start);
  }
  if (!image.warning.empty())
    logWarning(image.warning);
  llvm::Expected<NvrtcResult> compiled = compile();
  if (!compiled)
    return compiled.takeError();
  image.nvrtc = std::move(*compiled);
  if (cache) {
    auto start = Clock::now();
    CacheStoreStatus stored = cache->store(key, encodeImage(image.nvrtc));
    image.onDisk = stored.stored;
    if (!stored && image.warning.empty()) {
      image.warning = stored.warning;
      logWarning(image.warning);
    }
    image.diskMs += compileMsSince(start);
  }
  return image;
}

llvm::Expected<CompiledImage>
compileImage(const std::string &source, const std::string &programName,
             const NvrtcOptions &options, int driverVersion, DiskCache *cache) {
  return cachedCompile(
      imageCacheKey(source, options, driverVersion), !options.ptxOnly, cache,
      [&] { return compileWithNvrtc(source, programName, options); });
}

std::string ptxImageCacheKey(llvm::StringRef ptx, int arch, int driverVersion,
                             PtxCompiler compiler) {
  CacheKeyHasher hash;
  hash.field(kImageFormat);
  hash.field("direct-ptx");
  hash.field(ptx);
  // The driver's image is the PTX itself (its .target names the arch): no
  // compiler or driver shaped it.
  if (compiler == PtxCompiler::driverAtLoad) {
    hash.field("driver-jit");
    return hash.hex();
  }
  // The toolkit's version through NVRTC's, which is loaded already: asking
  // nvJitLink would load it (about 50 ms) on every disk hit. nvJitLink
  // ships with NVRTC, and its major version is the entry points'.
  hash.field("nvjitlink-13");
  hash.field(nvrtcVersion());
  hash.field(llvm::join(nvJitLinkCommandLine(arch), "\n"));
  hash.field(std::to_string(driverVersion));
  return hash.hex();
}

llvm::Expected<CompiledImage>
compilePlanImage(const PlanSources &sources, const std::string &programName,
                 const NvrtcOptions &options, CodegenMode mode,
                 PtxCompiler compiler, int driverVersion, DiskCache *cache) {
  std::string notPtx; // why the direct PTX is not used
  if (mode == CodegenMode::cuda)
    notPtx = "codegen cuda";
  else if (sources.ptx.empty())
    notPtx = sources.ptxUnsupported.empty()
                 ? std::string("the plan has no direct PTX")
                 : sources.ptxUnsupported;
  if (notPtx.empty()) {
    llvm::Expected<int> arch = validateArch(options.arch);
    if (!arch)
      return arch.takeError();
    std::string key =
        ptxImageCacheKey(sources.ptx, *arch, driverVersion, compiler);
    // PTX is what was asked for: nothing to compile.
    if (options.ptxOnly) {
      CompiledImage image;
      image.nvrtc.ptx = sources.ptx;
      image.nvrtc.compiler = "direct";
      image.key = std::move(key);
      return image;
    }
    // On disk, the PTX lets a plan-cache hit skip the emitter.
    if (compiler == PtxCompiler::driverAtLoad)
      return cachedCompile(std::move(key), /*wantCubin=*/false, cache, [&] {
        NvrtcResult image;
        image.ptx = sources.ptx;
        image.compiler = kDriverCompiler.str();
        return image;
      });
    // A disk hit needs no nvJitLink; a miss loads it.
    llvm::Expected<CompiledImage> image =
        cachedCompile(std::move(key), /*wantCubin=*/true, cache,
                      [&] { return compileWithNvJitLink(sources.ptx, *arch); });
    if (image || mode == CodegenMode::ptx)
      return image;
    // The CUDA source is the fallback that always exists: quietly where
    // nvJitLink is absent, with a warning where it failed.
    std::string error = llvm::toString(image.takeError());
    if (llvm::errorToBool(loadNvJitLink()))
      logInfo(programName +
              ": no nvJitLink, compiling the CUDA source: " + error);
    else
      logWarning(programName + ": linking the direct PTX failed, compiling " +
                 "the CUDA source instead: " + error);
  } else if (mode == CodegenMode::ptx) {
    return llvm::createStringError("codegen ptx: no direct PTX for " +
                                   programName + ": " + notPtx);
  }
  return compileImage(sources.cuda, programName, options, driverVersion, cache);
}

} // namespace kfuse

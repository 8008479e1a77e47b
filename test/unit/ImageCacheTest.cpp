//===- ImageCacheTest.cpp - NVRTC output through the disk cache -----------===//

#include "runtime/ImageCache.h"
#include "DiskCacheTestSupport.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <chrono>

using namespace kfuse;

namespace {

constexpr const char *kSource =
    "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n";

class ImageCacheTest : public TempDiskCacheTest {
protected:
  ImageCacheTest() : TempDiskCacheTest("kfuse-image-cache") {}
  NvrtcOptions options;
};

TEST_F(ImageCacheTest, EncodingRoundTrips) {
  NvrtcResult nvrtc;
  nvrtc.ptx = "ptx text";
  nvrtc.cubin = std::string("\x7f"
                            "ELF\0\1\2",
                            7);
  nvrtc.log = "ptxas info    : Used 12 registers, used 0 barriers";
  nvrtc.options = {"-arch=sm_90", "--ptxas-options=-v"};
  llvm::Expected<NvrtcResult> decoded = decodeImage(encodeImage(nvrtc));
  ASSERT_TRUE(bool(decoded)) << llvm::toString(decoded.takeError());
  EXPECT_EQ(decoded->ptx, nvrtc.ptx);
  EXPECT_EQ(decoded->cubin, nvrtc.cubin);
  EXPECT_EQ(decoded->log, nvrtc.log);
  EXPECT_EQ(decoded->options, nvrtc.options);
  EXPECT_EQ(decoded->compileMs, 0);
}

TEST_F(ImageCacheTest, DecodingRejectsOtherBytes) {
  std::string bytes = encodeImage(NvrtcResult());
  std::string longer = bytes + "x";
  for (llvm::StringRef bad :
       {llvm::StringRef(""), llvm::StringRef("junk"),
        llvm::StringRef(bytes).drop_back(1), llvm::StringRef(longer)}) {
    llvm::Expected<NvrtcResult> decoded = decodeImage(bad);
    ASSERT_FALSE(bool(decoded)) << "accepted " << bad.size() << " bytes";
    EXPECT_NE(llvm::toString(decoded.takeError()).find("kfuse-image-2"),
              std::string::npos);
  }
}

TEST_F(ImageCacheTest, KeyCoversSourceArchAndDriver) {
  std::string key = imageCacheKey(kSource, options, 13000);
  EXPECT_TRUE(DiskCache::isValidKey(key));
  EXPECT_EQ(key, imageCacheKey(kSource, options, 13000));
  EXPECT_NE(key, imageCacheKey(std::string(kSource) + " ", options, 13000));
  EXPECT_NE(key, imageCacheKey(kSource, options, 12090));
  NvrtcOptions other = options;
  other.arch = "sm_80";
  EXPECT_NE(key, imageCacheKey(kSource, other, 13000));
  other = options;
  other.ptxOnly = true;
  EXPECT_NE(key, imageCacheKey(kSource, other, 13000));
}

TEST_F(ImageCacheTest, SecondCompileIsADiskHitWithTheSameCubin) {
  llvm::Expected<CompiledImage> cold =
      compileImage(kSource, "k.cu", options, 0, cache.get());
  ASSERT_TRUE(bool(cold)) << llvm::toString(cold.takeError());
  EXPECT_EQ(cold->source, CacheSource::miss);
  EXPECT_TRUE(cold->warning.empty()) << cold->warning;
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<CompiledImage> warm =
      compileImage(kSource, "k.cu", options, 0, cache.get());
  double warmMs = compileMsSince(start);
  ASSERT_TRUE(bool(warm)) << llvm::toString(warm.takeError());
  EXPECT_EQ(warm->source, CacheSource::hitDisk);
  EXPECT_EQ(warm->nvrtc.cubin, cold->nvrtc.cubin);
  EXPECT_EQ(warm->nvrtc.ptx, cold->nvrtc.ptx);
  ASSERT_EQ(warm->nvrtc.resources.size(), 1u);
  EXPECT_EQ(warm->nvrtc.resources[0].name, "k");
  // A hit reads one file: well under the compile it saves.
  EXPECT_LT(warmMs, cold->nvrtc.compileMs / 5);
}

TEST_F(ImageCacheTest, AnEntryOfAnotherFormatIsRecompiledAndReplaced) {
  std::string key = imageCacheKey(kSource, options, 0);
  ASSERT_TRUE(bool(cache->store(key, "not an image")));
  llvm::Expected<CompiledImage> image =
      compileImage(kSource, "k.cu", options, 0, cache.get());
  ASSERT_TRUE(bool(image)) << llvm::toString(image.takeError());
  EXPECT_EQ(image->source, CacheSource::miss);
  EXPECT_NE(image->warning.find("recompiling"), std::string::npos)
      << image->warning;
  EXPECT_FALSE(image->nvrtc.cubin.empty());
  image = compileImage(kSource, "k.cu", options, 0, cache.get());
  ASSERT_TRUE(bool(image)) << llvm::toString(image.takeError());
  EXPECT_EQ(image->source, CacheSource::hitDisk);
}

TEST_F(ImageCacheTest, NoCacheCompilesAndNvrtcErrorsStayErrors) {
  llvm::Expected<CompiledImage> image =
      compileImage(kSource, "k.cu", options, 0, nullptr);
  ASSERT_TRUE(bool(image)) << llvm::toString(image.takeError());
  EXPECT_EQ(image->source, CacheSource::miss);
  llvm::Expected<CompiledImage> broken =
      compileImage("this is not CUDA", "broken.cu", options, 0, cache.get());
  ASSERT_FALSE(bool(broken));
  EXPECT_NE(llvm::toString(broken.takeError()).find("broken.cu"),
            std::string::npos);
  EXPECT_EQ(cache->stats().entries, 0u); // a failed compile stores nothing
}

} // namespace

namespace {

/// The PTX NVRTC makes of kSource, as a plan's direct PTX would be.
std::string trivialPtx() {
  NvrtcOptions ptxOptions;
  ptxOptions.ptxOnly = true;
  llvm::Expected<NvrtcResult> compiled =
      compileWithNvrtc(kSource, "k.cu", ptxOptions);
  EXPECT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  return compiled ? compiled->ptx : "";
}

TEST_F(ImageCacheTest, DirectPtxIsLinkedAndCached) {
  if (llvm::errorToBool(loadNvJitLink()))
    GTEST_SKIP() << "nvJitLink is not loadable here";
  std::string ptx = trivialPtx(), reason;
  PlanSources sources{kSource, ptx, reason};
  llvm::Expected<CompiledImage> cold =
      compilePlanImage(sources, "k.cu", options, CodegenMode::automatic,
                       PtxCompiler::nvJitLink, 0, cache.get());
  ASSERT_TRUE(bool(cold)) << llvm::toString(cold.takeError());
  EXPECT_EQ(cold->nvrtc.compiler, "nvjitlink");
  EXPECT_EQ(cold->source, CacheSource::miss);
  ASSERT_EQ(cold->nvrtc.resources.size(), 1u) << cold->nvrtc.log;
  EXPECT_EQ(cold->nvrtc.resources[0].name, "k");
  llvm::Expected<CompiledImage> warm =
      compilePlanImage(sources, "k.cu", options, CodegenMode::ptx,
                       PtxCompiler::nvJitLink, 0, cache.get());
  ASSERT_TRUE(bool(warm)) << llvm::toString(warm.takeError());
  EXPECT_EQ(warm->source, CacheSource::hitDisk);
  EXPECT_EQ(warm->nvrtc.cubin, cold->nvrtc.cubin);
  EXPECT_EQ(warm->nvrtc.compiler, "nvjitlink");
  // The CUDA mode compiles the source under another key.
  llvm::Expected<CompiledImage> cuda =
      compilePlanImage(sources, "k.cu", options, CodegenMode::cuda,
                       PtxCompiler::nvJitLink, 0, cache.get());
  ASSERT_TRUE(bool(cuda)) << llvm::toString(cuda.takeError());
  EXPECT_EQ(cuda->nvrtc.compiler, "nvrtc");
  EXPECT_NE(cuda->key, cold->key);
}

TEST_F(ImageCacheTest, DirectPtxForTheDriverIsThePtxAndCached) {
  // The driver compiles it when the module loads: no nvJitLink, no cubin.
  std::string ptx = trivialPtx(), reason;
  PlanSources sources{kSource, ptx, reason};
  llvm::Expected<CompiledImage> cold =
      compilePlanImage(sources, "k.cu", options, CodegenMode::automatic,
                       PtxCompiler::driverAtLoad, 0, cache.get());
  ASSERT_TRUE(bool(cold)) << llvm::toString(cold.takeError());
  EXPECT_EQ(cold->nvrtc.compiler, "driver");
  EXPECT_EQ(cold->nvrtc.ptx, ptx);
  EXPECT_TRUE(cold->nvrtc.cubin.empty());
  EXPECT_EQ(cold->source, CacheSource::miss);
  EXPECT_TRUE(cold->onDisk);
  llvm::Expected<CompiledImage> warm =
      compilePlanImage(sources, "k.cu", options, CodegenMode::ptx,
                       PtxCompiler::driverAtLoad, 0, cache.get());
  ASSERT_TRUE(bool(warm)) << llvm::toString(warm.takeError());
  EXPECT_EQ(warm->source, CacheSource::hitDisk);
  EXPECT_EQ(warm->nvrtc.ptx, ptx);
  EXPECT_EQ(warm->nvrtc.compiler, "driver");
  // nvJitLink's cubin of the same PTX is another image.
  EXPECT_NE(ptxImageCacheKey(ptx, 90, 0, PtxCompiler::driverAtLoad),
            ptxImageCacheKey(ptx, 90, 0, PtxCompiler::nvJitLink));
  // The image is the PTX: nothing else shapes it.
  EXPECT_EQ(ptxImageCacheKey(ptx, 90, 0, PtxCompiler::driverAtLoad),
            ptxImageCacheKey(ptx, 90, 13000, PtxCompiler::driverAtLoad));
}

TEST_F(ImageCacheTest, BrokenDirectPtxFallsBackInAutoAndFailsInPtxMode) {
  if (llvm::errorToBool(loadNvJitLink()))
    GTEST_SKIP() << "nvJitLink is not loadable here";
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\nbogus;\n";
  std::string reason;
  PlanSources sources{kSource, ptx, reason};
  llvm::Expected<CompiledImage> automatic =
      compilePlanImage(sources, "k.cu", options, CodegenMode::automatic,
                       PtxCompiler::nvJitLink, 0, cache.get());
  ASSERT_TRUE(bool(automatic)) << llvm::toString(automatic.takeError());
  EXPECT_EQ(automatic->nvrtc.compiler, "nvrtc");
  llvm::Expected<CompiledImage> strict =
      compilePlanImage(sources, "k.cu", options, CodegenMode::ptx,
                       PtxCompiler::nvJitLink, 0, nullptr);
  ASSERT_FALSE(bool(strict));
  EXPECT_NE(
      llvm::toString(strict.takeError()).find("Parsing error near 'bogus'"),
      std::string::npos);
}

TEST_F(ImageCacheTest, PtxModeWithoutPtxSaysWhy) {
  std::string ptx, reason = "kernel k at a.mlir:1:1: a temporary buffer";
  PlanSources sources{kSource, ptx, reason};
  llvm::Expected<CompiledImage> strict =
      compilePlanImage(sources, "k.cu", options, CodegenMode::ptx,
                       PtxCompiler::nvJitLink, 0, cache.get());
  ASSERT_FALSE(bool(strict));
  EXPECT_EQ(llvm::toString(strict.takeError()),
            "codegen ptx: no direct PTX for k.cu: kernel k at a.mlir:1:1: a "
            "temporary buffer");
  llvm::Expected<CompiledImage> automatic =
      compilePlanImage(sources, "k.cu", options, CodegenMode::automatic,
                       PtxCompiler::nvJitLink, 0, cache.get());
  ASSERT_TRUE(bool(automatic)) << llvm::toString(automatic.takeError());
  EXPECT_EQ(automatic->nvrtc.compiler, "nvrtc");
}

TEST(CodegenModeTest, AutoCompilesPlansThroughNvrtcOnlyForNvJitLink) {
  // nvJitLink's relocatable image of a plan steps slower: for a cubin file
  // auto takes NVRTC's for plans and the PTX for single-tensor kernels; the
  // runtime's driver compiles every PTX whole; ptx and cuda are asked for.
  CodegenMode before = processCodegenMode();
  const PtxCompiler link = PtxCompiler::nvJitLink,
                    driver = PtxCompiler::driverAtLoad;
  setProcessCodegenMode(CodegenMode::automatic);
  EXPECT_EQ(codegenModeFor(/*multiTensor=*/true, link), CodegenMode::cuda);
  EXPECT_EQ(codegenModeFor(/*multiTensor=*/false, link),
            CodegenMode::automatic);
  EXPECT_EQ(codegenModeFor(/*multiTensor=*/true, driver),
            CodegenMode::automatic);
  setProcessCodegenMode(CodegenMode::ptx);
  EXPECT_EQ(codegenModeFor(/*multiTensor=*/true, link), CodegenMode::ptx);
  setProcessCodegenMode(CodegenMode::cuda);
  EXPECT_EQ(codegenModeFor(/*multiTensor=*/false, driver), CodegenMode::cuda);
  setProcessCodegenMode(before);
}

TEST_F(ImageCacheTest, EncodingKeepsTheCompiler) {
  NvrtcResult nvrtc;
  nvrtc.compiler = "nvjitlink";
  llvm::Expected<NvrtcResult> decoded = decodeImage(encodeImage(nvrtc));
  ASSERT_TRUE(bool(decoded)) << llvm::toString(decoded.takeError());
  EXPECT_EQ(decoded->compiler, "nvjitlink");
}

} // namespace

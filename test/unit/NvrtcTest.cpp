//===- NvrtcTest.cpp - NVRTC compilation, no GPU needed -------------------===//

#include "runtime/Nvrtc.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

using namespace kfuse;

namespace {

const char *kScale = R"(
extern "C" __global__ void scale(float *data, float factor, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n)
    data[i] = data[i] * factor;
}
)";

NvrtcResult compileOrFail(const NvrtcOptions &options) {
  llvm::Expected<NvrtcResult> result =
      compileWithNvrtc(kScale, "scale.cu", options);
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError());
    return {};
  }
  return std::move(*result);
}

TEST(NvrtcTest, CubinForSm80AndSm90) {
  for (const char *arch : {"sm_80", "sm_90"}) {
    NvrtcOptions options;
    options.arch = arch;
    NvrtcResult result = compileOrFail(options);
    EXPECT_FALSE(result.cubin.empty()) << arch;
    EXPECT_NE(result.ptx.find(".entry scale"), std::string::npos) << arch;
    // ELF magic.
    ASSERT_GE(result.cubin.size(), 4u);
    EXPECT_EQ(result.cubin.substr(0, 4), "\x7f"
                                         "ELF");
    std::vector<std::string> expected = {"--std=c++17", "-default-device",
                                         std::string("-arch=") + arch,
                                         "--ptxas-options=-v"};
    // NVRTC >= 12.9 caches on disk when a driver is present; a hit would
    // skip ptxas and its report.
    if (result.options.size() == 5)
      expected.push_back("--no-cache");
    EXPECT_EQ(result.options, expected);
    EXPECT_NE(result.log.find("scale"), std::string::npos) << result.log;
  }
}

TEST(NvrtcTest, PtxOnly) {
  NvrtcOptions options;
  options.arch = "sm_90";
  options.ptxOnly = true;
  NvrtcResult result = compileOrFail(options);
  EXPECT_TRUE(result.cubin.empty());
  EXPECT_NE(result.ptx.find(".target sm_90"), std::string::npos);
  EXPECT_EQ(result.options[2], "-arch=compute_90");
  EXPECT_TRUE(result.resources.empty());
}

TEST(NvrtcTest, ResourcesParsed) {
  NvrtcOptions options;
  options.arch = "sm_90";
  NvrtcResult result = compileOrFail(options);
  ASSERT_EQ(result.resources.size(), 1u) << result.log;
  EXPECT_EQ(result.resources[0].name, "scale");
  EXPECT_GT(result.resources[0].registers, 0u);
  EXPECT_EQ(result.resources[0].spillStoreBytes, 0u);
  EXPECT_EQ(result.resources[0].spillLoadBytes, 0u);
}

TEST(NvrtcTest, ParsesPtxasLogWithSpills) {
  const char *log = "ptxas info    : 0 bytes gmem\n"
                    "ptxas info    : Compiling entry function 'a' for "
                    "'sm_90'\n"
                    "ptxas info    : Function properties for a\n"
                    "ptxas         .     24 bytes stack frame, 8 bytes spill "
                    "stores, 12 bytes spill loads\n"
                    "ptxas info    : Used 255 registers, used 0 barriers\n"
                    "ptxas info    : Compiling entry function 'b' for "
                    "'sm_90'\n"
                    "ptxas info    : Used 7 registers, 352 bytes cmem[0]\n";
  std::vector<KernelResources> kernels = parsePtxasLog(log);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "a");
  EXPECT_EQ(kernels[0].registers, 255u);
  EXPECT_EQ(kernels[0].stackBytes, 24u);
  EXPECT_EQ(kernels[0].spillStoreBytes, 8u);
  EXPECT_EQ(kernels[0].spillLoadBytes, 12u);
  EXPECT_EQ(kernels[1].name, "b");
  EXPECT_EQ(kernels[1].registers, 7u);
}

TEST(NvrtcTest, BadArch) {
  for (const char *arch : {"sm_xx", "sm_12", "compute_90", "sm_90q", ""}) {
    NvrtcOptions options;
    options.arch = arch;
    llvm::Expected<NvrtcResult> result =
        compileWithNvrtc(kScale, "scale.cu", options);
    ASSERT_FALSE(result) << arch;
    std::string message = llvm::toString(result.takeError());
    EXPECT_NE(message.find(std::string("unsupported arch '") + arch + "'"),
              std::string::npos)
        << message;
  }
}

TEST(NvrtcTest, SyntaxErrorCarriesLog) {
  NvrtcOptions options;
  options.arch = "sm_90";
  llvm::Expected<NvrtcResult> result = compileWithNvrtc(
      "extern \"C\" __global__ void broken(float *p) { p[0] = undeclared_x; }",
      "broken.cu", options);
  ASSERT_FALSE(result);
  std::string message = llvm::toString(result.takeError());
  EXPECT_NE(message.find("broken.cu"), std::string::npos) << message;
  EXPECT_NE(message.find("undeclared_x"), std::string::npos) << message;
}

TEST(NvrtcTest, VersionAndArchs) {
  EXPECT_NE(nvrtcVersion().find('.'), std::string::npos);
  std::vector<int> archs = nvrtcSupportedArchs();
  EXPECT_FALSE(archs.empty());
  EXPECT_TRUE(llvm::is_contained(archs, 90));
  llvm::Expected<int> sm90a = validateArch("sm_90a");
  ASSERT_TRUE(bool(sm90a)) << llvm::toString(sm90a.takeError());
  EXPECT_EQ(*sm90a, 90);
}

} // namespace

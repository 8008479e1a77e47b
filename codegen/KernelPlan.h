//===- KernelPlan.h - what the code generator hands the runtime -*- C++ -*-===//
//
// Plain data, free of MLIR: the generated CUDA source and, for each kernel,
// how its parameters map to the update's arguments. The runtime compiles and
// launches from this alone.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_KERNELPLAN_H
#define KFUSE_CODEGEN_KERNELPLAN_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kfuse {

/// Storage element types of tensors (compute is always f32). `pred` is a
/// one-byte boolean, only for temporaries of unfused plans.
enum class DType { f32, bf16, f16, pred };

const char *dtypeName(DType dtype);
std::optional<DType> parseDType(const std::string &name);
unsigned dtypeSize(DType dtype);

/// Roles mirrored from the dialect for users of the plan.
enum class ArgRole { param, grad, state, hyper };
const char *argRoleName(ArgRole role);

/// One argument of the update, as a caller passes it.
struct ArgInfo {
  std::string name;
  ArgRole role;
  DType dtype = DType::f32; // storage dtype of a tensor; f32 for scalars
  std::optional<double> defaultValue;
};

/// One parameter of a generated kernel, in signature order.
struct KernelParam {
  enum class Kind {
    Tensor,    // a pointer to the update argument `index`
    Scalar,    // the float value of the update argument `index`
    Temporary, // a pointer to intermediate buffer `index` (unfused plans)
  };
  Kind kind;
  unsigned index = 0;
  DType dtype = DType::f32;
  bool read = false;
  bool written = false;
};

/// One generated kernel: the launch of one fused region.
struct KernelInfo {
  std::string name;                // extern "C" symbol in the source
  std::string location;            // IR location of the region, for errors
  std::vector<KernelParam> params; // then `n` (int64) when numel is dynamic
  unsigned vectorWidth = 1;        // elements a thread handles per iteration
  unsigned indexBits = 64;
  unsigned blockSize = 256;
  unsigned numBodyOps = 0;
};

/// The whole generated program for one specialization of an update.
struct KernelPlan {
  std::string updateName;
  std::vector<ArgInfo> args;
  std::vector<KernelInfo> kernels; // launched in order
  std::vector<DType> temporaries;  // buffers of numel elements each
  int64_t numel = -1;              // -1: dynamic, passed at launch
  unsigned alignment = 16;         // bytes every pointer must be aligned to
  std::string source;              // CUDA C++ for all kernels
  /// Bytes the plan moves per element over all its kernels, temporaries
  /// included; for a fully fused update, every tensor argument read once and
  /// every written one written once, in its storage dtype.
  unsigned bytesPerElement() const;
};

} // namespace kfuse

#endif // KFUSE_CODEGEN_KERNELPLAN_H

//===- PtxEmitter.h - PTX written directly for elementwise kernels -*- C++
//-*-===//
//
// NVRTC spends most of a cold compile in its C++ front end and NVVM, before
// ptxas runs (about 30 of AdamW's 60 ms on the H200's host, where a trivial
// kernel takes 27 ms in all). The single-tensor grid-stride kernels and the
// elementwise multi-tensor plans of the CUDA emitter are simple enough to
// write as PTX straight from the fused body: the runtime then only runs
// ptxas (through nvJitLink). The PTX has the CUDA kernel's signature, loops
// and arithmetic (the same exact f64 division and square root, the same NaN
// rules, the same double pow), so either image runs from one KernelPlan and
// steps to the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_PTXEMITTER_H
#define KFUSE_CODEGEN_PTXEMITTER_H

#include "codegen/KernelPlan.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kfuse {

/// The GPU a direct PTX module is written for: the SM number of sm_XY[a|f].
/// The emitter needs sm_80 or later (bf16 conversions in one instruction).
struct PtxTarget {
  int sm = 90;
};

/// The smallest SM the direct PTX emitter writes code for.
constexpr int kMinPtxSm = 80;

/// A tensor parameter of a single-tensor kernel, in signature order.
struct PtxTensorParam {
  DType dtype = DType::f32;
  bool read = false;
  bool written = false;
  bool temporary = false; // a buffer of an unfused plan
};

/// One single-tensor grid-stride kernel as the CUDA emitter laid it out: the
/// signature is (uniform struct of `numUniformFields` floats, when there are
/// any; a pointer per tensor; `long long n` when numel is dynamic), and every
/// hyperparameter the body reads reaches it as a field of the struct.
struct PtxKernelSpec {
  std::string name;
  std::string location;
  mlir::Operation *fused = nullptr; // the kfuse.fused op
  std::vector<PtxTensorParam> tensors;
  /// The element (body) argument of each tensor the body reads.
  llvm::DenseMap<mlir::Value, unsigned> inputTensor;
  /// Body values the uniform struct holds, by field.
  llvm::DenseMap<mlir::Value, unsigned> uniformField;
  unsigned numUniformFields = 0;
  /// (tensor, yielded body value) for every store of the element function.
  std::vector<std::pair<unsigned, mlir::Value>> stores;
  int64_t numel = -1; // -1: dynamic
  unsigned numelMultiple = 1;
  unsigned vectorWidth = 1;
  unsigned indexBits = 64;
  unsigned alignment = 16; // bytes every tensor pointer is aligned to
  /// Whether the runtime computes the uniform struct (KernelInfo::
  /// hostUniforms); the direct emitter has no device prologue.
  bool hostUniforms = false;
  /// Whether the kernel copies a temporary into an argument.
  bool copies = false;

  /// A multi-tensor kernel (KernelPlan.h's table walk, signature (entries,
  /// chunks, num_chunks, hypers, found_inf, done_counter)): tensor i is
  /// entry->pointers[tensorPointers[i]]; every thread computes the uniform
  /// fields from `deviceUniforms` over the device hypers, the step slot
  /// `stepArg` read as its value plus one.
  bool multiTensor = false;
  std::vector<unsigned> tensorPointers;
  std::optional<HostUniforms> deviceUniforms;
  int stepArg = -1;
  /// Whether the last block to finish advances the step slot.
  bool advancesStep = false;
  /// Why the direct emitter cannot write this kernel, where the CUDA
  /// emitter knows (a form the PTX has no spelling for); empty otherwise.
  std::string unsupported;
};

/// The PTX module of `specs` for `target` (header, the functions their
/// uniform values call, an `.entry` each); a failure, with `reason` naming
/// the kernel and the op or form the direct emitter does not cover (the
/// caller then compiles the CUDA source instead).
mlir::FailureOr<std::string> emitPtxModule(llvm::ArrayRef<PtxKernelSpec> specs,
                                           const PtxTarget &target,
                                           std::string &reason);

/// The `.func`s kfuse_pow_f64(x, y), kfuse_exp_f64(x) and kfuse_log_f64(x)
/// (codegen/UniformMath.h on f64 parameters), for a module of tests.
std::string getPtxUniformMathFunctions();

/// The module header for `target`: .version, .target, .address_size.
std::string getPtxHeader(const PtxTarget &target);

} // namespace kfuse

#endif // KFUSE_CODEGEN_PTXEMITTER_H

//===- KernelPlan.cpp - plain data shared by codegen and runtime ---------===//

#include "codegen/KernelPlan.h"
#include "codegen/UniformMath.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

namespace kfuse {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "f32";
  case DType::bf16:
    return "bf16";
  case DType::f16:
    return "f16";
  case DType::pred:
    return "pred";
  }
  return "?";
}

std::optional<DType> parseDType(const std::string &name) {
  if (name == "f32" || name == "float32")
    return DType::f32;
  if (name == "bf16" || name == "bfloat16")
    return DType::bf16;
  if (name == "f16" || name == "float16")
    return DType::f16;
  return std::nullopt;
}

unsigned dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return 4;
  case DType::bf16:
  case DType::f16:
    return 2;
  case DType::pred:
    return 1;
  }
  return 0;
}

const char *argRoleName(ArgRole role) {
  switch (role) {
  case ArgRole::param:
    return "param";
  case ArgRole::grad:
    return "grad";
  case ArgRole::state:
    return "state";
  case ArgRole::hyper:
    return "hyper";
  case ArgRole::model:
    return "model";
  case ArgRole::input:
    return "input";
  case ArgRole::output:
    return "output";
  }
  return "?";
}

std::string Specialization::key() const {
  return std::string("param=") + dtypeName(paramDType) +
         ";grad=" + dtypeName(gradDType) + ";state=" + dtypeName(stateDType) +
         ";model=" + dtypeName(modelDType) + ";numel=" + std::to_string(numel) +
         ";align=" + std::to_string(alignment) +
         // Only when set, so that the keys of earlier plans stay as they were.
         (numelMultiple > 1 ? ";multiple=" + std::to_string(numelMultiple)
                            : std::string()) +
         (argDTypes.empty() ? std::string()
                            : ";args=" +
                                  [&] {
                                    std::string names;
                                    for (DType dtype : argDTypes)
                                      names +=
                                          std::string(dtypeName(dtype)) + ",";
                                    return names;
                                  }()) +
         (cols >= 0 ? ";cols=" + std::to_string(cols) : std::string());
}

DType Specialization::dtypeOf(unsigned index, ArgRole role) const {
  return index < argDTypes.size() ? argDTypes[index] : roleDType(role);
}

DType Specialization::roleDType(ArgRole role) const {
  switch (role) {
  case ArgRole::param:
    return paramDType;
  case ArgRole::grad:
    return gradDType;
  case ArgRole::model:
    return modelDType;
  default:
    return stateDType;
  }
}

bool Specialization::operator==(const Specialization &other) const {
  return paramDType == other.paramDType && gradDType == other.gradDType &&
         stateDType == other.stateDType && modelDType == other.modelDType &&
         argDTypes == other.argDTypes && numel == other.numel &&
         cols == other.cols && alignment == other.alignment &&
         numelMultiple == other.numelMultiple;
}

const char *argLevelName(ArgLevel level) {
  switch (level) {
  case ArgLevel::element:
    return "element";
  case ArgLevel::tensor:
    return "tensor";
  case ArgLevel::row:
    return "row";
  case ArgLevel::column:
    return "column";
  }
  return "?";
}

std::optional<uint64_t> normMinimumBytes(llvm::ArrayRef<ArgInfo> args,
                                         llvm::ArrayRef<DType> dtypes,
                                         int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0)
    return std::nullopt;
  bool overflowed = false; // each Saturating* call sets it
  uint64_t bytes = 0;
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (arg.role == ArgRole::hyper)
      continue;
    uint64_t elements = 0;
    switch (arg.level) {
    case ArgLevel::element:
      elements =
          llvm::SaturatingMultiply(uint64_t(rows), uint64_t(cols), &overflowed);
      if (overflowed)
        return std::nullopt;
      break;
    case ArgLevel::row:
      elements = uint64_t(rows);
      break;
    case ArgLevel::column:
      elements = uint64_t(cols);
      break;
    case ArgLevel::tensor:
      elements = 1;
      break;
    }
    DType dtype = index < dtypes.size() ? dtypes[index] : arg.dtype;
    bytes = llvm::SaturatingMultiplyAdd(elements, uint64_t(dtypeSize(dtype)),
                                        bytes, &overflowed);
    if (overflowed)
      return std::nullopt;
  }
  return bytes;
}

uint64_t KernelPlan::minimumBytes(int64_t rows) const {
  return normMinimumBytes(args, {}, rows, cols).value_or(UINT64_MAX);
}

bool compareUniforms(unsigned predicate, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  if (predicate == 0 || predicate == 15)
    return predicate == 15;
  if (predicate == 7 || predicate == 14)
    return unordered == (predicate == 14);
  if (unordered)
    return predicate >= 8;
  switch ((predicate - 1) % 7) {
  case 0:
    return a == b;
  case 1:
    return a > b;
  case 2:
    return a >= b;
  case 3:
    return a < b;
  case 4:
    return a <= b;
  default:
    return a != b;
  }
}

void HostUniforms::evaluate(const double *args, float *out) const {
  // Programs are a few instructions (AdamW: 12); no allocation per launch.
  constexpr unsigned kInline = 64;
  double inlineValues[kInline];
  std::vector<double> heapValues;
  double *values = inlineValues;
  if (program.size() > kInline) {
    heapValues.resize(program.size());
    values = heapValues.data();
  }
  uniform_math::HostArith host;
  uniform_math::evaluateProgram(
      host, program, [&](unsigned arg) { return args[arg]; }, values);
  for (auto [index, field] : llvm::enumerate(fields))
    out[index] = static_cast<float>(values[field]);
}

unsigned KernelPlan::bytesPerElement() const {
  // A whole step skips the scan kernel where an update kernel scans.
  bool scansInUpdate = llvm::any_of(
      kernels, [](const KernelInfo &kernel) { return kernel.setsFoundInf; });
  unsigned bytes = 0;
  for (const KernelInfo &kernel : kernels) {
    if (scansInUpdate && kernel.role == KernelInfo::Role::FoundInfScan)
      continue;
    for (const KernelParam &param : kernel.params) {
      // A value per tensor, not per element.
      if (param.kind == KernelParam::Kind::Scalar ||
          param.kind == KernelParam::Kind::TensorValue)
        continue;
      bytes += (param.read + param.written) * dtypeSize(param.dtype);
    }
  }
  return bytes;
}

} // namespace kfuse

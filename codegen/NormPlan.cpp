//===- NormPlan.cpp - plain data of norm plans ----------------------------===//

#include "codegen/NormPlan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

namespace kfuse {

const char *normShapeName(NormShape shape) {
  switch (shape) {
  case NormShape::full:
    return "full";
  case NormShape::row:
    return "row";
  case NormShape::col:
    return "col";
  case NormShape::scalar:
    return "scalar";
  }
  return "?";
}

std::string NormSpecialization::key() const {
  std::string key = "norm;cols=" + std::to_string(cols) +
                    ";align=" + std::to_string(alignment) + ";dtypes=";
  for (DType dtype : dtypes) {
    key += dtypeName(dtype);
    key += ',';
  }
  return key;
}

std::optional<uint64_t> normMinimumBytes(llvm::ArrayRef<NormArg> args,
                                         llvm::ArrayRef<DType> dtypes,
                                         int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0)
    return std::nullopt;
  bool overflowed = false; // each Saturating* call sets it
  uint64_t bytes = 0;
  for (auto [index, arg] : llvm::enumerate(args)) {
    uint64_t elements = 0;
    switch (arg.shape) {
    case NormShape::full:
      elements =
          llvm::SaturatingMultiply(uint64_t(rows), uint64_t(cols), &overflowed);
      if (overflowed)
        return std::nullopt;
      break;
    case NormShape::row:
      elements = uint64_t(rows);
      break;
    case NormShape::col:
      elements = uint64_t(cols);
      break;
    case NormShape::scalar:
      continue;
    }
    DType dtype = index < dtypes.size() ? dtypes[index] : arg.dtype;
    bytes = llvm::SaturatingMultiplyAdd(elements, uint64_t(dtypeSize(dtype)),
                                        bytes, &overflowed);
    if (overflowed)
      return std::nullopt;
  }
  return bytes;
}

uint64_t NormPlan::minimumBytes(int64_t rows) const {
  return normMinimumBytes(args, {}, rows, cols).value_or(UINT64_MAX);
}

} // namespace kfuse

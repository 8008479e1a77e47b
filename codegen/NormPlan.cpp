//===- NormPlan.cpp - plain data of norm plans ----------------------------===//

#include "codegen/NormPlan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

namespace kfuse {

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

uint64_t NormPlan::minimumBytes(int64_t rows) const {
  return normMinimumBytes(args, {}, rows, cols).value_or(UINT64_MAX);
}

} // namespace kfuse

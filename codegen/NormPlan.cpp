//===- NormPlan.cpp - plain data of norm plans ----------------------------===//

#include "codegen/NormPlan.h"

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

uint64_t NormPlan::minimumBytes(int64_t rows) const {
  uint64_t bytes = 0;
  for (const NormArg &arg : args) {
    uint64_t elements = 0;
    switch (arg.shape) {
    case NormShape::full:
      elements = uint64_t(rows) * uint64_t(cols);
      break;
    case NormShape::row:
      elements = uint64_t(rows);
      break;
    case NormShape::col:
      elements = uint64_t(cols);
      break;
    case NormShape::scalar:
      break;
    }
    bytes += elements * dtypeSize(arg.dtype);
  }
  return bytes;
}

} // namespace kfuse

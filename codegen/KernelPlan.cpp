//===- KernelPlan.cpp - plain data shared by codegen and runtime ---------===//

#include "codegen/KernelPlan.h"

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

unsigned KernelPlan::bytesPerElement() const {
  unsigned bytes = 0;
  for (const KernelInfo &kernel : kernels)
    for (const KernelParam &param : kernel.params) {
      if (param.kind == KernelParam::Kind::Scalar)
        continue;
      bytes += (param.read + param.written) * dtypeSize(param.dtype);
    }
  return bytes;
}

} // namespace kfuse

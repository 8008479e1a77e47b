//===- GpuTestSupport.h - what the GPU-dependent unit tests share -*- C++ -*-//

#ifndef KFUSE_TEST_UNIT_GPUTESTSUPPORT_H
#define KFUSE_TEST_UNIT_GPUTESTSUPPORT_H

#include "runtime/CudaDriver.h"
#include "runtime/Errors.h"

#include "llvm/Support/Error.h"

#include <string>
#include <utility>

namespace kfuse::testing {

/// Whether a CUDA driver and device are there (tests that need one skip
/// otherwise).
inline bool haveGpu() {
  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (driver)
    return true;
  llvm::consumeError(driver.takeError());
  return false;
}

/// The category and message of a failed call; (Internal, "<no error>")
/// when it succeeded.
template <typename T>
std::pair<ErrorCode, std::string> failureOf(llvm::Expected<T> value) {
  if (value)
    return {ErrorCode::Internal, "<no error>"};
  return takeMessage(value.takeError());
}

inline std::pair<ErrorCode, std::string> failureOf(llvm::Error error) {
  if (!error)
    return {ErrorCode::Internal, "<no error>"};
  return takeMessage(std::move(error));
}

} // namespace kfuse::testing

#endif // KFUSE_TEST_UNIT_GPUTESTSUPPORT_H

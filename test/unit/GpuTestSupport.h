//===- GpuTestSupport.h - what the GPU-dependent unit tests share -*- C++ -*-//

#ifndef KFUSE_TEST_UNIT_GPUTESTSUPPORT_H
#define KFUSE_TEST_UNIT_GPUTESTSUPPORT_H

#include "runtime/CudaDriver.h"

#include "llvm/Support/Error.h"

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

} // namespace kfuse::testing

#endif // KFUSE_TEST_UNIT_GPUTESTSUPPORT_H

//===- HeapRetention.h - keep NVRTC's heap between compiles -----*- C++ -*-===//
//
// NVRTC (its front end, NVVM and ptxas) grows the heap by tens of megabytes
// a compile and frees it; glibc trims the freed top back to the system, so
// the next compile faults every page in again: about 1900 minor faults and
// 12-20 ms of system time for AdamW on the build VM, a third of a compile.
// nvJitLink's ptxas does the same (~2600 faults a link of a small kernel).
// Raising glibc's top pad keeps that much free heap mapped between compiles.
//
// It is a process-wide malloc setting, so it is applied once, at the first
// compile, and only where the process has not chosen one (MALLOC_TOP_PAD_).
// KFUSE_HEAP_PAD_MB sets the amount (default 64; 0 leaves malloc alone).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_HEAPRETENTION_H
#define KFUSE_RUNTIME_HEAPRETENTION_H

#include <cstddef>
#include <optional>

namespace kfuse {

/// The top pad in bytes for a KFUSE_HEAP_PAD_MB value (null: unset) and a
/// MALLOC_TOP_PAD_ value, or nothing where malloc is left alone: the
/// process set its own pad, the value is 0, or it is not a number of MiB
/// up to 1024 (a warning then names it).
std::optional<size_t> chooseHeapPad(const char *kfuseValue,
                                    const char *mallocValue);

/// Applies the pad KFUSE_HEAP_PAD_MB asks for, once per process (later
/// calls do nothing). Returns the bytes applied, 0 where none.
size_t retainHeapBetweenCompiles();

} // namespace kfuse

#endif // KFUSE_RUNTIME_HEAPRETENTION_H

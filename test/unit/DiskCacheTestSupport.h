//===- DiskCacheTestSupport.h - a disk cache in a fresh directory -*- C++
//-*-===//

#ifndef KFUSE_TEST_UNIT_DISKCACHETESTSUPPORT_H
#define KFUSE_TEST_UNIT_DISKCACHETESTSUPPORT_H

#include "runtime/DiskCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <memory>

namespace kfuse {

/// A fixture whose `cache` lives in a directory of its own, removed after.
class TempDiskCacheTest : public ::testing::Test {
protected:
  /// `prefix` names the directory, for a reader of /tmp.
  explicit TempDiskCacheTest(const char *prefix) : prefix(prefix) {}
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory(prefix, root));
    DiskCacheOptions options;
    options.directory = std::string(root);
    cache = std::make_unique<DiskCache>(options);
  }
  void TearDown() override { (void)llvm::sys::fs::remove_directories(root); }

  const char *prefix;
  llvm::SmallString<128> root;
  std::unique_ptr<DiskCache> cache;
};

} // namespace kfuse

#endif // KFUSE_TEST_UNIT_DISKCACHETESTSUPPORT_H

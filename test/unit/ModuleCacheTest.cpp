//===- ModuleCacheTest.cpp - the process-wide module cache ----------------===//
//
// Needs no GPU: ModuleCache only maps keys to compiled objects. Also built
// into kfuse-tsan-tests (-DKFUSE_TSAN=ON) and run under ThreadSanitizer.

#include "runtime/ModuleCache.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace kfuse;

namespace {

struct Fake {
  std::string key;
};

TEST(ModuleCacheTest, ConcurrentRequestsForOneKeyCompileOnce) {
  ModuleCache<Fake> cache;
  std::atomic<int> compiles{0};
  std::vector<std::shared_ptr<Fake>> results(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto result = cache.getOrCompile("k", nullptr, [&] {
        ++compiles;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return llvm::Expected<std::shared_ptr<Fake>>(
            std::make_shared<Fake>(Fake{"k"}));
      });
      ASSERT_TRUE(bool(result));
      results[t] = *result;
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(compiles.load(), 1);
  for (const auto &result : results)
    EXPECT_EQ(result, results[0]);
}

TEST(ModuleCacheTest, OtherKeysCompileAlongside) {
  ModuleCache<Fake> cache;
  std::atomic<int> running{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::string key = "k" + std::to_string(t);
      auto result = cache.getOrCompile(key, nullptr, [&] {
        int now = ++running;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        --running;
        return llvm::Expected<std::shared_ptr<Fake>>(
            std::make_shared<Fake>(Fake{key}));
      });
      ASSERT_TRUE(bool(result));
      EXPECT_EQ((*result)->key, key);
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_GT(most.load(), 1) << "compiles of different keys ran one at a time";
}

TEST(ModuleCacheTest, AFailedCompileIsRetried) {
  ModuleCache<Fake> cache;
  int calls = 0;
  auto failing = [&]() -> llvm::Expected<std::shared_ptr<Fake>> {
    ++calls;
    return llvm::createStringError("nvrtc said no");
  };
  auto first = cache.getOrCompile("k", nullptr, failing);
  ASSERT_FALSE(bool(first));
  EXPECT_EQ(llvm::toString(first.takeError()), "nvrtc said no");
  auto second = cache.getOrCompile("k", nullptr, [&] {
    ++calls;
    return llvm::Expected<std::shared_ptr<Fake>>(std::make_shared<Fake>());
  });
  ASSERT_TRUE(bool(second));
  EXPECT_EQ(calls, 2);
  // Contexts are part of the key.
  int other = 0;
  auto third = cache.getOrCompile("k", reinterpret_cast<CUcontext>(8), [&] {
    ++other;
    return llvm::Expected<std::shared_ptr<Fake>>(std::make_shared<Fake>());
  });
  ASSERT_TRUE(bool(third));
  EXPECT_EQ(other, 1);
  EXPECT_NE(*third, *second);
}

} // namespace

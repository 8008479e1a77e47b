//===- Cache.cpp - kfuse cache stats|clear|path ---------------------------===//

#include "tools/kfuse/Cache.h"

#include "runtime/DiskCache.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace kfuse {

static constexpr const char *kUsage = "expected 'kfuse cache stats [--json]', "
                                      "'kfuse cache clear' or 'kfuse cache "
                                      "path'";

int runCacheCommand(ArrayRef<std::string> args, raw_ostream &out,
                    raw_ostream &err) {
  auto error = [&](const Twine &message) {
    WithColor::error(err, "kfuse") << message << "\n";
    return 1;
  };
  if (args.empty())
    return error("missing cache command; " + Twine(kUsage));
  StringRef command = args.front();
  ArrayRef<std::string> rest = args.drop_front();
  bool json = false;
  if (command == "stats" && !rest.empty() && rest.front() == "--json") {
    json = true;
    rest = rest.drop_front();
  }
  if (command != "stats" && command != "clear" && command != "path")
    return error("unknown cache command '" + command + "'; " + kUsage);
  if (!rest.empty())
    return error("unexpected argument '" + rest.front() +
                 "' for 'kfuse cache " + command + "'");

  std::string envWarning;
  DiskCache cache(DiskCacheOptions::fromEnvironment(&envWarning));
  if (!envWarning.empty())
    WithColor::warning(err, "kfuse") << envWarning << "\n";
  if (cache.path().empty())
    return error("no kernel cache directory: set KFUSE_CACHE_DIR, "
                 "XDG_CACHE_HOME or HOME");

  if (command == "path") {
    out << cache.path() << "\n";
    return 0;
  }

  if (command == "clear") {
    CacheClearResult cleared = cache.clear();
    out << "removed " << cleared.entries << " entries (" << cleared.bytes
        << " bytes) from " << cache.path() << "\n";
    if (!cleared.warning.empty())
      return error(cleared.warning);
    return 0;
  }

  DiskCacheStats stats = cache.stats();
  if (json) {
    json::OStream stream(out);
    stream.object([&] {
      stream.attribute("directory", stats.directory);
      stream.attribute("entries", static_cast<int64_t>(stats.entries));
      stream.attribute("bytes", static_cast<int64_t>(stats.totalBytes));
      stream.attribute("max_bytes",
                       static_cast<int64_t>(cache.getOptions().maxBytes));
    });
    out << "\n";
  } else {
    out << "directory: " << stats.directory << "\n"
        << "entries: " << stats.entries << "\n"
        << "bytes: " << stats.totalBytes << "\n"
        << "max-bytes: " << cache.getOptions().maxBytes << "\n";
  }
  if (!stats.warning.empty())
    WithColor::warning(err, "kfuse") << stats.warning << "\n";
  return 0;
}

} // namespace kfuse

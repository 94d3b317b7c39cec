// Fuzz target: the cache import (daemon/store/cache_import.cc and the line
// parser in cache_json.h). Each input is an import: JSON lines fed to
// Cache::Import of a real cache (SQLite, in a temp dir), and each line on
// its own to ImportLine's readers and to IRON's cost file parser. A
// refused import leaves the cache as it was.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "absl/strings/str_split.h"
#include "daemon/store/cache.h"
#include "daemon/store/cache_json.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

irontune::Cache& TheCache() {
  static irontune::Cache* cache = [] {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() /
        ("irontune-fuzz-cache-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    absl::StatusOr<std::unique_ptr<irontune::Cache>> opened =
        irontune::Cache::Open((dir / "irontune.db").string(), "NPU Strix",
                              irontune::PowerMode::kDefault);
    FUZZ_CHECK(opened.ok());
    return opened->release();
  }();
  return *cache;
}

void ParseLines(std::string_view text) {
  int number = 0;
  for (std::string_view line : absl::StrSplit(text, '\n')) {
    absl::StatusOr<irontune::ImportLine> parsed =
        irontune::ImportLine::Parse(line, ++number);
    if (!parsed.ok()) {
      FUZZ_CHECK(!parsed.status().message().empty());
      continue;
    }
    for (const char* name : {"kind", "platform", "power_mode", "key",
                             "recipe_hash", "environment", "verdict"}) {
      (void)parsed->String(name);
    }
    (void)parsed->Int("row_schema");
    absl::StatusOr<irontune::v1::Measurement> m = parsed->Measurement();
    if (m.ok()) {
      absl::StatusOr<irontune::v1::Measurement> again =
          irontune::MeasurementFromJson(irontune::MeasurementToJson(*m));
      FUZZ_CHECK(again.ok());
      FUZZ_CHECK(again->SerializeAsString() == m->SerializeAsString());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  QuietProtobuf();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ParseLines(text);
  (void)irontune::ParseIronCost(text);

  irontune::Cache& cache = TheCache();
  std::ostringstream before;
  FUZZ_CHECK(cache.Export(before).ok());
  std::istringstream in{std::string(text)};
  absl::StatusOr<irontune::ImportCounts> counts = cache.Import(in);
  if (!counts.ok()) {
    FUZZ_CHECK(!counts.status().message().empty());
    std::ostringstream after;
    FUZZ_CHECK(cache.Export(after).ok());
    FUZZ_CHECK(after.str() == before.str());
  }
  return 0;
}

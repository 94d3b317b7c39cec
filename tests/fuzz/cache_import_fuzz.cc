// Fuzz target: the cache import (daemon/store/cache_import.cc and the line
// parser in cache_json.h). Each input is an import: JSON lines fed to
// Cache::Import of a real cache (SQLite, in a temp dir), and each line on
// its own to ImportLine's readers and to IRON's cost file parser. A
// refused import adds no row to the cache.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

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
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
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
  absl::StatusOr<irontune::CacheStats> before = cache.Stats();
  FUZZ_CHECK(before.ok());
  std::istringstream in{std::string(text)};
  absl::StatusOr<irontune::ImportCounts> counts = cache.Import(in);
  if (!counts.ok()) {
    FUZZ_CHECK(!counts.status().message().empty());
    absl::StatusOr<irontune::CacheStats> after = cache.Stats();
    FUZZ_CHECK(after.ok());
    FUZZ_CHECK(after->rows == before->rows);
    FUZZ_CHECK(after->iron_rows == before->iron_rows);
    FUZZ_CHECK(after->verdicts == before->verdicts);
  }
  return 0;
}

// fuzz-seeds DIR: writes the fuzz targets' seed corpus under DIR (one
// folder per target, tests/fuzz/CMakeLists.txt) from the test fixtures:
// valid inputs of every format, which the fuzzers then mutate.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "common/profile.h"
#include "common/recording.h"
#include "common/value.h"
#include "daemon/store/cache.h"
#include "daemon/store/cache_json.h"
#include "daemon/store/cache_key.h"
#include "irontune/v1/tuner.pb.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  std::cout << path.string() << " (" << bytes.size() << " bytes)\n";
}

void Recordings(const fs::path& dir) {
  const struct {
    const char* target;
    RecordingFormat format;
    const char* ext;
  } formats[] = {{"recording_binary", RecordingFormat::kBinary, ".rec"},
                 {"recording_text", RecordingFormat::kText, ".txtpb"},
                 {"recording_json", RecordingFormat::kJson, ".json"}};
  for (const auto& f : formats) {
    Write(dir / f.target / (std::string("small") + f.ext),
          *SerializeRecording(testing::SmallCalls(), f.format));
    Write(dir / f.target / (std::string("rich") + f.ext),
          *SerializeRecording(testing::RichCalls(), f.format));
  }
}

void Profiles(const fs::path& dir) {
  Write(dir / "profile" / "empty.json", "{\"entries\": [\n]}\n");
  Write(dir / "profile" / "npu2.json",
        "{\"entries\": [\n"
        "{\"operator\": \"ElementwiseAdd\", \"size\": 2048, \"tile_size\": "
        "512},\n"
        "{\"operator\": \"GEMM\", \"M\": 256, \"K\": 2048, \"N\": 8192, "
        "\"b_col_maj\": true, \"tile_m\": 32, \"tile_k\": 64, \"tile_n\": "
        "128, \"num_aie_columns\": 8},\n"
        "{\"operator\": \"MHA\", \"num_heads\": 32, \"d\": 64.5, \"name\": "
        "\"x\", \"num_pipelines\": 8}\n"
        "]}\n");
}

v1::Measurement AMeasurement() {
  v1::Measurement m;
  m.set_t_step_us(12.5);
  for (int i = 0; i < 4; ++i) m.add_round_us(12.5 + 0.01 * i);
  for (int i = 0; i < 4; ++i) m.add_default_round_us(25 + 0.01 * i);
  m.set_output(InputDigest("output"));
  m.set_run("0123456789abcdef0123456789abcdef");
  m.set_power_mode("default");
  m.set_calls(50);
  m.set_measured("2026-11-29");
  return m;
}

void CacheLines(const fs::path& dir) {
  const fs::path tmp = fs::temp_directory_path() / "irontune-fuzz-seeds";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto cache =
      *Cache::Open((tmp / "c.db").string(), "NPU Strix", PowerMode::kDefault);
  CacheKey key;
  key.recipe_hash = InputDigest("recipe");
  key.artifact_hash = InputDigest("artifact");
  key.values = {{"rows", 2048}};
  key.repeats = 9;
  (void)cache->Put(key, AMeasurement());
  (void)cache->PutVerdict(VerdictKey{InputDigest("recipe"), "sim"}, "ok");
  std::ostringstream out;
  (void)cache->Export(out);
  out << FigureLine("iron_cost", "npu-strix", "default", "gemm_256_2048",
                    std::nullopt, AMeasurement())
      << "\n";
  Write(dir / "cache_import" / "export.jsonl", out.str());
  fs::remove_all(tmp);
}

void Requests(const fs::path& dir) {
  v1::MeasureRequest measure;
  *measure.mutable_operator_() =
      testing::IronGemm(256, 256, 256, 64, 64, 64, 4);
  v1::Field* f = measure.add_settings()->add_tunables();
  f->set_name("tile_m");
  *f->mutable_value() = IntValue(32);
  measure.mutable_timing()->set_rounds(4);
  measure.mutable_timing()->set_calls(5);
  measure.set_client("seed");
  Write(dir / "measure_request" / "gemm.pb", measure.SerializeAsString());

  v1::AutotuneRequest tune;
  *tune.mutable_calls() = testing::SmallCalls();
  tune.mutable_timing()->set_rounds(4);
  tune.set_repeats(4);
  tune.set_client("seed");
  Write(dir / "autotune_request" / "small.pb", tune.SerializeAsString());
  *tune.mutable_calls() = testing::RichCalls();
  Write(dir / "autotune_request" / "rich.pb", tune.SerializeAsString());
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz-seeds DIR (tests/fuzz/corpus)\n";
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  irontune::Recordings(dir);
  irontune::Profiles(dir);
  irontune::CacheLines(dir);
  irontune::Requests(dir);
  return 0;
}

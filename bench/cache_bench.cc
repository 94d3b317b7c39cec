// Fills a measurement cache and times it: batched inserts, then random
// lookups (half hits, half misses), and the file's size per row.
//
//   cache_bench [--rows N] [--batch B] [--lookups L] [--dir D] [--keep]
//
// The figures are wall-clock rates on this machine; nothing passes or fails.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/store/cache.h"
#include "daemon/store/cache_key.h"

namespace irontune {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  int64_t rows = 1'000'000;
  int64_t batch = 10'000;
  int64_t lookups = 1'000'000;
  fs::path dir = fs::temp_directory_path();
  bool keep = false;
};

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// A measurement as measure writes one: 8 rounds, beside the default's 8.
v1::Measurement Realistic(int64_t i) {
  v1::Measurement m;
  double t = 10.0 + static_cast<double>(i % 1000) * 0.01;
  m.set_t_step_us(t);
  for (int r = 0; r < 8; ++r) m.add_round_us(t + 0.013 * r);
  for (int r = 0; r < 8; ++r) m.add_default_round_us(1.2 * t + 0.011 * r);
  m.set_output(InputDigest(std::to_string(i)));
  m.set_run(InputDigest(std::to_string(i / 7)).substr(0, 32));
  m.set_power_mode("default");
  m.set_calls(50);
  m.set_measured("2026-11-29");
  return m;
}

CacheKey KeyOf(int64_t i) {
  CacheKey key;
  key.recipe_hash = InputDigest("gemv recipe");
  key.artifact_hash = InputDigest("gemv artifact");
  key.values = {{"row", i}};
  key.packaging = v1::PACKAGING_FULL_ELF;
  return key;
}

bool ParseFlags(int argc, char** argv, Options& options) {
  for (int a = 1; a < argc; ++a) {
    std::string_view flag = argv[a];
    auto number = [&](int64_t& out) {
      if (a + 1 >= argc) return false;
      out = std::strtoll(argv[++a], nullptr, 10);
      return out > 0;
    };
    if (flag == "--rows") {
      if (!number(options.rows)) return false;
    } else if (flag == "--batch") {
      if (!number(options.batch)) return false;
    } else if (flag == "--lookups") {
      if (!number(options.lookups)) return false;
    } else if (flag == "--dir" && a + 1 < argc) {
      options.dir = argv[++a];
    } else if (flag == "--keep") {
      options.keep = true;
    } else {
      return false;
    }
  }
  return true;
}

int Run(const Options& options) {
  const fs::path path =
      options.dir / ("cache_bench_" + std::to_string(getpid()) + ".db");
  auto opened = Cache::Open(path.string(), "NPU Strix", PowerMode::kDefault);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<Cache> cache = *std::move(opened);
  std::printf("cache_bench: %lld rows in batches of %lld, %lld lookups\n",
              static_cast<long long>(options.rows),
              static_cast<long long>(options.batch),
              static_cast<long long>(options.lookups));
  std::printf("  file: %s\n", path.c_str());

  // Keys first, so the insert figure is the cache's alone.
  auto start = Clock::now();
  std::vector<std::string> keys;
  keys.reserve(options.rows);
  for (int64_t i = 0; i < options.rows; ++i) keys.push_back(KeyOf(i).Digest());
  double key_s = Seconds(start);
  std::printf("  key digests:     %12.0f /s  (CacheKey::Digest)\n",
              options.rows / key_s);

  start = Clock::now();
  std::vector<CacheEntry> batch;
  for (int64_t first = 0; first < options.rows; first += options.batch) {
    batch.clear();
    for (int64_t i = first; i < std::min(options.rows, first + options.batch);
         ++i) {
      batch.push_back({keys[i], Realistic(i)});
    }
    absl::Status status = cache->PutMany(batch);
    if (!status.ok()) {
      std::fprintf(stderr, "%s\n", status.ToString().c_str());
      return 1;
    }
  }
  double insert_s = Seconds(start);
  std::printf("  inserts:         %12.0f /s  (%.2f s, PutMany)\n",
              options.rows / insert_s, insert_s);

  start = Clock::now();
  if (absl::Status status = cache->Checkpoint(); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  std::printf(
      "  checkpoint:      %12.2f s   (Cache::Checkpoint, after the fill)\n",
      Seconds(start));

  // Half hits (rows present), half misses (rows never written).
  std::mt19937_64 rng(1);
  std::vector<std::string> probes;
  probes.reserve(options.lookups);
  for (int64_t n = 0; n < options.lookups; ++n) {
    int64_t i = static_cast<int64_t>(rng() % options.rows);
    probes.push_back(n % 2 == 0 ? keys[i] : KeyOf(options.rows + i).Digest());
  }
  auto time_lookups = [&](auto&& get, const char* label) {
    int64_t hits = 0;
    auto begin = Clock::now();
    for (const std::string& probe : probes) {
      auto got = get(probe);
      if (!got.ok()) {
        std::fprintf(stderr, "%s\n", got.status().ToString().c_str());
        std::exit(1);
      }
      hits += got->has_value();
    }
    double s = Seconds(begin);
    std::printf("  %-16s %12.0f /s  (%.2f s, %lld hits, %lld misses)\n", label,
                options.lookups / s, s, static_cast<long long>(hits),
                static_cast<long long>(options.lookups - hits));
  };
  time_lookups([&](const std::string& k) { return cache->Get(k); }, "lookups:");
  auto reader =
      CacheReader::Open(path.string(), "NPU Strix", PowerMode::kDefault);
  if (!reader.ok()) {
    std::fprintf(stderr, "%s\n", reader.status().ToString().c_str());
    return 1;
  }
  time_lookups([&](const std::string& k) { return (*reader)->Get(k); },
               "reader lookups:");
  // In batches of 32 (a shape's settings), one read transaction each.
  {
    constexpr int64_t kShape = 32;
    int64_t hits = 0;
    auto begin = Clock::now();
    for (int64_t first = 0; first < options.lookups; first += kShape) {
      auto got = cache->GetMany(absl::MakeConstSpan(probes).subspan(
          first, std::min(kShape, options.lookups - first)));
      if (!got.ok()) return 1;
      for (const auto& m : *got) hits += m.has_value();
    }
    double s = Seconds(begin);
    std::printf("  %-16s %12.0f /s  (%.2f s, %lld hits; GetMany of 32)\n",
                "batched lookups:", options.lookups / s, s,
                static_cast<long long>(hits));
  }
  // With the key's hashing, as measure pays it.
  {
    int64_t n = std::min<int64_t>(options.lookups, 200'000);
    auto begin = Clock::now();
    for (int64_t j = 0; j < n; ++j) {
      auto got =
          cache->Get(KeyOf(static_cast<int64_t>(rng() % (2 * options.rows))));
      if (!got.ok()) return 1;
    }
    double s = Seconds(begin);
    std::printf(
        "  Get(CacheKey):   %12.0f /s  (incl. building and hashing the key)\n",
        n / s);
  }

  auto stats = cache->Stats();
  if (!stats.ok()) return 1;
  std::printf("  database:        %12lld bytes (page_count * page_size)\n",
              static_cast<long long>(stats->database_bytes));
  std::printf(
      "  per row:         %12.1f bytes  (%lld rows; serialized "
      "measurement %zu bytes)\n",
      static_cast<double>(stats->database_bytes) / stats->rows,
      static_cast<long long>(stats->rows),
      Realistic(0).SerializeAsString().size());
  reader->reset();
  cache.reset();
  if (!options.keep) {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) {
      fs::remove(path.string() + suffix, ec);
    }
  }
  return 0;
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) {
  irontune::Options options;
  if (!irontune::ParseFlags(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: cache_bench [--rows N] [--batch B] [--lookups L] "
                 "[--dir D] [--keep]\n");
    return 2;
  }
  return irontune::Run(options);
}

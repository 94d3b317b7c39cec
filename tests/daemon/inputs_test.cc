#include "daemon/tune/inputs.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "daemon/base/sha256.h"

namespace irontune {
namespace {

constexpr uint64_t kMiB = 1 << 20;

InputCache::Want Want(uint64_t nbytes, uint64_t seed) {
  return {v1::DTYPE_BF16, nbytes, seed};
}

TEST_CASE("a kept input is handed out as the same object and not a copy",
          "[inputs]") {
  InputCache cache(4 * kMiB);
  cache.MakeAll({Want(kMiB, 1), Want(kMiB, 1)}, 2);
  CHECK(cache.bytes() == kMiB);
  const auto a = cache.Get(v1::DTYPE_BF16, kMiB, 1);
  const auto b = cache.Get(v1::DTYPE_BF16, kMiB, 1);
  CHECK(a.get() == b.get());
  CHECK(*a == SeededInput(v1::DTYPE_BF16, kMiB, 1));
}

// A cached figure's output digest was made from these values: they never
// change (each digest pins one buffer; the odd sizes end on a partial draw).
TEST_CASE("seeded inputs keep their values from release to release",
          "[inputs]") {
  struct Pinned {
    v1::DType dtype;
    uint64_t nbytes;
    uint64_t seed;
    const char* sha256;
  };
  const Pinned pinned[] = {
      {v1::DTYPE_BF16, 1030, 7,
       "0ff809d84e8b2b389c56ecb9d0af8104e1c0131a24e0e2797b1ba3ce6d807cbf"},
      {v1::DTYPE_F16, 1030, 7,
       "1a53a2aaa57485315c88830b298c6ec08c0eeabb39b9f29d1ae430260bb459a1"},
      {v1::DTYPE_BF16, kMiB + 6, InputSeed(3, 1, 2),
       "b26be2bf59b6e8dec0ccc07dd5a397c3c56bf663c91d1f6b77da4c155ac18abe"},
      {v1::DTYPE_F16, 4096, InputSeed(9, 0, 1),
       "d8e75d329d96513582aa54d6de55cae78c68abb1d6afba28dbcf9bfa7ffb5145"},
      {v1::DTYPE_F32, 1028, 5,
       "e25baab1c398c3dbb139cfa6cf04b365c23d17fbf987844e6ed3a06e12cda978"},
      {v1::DTYPE_I8, 1001, 5,
       "92291336e4be0ccf2a09ee6dbd3ac15e5e5400e26db5d311ef32a18ef591455a"},
  };
  for (const Pinned& p : pinned) {
    INFO(v1::DType_Name(p.dtype) << " " << p.nbytes << " bytes");
    CHECK(Sha256Hex(SeededInput(p.dtype, p.nbytes, p.seed)) == p.sha256);
  }
}

TEST_CASE("the inputs in use are kept beyond the cap and the rest within it",
          "[inputs]") {
  InputCache cache(2 * kMiB);
  // A batch wanting more than the cap keeps all of it: its images hold it
  // anyway, and making it again for each image would cost a copy each.
  cache.MakeAll({Want(3 * kMiB, 1), Want(kMiB, 2)}, 2);
  CHECK(cache.bytes() == 4 * kMiB);
  const auto big = cache.Get(v1::DTYPE_BF16, 3 * kMiB, 1);
  CHECK(cache.Get(v1::DTYPE_BF16, 3 * kMiB, 1).get() == big.get());
  // The next batch's inputs come in; of the last batch's, only what fits
  // under the cap beside them stays (the oldest go first).
  cache.MakeAll({Want(kMiB, 3)}, 2);
  CHECK(cache.bytes() == 2 * kMiB);
  CHECK(cache.Get(v1::DTYPE_BF16, kMiB, 2) != nullptr);
  CHECK(cache.bytes() == 2 * kMiB);  // seed 2 was still kept
  // A batch as large as the cap drops everything else.
  cache.MakeAll({Want(2 * kMiB, 4)}, 1);
  CHECK(cache.bytes() == 2 * kMiB);
  // An input beyond the cap that no batch asked for is made, not kept.
  const auto lone = cache.Get(v1::DTYPE_BF16, 3 * kMiB, 5);
  CHECK(lone->size() == 3 * kMiB);
  CHECK(cache.bytes() == 2 * kMiB);
}

TEST_CASE("each user's last batch stays kept until it is released",
          "[inputs]") {
  InputCache cache(kMiB);
  // Two shapes searched at once, each past the cap alone.
  cache.MakeAll({Want(2 * kMiB, 1)}, 1, /*user=*/1);
  const auto first = cache.Get(v1::DTYPE_BF16, 2 * kMiB, 1);
  cache.MakeAll({Want(2 * kMiB, 2)}, 1, /*user=*/2);
  CHECK(cache.bytes() == 4 * kMiB);
  // The first shape's next batch finds its input kept, not made again.
  cache.MakeAll({Want(2 * kMiB, 1)}, 1, /*user=*/1);
  CHECK(cache.Get(v1::DTYPE_BF16, 2 * kMiB, 1).get() == first.get());
  CHECK(cache.bytes() == 4 * kMiB);
  // Once the first shape ends, its input goes with the next batch that
  // needs the room.
  cache.Release(1);
  cache.MakeAll({Want(2 * kMiB, 3)}, 1, /*user=*/2);
  CHECK(cache.bytes() == 2 * kMiB);
  CHECK(cache.Get(v1::DTYPE_BF16, 2 * kMiB, 1).get() != first.get());
}

TEST_CASE("a prefetched input is made once and taken by whoever asks",
          "[inputs]") {
  InputCache cache(4 * kMiB);
  cache.Prefetch({Want(kMiB, 1), Want(kMiB, 2)}, /*user=*/1);
  cache.Prefetch({Want(kMiB, 2)}, /*user=*/1);  // already being made
  CHECK(cache.prefetched() == 2);
  CHECK(cache.bytes() == 0);
  // The batch that asks takes both; nothing is made twice or left over.
  cache.MakeAll({Want(kMiB, 1), Want(kMiB, 2)}, 2, /*user=*/1);
  CHECK(cache.prefetched() == 0);
  CHECK(cache.bytes() == 2 * kMiB);
  CHECK(*cache.Get(v1::DTYPE_BF16, kMiB, 2) ==
        SeededInput(v1::DTYPE_BF16, kMiB, 2));
  // A single Get takes one too, with the values Get makes.
  cache.Prefetch({Want(kMiB, 3)}, /*user=*/2);
  CHECK(cache.prefetched() == 1);
  CHECK(*cache.Get(v1::DTYPE_BF16, kMiB, 3) ==
        SeededInput(v1::DTYPE_BF16, kMiB, 3));
  CHECK(cache.prefetched() == 0);
  // One already kept is not made again.
  cache.Prefetch({Want(kMiB, 3)}, /*user=*/2);
  CHECK(cache.prefetched() == 0);
}

TEST_CASE("a prefetch made before its user asks is not made again",
          "[inputs]") {
  InputCache cache(kMiB);  // smaller than the input
  cache.Prefetch({Want(2 * kMiB, 1)}, /*user=*/1);
  for (int i = 0; i < 10000 && cache.prefetched_ended() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(cache.prefetched_ended() == 1);
  cache.MakeAll({Want(2 * kMiB, 1)}, 1, /*user=*/1);
  CHECK(cache.made_bytes() == 2 * kMiB);
  CHECK(cache.bytes() == 2 * kMiB);
  CHECK(cache.prefetched() == 0);
}

TEST_CASE("a prefetched input is kept for its user beyond the cap",
          "[inputs]") {
  InputCache cache(kMiB);
  cache.Prefetch({Want(2 * kMiB, 1)}, /*user=*/1);
  // Another shape's batches go on meanwhile; once the prefetch has ended,
  // the next of them keeps it, though it is past the cap alone: its user
  // has not asked yet.
  for (int i = 0; i < 10000 && cache.prefetched() > 0; ++i) {
    cache.MakeAll({Want(kMiB / 2, 2)}, 1, /*user=*/2);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(cache.prefetched() == 0);
  CHECK(cache.bytes() == 2 * kMiB + kMiB / 2);
  const auto made = cache.Get(v1::DTYPE_BF16, 2 * kMiB, 1);
  cache.MakeAll({Want(2 * kMiB, 1)}, 1, /*user=*/1);
  CHECK(cache.Get(v1::DTYPE_BF16, 2 * kMiB, 1).get() == made.get());
  // Once its user has ended, it goes as any other.
  cache.Release(1);
  cache.MakeAll({Want(kMiB / 2, 3)}, 1, /*user=*/2);
  CHECK(cache.bytes() == kMiB / 2);
}

}  // namespace
}  // namespace irontune

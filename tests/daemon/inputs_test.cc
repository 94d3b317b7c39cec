#include "daemon/tune/inputs.h"

#include <catch2/catch.hpp>

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

}  // namespace
}  // namespace irontune

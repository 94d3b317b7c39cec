// The fleet store's figures kept per Timing (schema version 2), as the
// SQLite cache keeps them: which one is read, how a page of them is cut,
// and a store from before.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "daemon/fleet/fleet_rows.h"
#include "daemon/fleet/fleet_schema.h"
#include "daemon/fleet/fleet_store.h"
#include "daemon/store/cache_schema.h"
#include "tests/fleet/fleet_fixtures.h"

namespace irontune {
namespace {

using testing::Figure;
using testing::FreshStore;
using testing::OpenStore;
using testing::Strix;

CacheEntry At(int n, double t_step_us, FigureTiming timing) {
  CacheEntry e = Figure(n, t_step_us);
  e.timing = timing;
  return e;
}

// keys[0]'s figure's step time from `store`; -1 for none.
double Read(FleetStore& store, int n) {
  auto got = store.GetFigures(Strix(), {Figure(n, 0).key});
  REQUIRE(got.ok());
  return (*got)[0] ? (*got)[0]->t_step_us() : -1;
}

TEST_CASE("The store keeps a key's figures per Timing, the most precise read",
          "[fleet][pg]") {
  auto store = OpenStore(FreshStore(), "box a");
  auto counts = store->MergeFigures(Strix(), {At(1, 10.0, {8, 50})});
  REQUIRE(counts.ok());
  CHECK(counts->inserted == 1);
  // A shorter Timing is added beside it, not refused by it; the same
  // Timing again is present: the first stored stands.
  counts =
      store->MergeFigures(Strix(), {At(1, 20.0, {2, 3}), At(1, 30.0, {8, 50})});
  REQUIRE(counts.ok());
  CHECK(counts->inserted == 1);
  CHECK(counts->present == 1);
  CHECK(Read(*store, 1) == 10.0);
  // A more precise one is read from then on.
  REQUIRE(store->MergeFigures(Strix(), {At(1, 40.0, {16, 50})}).ok());
  CHECK(Read(*store, 1) == 40.0);
  // A Timing with one part 0 is refused.
  counts = store->MergeFigures(Strix(), {At(2, 1.0, {8, 0})});
  REQUIRE(counts.ok());
  CHECK(counts->inserted == 0);
  REQUIRE(counts->refused.size() == 1);
  CHECK_THAT(counts->refused[0], Catch::Contains("a Timing of 8 rounds x 0"));
}

TEST_CASE("A page of figures holds a key's Timings together, best first",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto a = OpenStore(c, "box a");
  auto b = OpenStore(c, "box b");
  // One transaction: written alike.
  REQUIRE(a->MergeFigures(Strix(), {At(1, 2.0, {2, 3}), At(1, 8.0, {8, 50}),
                                    At(2, 5.0, {8, 50})})
              .ok());
  auto page = b->FiguresAfter(Strix(), {}, 1);
  REQUIRE(page.ok());
  REQUIRE(page->size() == 2);
  CHECK((*page)[0].entry.key == Figure(1, 0).key);
  CHECK((*page)[0].entry.timing == FigureTiming{8, 50});
  CHECK((*page)[0].entry.measurement.t_step_us() == 8.0);
  CHECK((*page)[1].entry.timing == FigureTiming{2, 3});
  auto next = b->FiguresAfter(
      Strix(), {page->back().written, page->back().entry.key}, 1);
  REQUIRE(next.ok());
  REQUIRE(next->size() == 1);
  CHECK((*next)[0].entry.key == Figure(2, 0).key);
  // A box does not read its own figures back.
  CHECK(a->FiguresAfter(Strix(), {}, 10)->empty());
}

TEST_CASE("A version 1 store keeps its figures, their Timing unknown",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  {
    auto conn = pg::Connection::Open(c.conninfo, "the test store");
    REQUIRE(conn.ok());
    REQUIRE(MigrateFleetSchema(**conn, FleetMigrations().first(1), "old").ok());
    auto id = PartitionId(**conn, Strix());
    REQUIRE(id.ok());
    const CacheEntry old = Figure(1, 7.0, "performance");
    REQUIRE(
        (*conn)
            ->Exec("INSERT INTO irontune.figures(partition, toolchain, "
                   "key, row_schema, t_step_us, measurement, box) VALUES "
                   "($1, $2, $3, $4, 7, $5, 'old box')",
                   {pg::Param::Int(*id), pg::Param::Text(Strix().toolchain),
                    pg::Param::Text(old.key), pg::Param::Int(kCacheRowSchema),
                    pg::Param::Bytes(old.measurement.SerializeAsString())})
            .ok());
  }
  auto store = OpenStore(c, "box a");
  CHECK(store->schema().found == 1);
  CHECK(store->schema().version == kFleetSchemaVersion);
  CHECK(Read(*store, 1) == 7.0);
  auto page = store->FiguresAfter(Strix(), {}, 10);
  REQUIRE(page.ok());
  REQUIRE(page->size() == 1);
  CHECK_FALSE((*page)[0].entry.timing.known());
  // A figure of known Timing is added beside it and read first.
  auto counts = store->MergeFigures(Strix(), {At(1, 8.0, {2, 3})});
  REQUIRE(counts.ok());
  CHECK(counts->inserted == 1);
  CHECK(Read(*store, 1) == 8.0);
}

}  // namespace
}  // namespace irontune

// What the fleet's tests share: one throwaway PostgreSQL cluster for the
// test binary (a database per test), and small rows to store.
#ifndef IRONTUNE_TESTS_FLEET_FLEET_FIXTURES_H_
#define IRONTUNE_TESTS_FLEET_FLEET_FIXTURES_H_

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "daemon/fleet/fleet_store.h"
#include "daemon/fleet/fleet_url.h"
#include "tests/testing/pg_cluster.h"

namespace irontune::testing {

// The binary's cluster, started on first use. Where PostgreSQL is not
// installed the binary exits 77, which ctest reports as skipped.
inline PgCluster& Cluster() {
  static PgCluster* cluster = [] {
    auto* c = new PgCluster();
    if (!c->available()) {
      std::fprintf(stderr, "skipped: %s\n", c->why_unavailable().c_str());
      std::fflush(stderr);
      std::_Exit(77);
    }
    std::atexit([] { delete cluster; });
    return c;
  }();
  return *cluster;
}

// The URL of a fresh database of the cluster, over its unix socket.
inline std::string FreshUrl() {
  PgCluster& cluster = Cluster();
  return cluster.SocketUrl(cluster.NewDatabase());
}

// A connection to a fresh database of the cluster.
inline FleetConnection FreshStore() { return *ResolveFleetUrl(FreshUrl(), {}); }

// The store at `connection` as `name`; aborts the test on failure.
inline std::unique_ptr<FleetStore> OpenStore(const FleetConnection& connection,
                                             const std::string& name) {
  auto store = FleetStore::Open(connection, name);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    std::abort();
  }
  return std::move(*store);
}

inline FleetPartition Strix(PowerMode mode = PowerMode::kPerformance) {
  return {"npu-strix", mode, "fw 1.1.0; xrt 2.19.0; iron 0123abc"};
}

// A figure under a key made of `n`.
inline CacheEntry Figure(int n, double t_step_us,
                         const std::string& mode = "") {
  CacheEntry e;
  char key[40];
  std::snprintf(key, sizeof(key), "%032x", n);
  e.key = key;
  e.measurement.set_t_step_us(t_step_us);
  e.measurement.add_round_us(t_step_us);
  e.measurement.set_power_mode(mode);
  return e;
}

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_FLEET_FLEET_FIXTURES_H_

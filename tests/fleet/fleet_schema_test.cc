#include "daemon/fleet/fleet_schema.h"

#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "catch2/catch.hpp"
#include "daemon/fleet/fleet_store.h"
#include "tests/fleet/fleet_fixtures.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

using testing::Cluster;
using testing::FreshStore;

std::unique_ptr<pg::Connection> Connect(const FleetConnection& c) {
  auto conn = pg::Connection::Open(c.conninfo, "the test store");
  REQUIRE(conn.ok());
  return std::move(*conn);
}

TEST_CASE("An empty store is migrated once, then found current",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto first = FleetStore::Open(c, "box a");
  REQUIRE(first.ok());
  CHECK((*first)->schema().found == 0);
  CHECK((*first)->schema().version == kFleetSchemaVersion);
  CHECK((*first)->schema().migrated);

  auto second = FleetStore::Open(c, "box b");
  REQUIRE(second.ok());
  CHECK((*second)->schema().found == kFleetSchemaVersion);
  CHECK_FALSE((*second)->schema().migrated);

  auto conn = Connect(c);
  auto rows =
      conn->Exec("SELECT version, applied_by FROM irontune.schema_versions");
  REQUIRE(rows.ok());
  REQUIRE(rows->rows() == kFleetSchemaVersion);
  CHECK(rows->Text(0, 1) == "box a");
}

TEST_CASE("Processes starting together migrate once", "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  std::atomic<int> migrated{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> starters;
  for (int i = 0; i < 4; ++i) {
    starters.emplace_back([&, i] {
      auto store = FleetStore::Open(c, "box " + std::to_string(i));
      if (!store.ok()) {
        ++failed;
      } else if ((*store)->schema().migrated) {
        ++migrated;
      }
    });
  }
  for (std::thread& t : starters) t.join();
  CHECK(failed == 0);
  CHECK(migrated == 1);
  auto conn = Connect(c);
  auto n = conn->Exec("SELECT count(*) FROM irontune.schema_versions");
  REQUIRE(n.ok());
  CHECK(n->Int(0, 0).value() == kFleetSchemaVersion);
}

TEST_CASE("A store newer than the build is refused, naming both versions",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  REQUIRE(FleetStore::Open(c, "box").ok());
  auto conn = Connect(c);
  REQUIRE(conn->ExecScript("INSERT INTO irontune.schema_versions(version, "
                           "description, applied_by) VALUES (99, 'future', "
                           "'a newer irontuned')")
              .ok());
  auto refused = FleetStore::Open(c, "box");
  REQUIRE(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  const std::string message(refused.status().message());
  CHECK_THAT(
      message,
      Catch::Contains("schema version is 99") &&
          Catch::Contains("(" + std::to_string(kFleetSchemaVersion) + ")") &&
          Catch::Contains("the fleet store ("));
}

TEST_CASE("A failing migration step leaves the store as it was",
          "[fleet][pg]") {
  const FleetConnection c = FreshStore();
  auto conn = Connect(c);
  const FleetMigration steps[] = {
      {1, "a table", "CREATE TABLE irontune.first(x integer)"},
      {2, "a mistake", "CREATE TABLE irontune.second(x no_such_type)"},
  };
  auto result = MigrateFleetSchema(*conn, steps, "test");
  REQUIRE_FALSE(result.ok());
  CHECK_THAT(std::string(result.status().message()),
             Catch::Contains("schema version 2 (a mistake)"));
  CHECK(FleetSchemaVersion(*conn).value() == 0);
  auto first = conn->Exec("SELECT to_regclass('irontune.first') IS NULL");
  REQUIRE(first.ok());
  CHECK(first->Text(0, 0) == "t");
}

TEST_CASE("Credentials the store refuses stop the start, saying so",
          "[fleet][pg]") {
  testing::PgCluster& cluster = Cluster();
  const std::string db = cluster.NewDatabase();
  const std::string dir = e2e::TempDir("fleet-pw");
  const std::string wrong = dir + "/pgpass";
  std::ofstream(wrong) << "127.0.0.1:" << cluster.port()
                       << ":*:" << cluster.user() << ":not-the-password\n";
  chmod(wrong.c_str(), 0600);
  FleetUrlOptions options;
  options.password_file = wrong;
  auto c = ResolveFleetUrl(cluster.TcpUrl(db), options);
  REQUIRE(c.ok());
  auto refused = FleetStore::Open(*c, "box");
  REQUIRE(refused.status().code() == absl::StatusCode::kUnauthenticated);
  CHECK_THAT(std::string(refused.status().message()),
             Catch::Contains("refused the credentials") &&
                 !Catch::Contains("not-the-password"));

  options.password_file = cluster.password_file();
  auto right = ResolveFleetUrl(cluster.TcpUrl(db), options);
  REQUIRE(right.ok());
  CHECK(FleetStore::Open(*right, "box").ok());
}

TEST_CASE("The store is reached with TLS, its certificate verified",
          "[fleet][pg]") {
  testing::PgCluster& cluster = Cluster();
  REQUIRE_FALSE(cluster.ca_file().empty());
  const std::string db = cluster.NewDatabase();
  FleetUrlOptions options;
  options.password_file = cluster.password_file();
  auto c = ResolveFleetUrl(
      cluster.TcpUrl(db) +
          "?sslmode=verify-full&sslrootcert=" + cluster.ca_file(),
      options);
  REQUIRE(c.ok());
  auto store = FleetStore::Open(*c, "box");
  REQUIRE(store.ok());
  auto ssl = (*store)->connection().Exec(
      "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
  REQUIRE(ssl.ok());
  CHECK(ssl->Text(0, 0) == "t");

  // A certificate the store's is not signed by: refused, saying why.
  const std::string dir = e2e::TempDir("fleet-ca");
  const std::string other = dir + "/other.crt";
  REQUIRE(e2e::Run({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-keyout", dir + "/other.key", "-out", other,
                    "-days", "2", "-subj", "/CN=127.0.0.1"},
                   dir, 60)
              .code == 0);
  auto wrong = ResolveFleetUrl(
      cluster.TcpUrl(db) + "?sslmode=verify-full&sslrootcert=" + other,
      options);
  REQUIRE(wrong.ok());
  auto refused = FleetStore::Open(*wrong, "box");
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.status().message()),
             Catch::Contains("certificate"));
}

TEST_CASE("A store that cannot be reached is Unavailable", "[fleet][pg]") {
  auto c = ResolveFleetUrl(
      "postgresql:///x?host=/nonexistent-irontune-dir&connect_timeout=2", {});
  REQUIRE(c.ok());
  auto down = FleetStore::Open(*c, "box");
  REQUIRE(down.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(down.status().message()),
             Catch::Contains("cannot be reached"));
}

}  // namespace
}  // namespace irontune

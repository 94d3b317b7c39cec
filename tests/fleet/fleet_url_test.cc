#include "daemon/fleet/fleet_url.h"

#include <sys/stat.h>

#include <fstream>

#include "catch2/catch.hpp"
#include "tests/testing/process.h"

namespace irontune {
namespace {

TEST_CASE("A fleet URL with a password is refused, pointing to a passfile",
          "[fleet]") {
  auto r = ResolveFleetUrl("postgresql://box:hunter2@db.lab/irontune", {});
  REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(r.status().message()),
             Catch::Contains("holds a password") &&
                 Catch::Contains("--fleet-password-file"));
  CHECK_THAT(std::string(r.status().message()), !Catch::Contains("hunter2"));
  auto kv = ResolveFleetUrl("host=/run/pg dbname=x password=hunter2", {});
  CHECK(kv.status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("A remote store is reached with TLS", "[fleet]") {
  auto plain =
      ResolveFleetUrl("postgresql://box@db.lab/irontune?sslmode=prefer", {});
  REQUIRE(plain.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(plain.status().message()),
             Catch::Contains("sslmode=prefer") && Catch::Contains("db.lab"));

  auto implied = ResolveFleetUrl("postgresql://box@db.lab/irontune", {});
  REQUIRE(implied.ok());
  CHECK_THAT(implied->conninfo, Catch::Contains("sslmode='verify-full'"));
  CHECK(implied->display == "host=db.lab dbname=irontune user=box");

  auto kept = ResolveFleetUrl(
      "postgresql://box@db.lab/irontune?sslmode=verify-ca&connect_timeout=9",
      {});
  REQUIRE(kept.ok());
  CHECK_THAT(kept->conninfo, Catch::Contains("sslmode='verify-ca'") &&
                                 Catch::Contains("connect_timeout='9'"));

  // One remote host among several is enough to require it.
  auto multi = ResolveFleetUrl(
      "postgresql://localhost,db2.lab/irontune?sslmode=disable", {});
  CHECK(multi.status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("A store on this box needs no TLS", "[fleet]") {
  for (const char* url : {"postgresql:///irontune?host=/run/postgresql",
                          "postgresql://box@localhost/irontune?sslmode=disable",
                          "postgresql://box@127.0.0.1:5433/irontune",
                          "postgresql://[::1]/x", "dbname=irontune"}) {
    auto r = ResolveFleetUrl(url, {});
    INFO(url);
    REQUIRE(r.ok());
    CHECK_THAT(r->conninfo, !Catch::Contains("verify-full"));
    CHECK_THAT(r->conninfo, Catch::Contains("connect_timeout='5'") &&
                                Catch::Contains("tcp_user_timeout='30000'"));
  }
}

TEST_CASE("A fleet URL that does not parse is named", "[fleet]") {
  auto r = ResolveFleetUrl("postgresql://db.lab/x?no_such_option=1", {});
  REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(r.status().message()),
             Catch::StartsWith("--fleet: the URL does not parse") &&
                 Catch::Contains("no_such_option"));
  CHECK(ResolveFleetUrl("nokey", {}).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(ResolveFleetUrl("  ", {}).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("The password file must exist and be private", "[fleet]") {
  const std::string dir = e2e::TempDir("fleet-url");
  const std::string path = dir + "/pgpass";
  std::ofstream(path) << "db.lab:5432:*:box:secret\n";
  chmod(path.c_str(), 0640);
  FleetUrlOptions options;
  options.password_file = path;
  auto open = ResolveFleetUrl("postgresql://box@db.lab/x", options);
  REQUIRE(open.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(open.status().message()),
             Catch::Contains("others may read it"));

  chmod(path.c_str(), 0600);
  auto ok = ResolveFleetUrl("postgresql://box@db.lab/x", options);
  REQUIRE(ok.ok());
  CHECK_THAT(ok->conninfo, Catch::Contains("passfile='" + path + "'"));
  CHECK_THAT(ok->display, !Catch::Contains("secret"));

  options.password_file = dir + "/missing";
  CHECK(ResolveFleetUrl("postgresql://box@db.lab/x", options).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("Quotes and backslashes in a URL's values survive", "[fleet]") {
  auto r = ResolveFleetUrl(
      "host=/run/pg dbname='it\\'s' application_name=a\\\\b", {});
  REQUIRE(r.ok());
  CHECK_THAT(r->conninfo, Catch::Contains("dbname='it\\'s'"));
  CHECK_THAT(r->conninfo, Catch::Contains("application_name='a\\\\b'"));
}

}  // namespace
}  // namespace irontune

// Where the daemon is, how long calls may take, and how failures read.
#include "client/remote.h"

#include <catch2/catch.hpp>

namespace irontune {
namespace {

TEST_CASE("the server is --server, else IRONTUNE_SERVER, else the default") {
  CHECK(ResolveServer("localhost:7070", "unix:/x.sock") == "localhost:7070");
  CHECK(ResolveServer("", "unix:/x.sock") == "unix:/x.sock");
  CHECK(ResolveServer("", "") == "unix:/run/irontune/irontuned.sock");
}

TEST_CASE("a --timeout overrides the command's default, 0 is none") {
  CHECK(ResolveTimeout(-1, kUnaryTimeoutS) == kUnaryTimeoutS);
  CHECK(ResolveTimeout(0, kUnaryTimeoutS) == 0);
  CHECK(ResolveTimeout(5, kAutotuneTimeoutS) == 5);
  CHECK(kAutotuneTimeoutS == 0);
}

TEST_CASE("errors from the daemon keep its field path") {
  std::string m =
      DescribeRpcError(absl::InvalidArgumentError(
                           "calls[0].recording.steps[3].op: no operator 7"),
                       "unix:/s");
  CHECK(m ==
        "irontuned refused the request: calls[0].recording.steps[3].op: "
        "no operator 7");
  // The daemon's own UNAVAILABLE (the NPU held elsewhere) is not a missing
  // daemon.
  std::string held = DescribeRpcError(absl::UnavailableError("NPU held"), "x");
  CHECK_THAT(held, Catch::Contains("UNAVAILABLE: NPU held"));
  CHECK_THAT(held, !Catch::Contains("systemctl"));
}

}  // namespace
}  // namespace irontune

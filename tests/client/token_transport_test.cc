// A token never travels in clear (client/remote.h, client/rpc.h): plaintext
// FakeTuner listeners stand in for daemons near and far, and each asserts
// on the "authorization" metadata it saw.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "client/cli.h"
#include "client/remote.h"
#include "client/rpc.h"
#include "tests/client/fake_tuner.h"

namespace irontune {
namespace {

constexpr char kToken[] = "s3cret-token-0123456789";
const std::string kBearer = std::string("Bearer ") + kToken;

struct Run {
  int code;
  std::string out;
  std::string err;
};

// `irontune-client status` with `flags` and $IRONTUNE_SERVER `server`,
// $IRONTUNE_TOKEN kToken.
Run Status(std::vector<std::string> flags, const std::string& server = "") {
  flags.insert(flags.begin(), "irontune-client");
  flags.insert(flags.end(), {"--timeout", "5", "status"});
  std::vector<const char*> argv;
  for (const std::string& a : flags) argv.push_back(a.c_str());
  ClientEnvironment env;
  env.server = server;
  env.token = kToken;
  std::ostringstream out, err;
  const int code =
      RunClient(static_cast<int>(argv.size()), argv.data(), out, err, env);
  return {code, out.str(), err.str()};
}

// An IPv4 address of this host that is not loopback; "" when it has none.
std::string NonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const in_addr addr = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr;
    if ((ntohl(addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &addr, text, sizeof text)) found = text;
  }
  freeifaddrs(list);
  return found;
}

TEST_CASE("servers on this box, by their spelling") {
  for (const char* near :
       {"unix:/run/irontune/irontuned.sock", "unix:rel.sock",
        "unix-abstract:irontune", "localhost:7070", "LocalHost:7070",
        "127.0.0.1:7070", "127.1.2.3:1", "[::1]:7070", "localhost"}) {
    INFO(near);
    CHECK(IsSameHostServer(near));
  }
  for (const char* far :
       {"npu-box:7070", "192.0.2.7:7070", "[2001:db8::1]:7070",
        "[::ffff:127.0.0.1]:1", "dns:///localhost:7070", "ipv4:127.0.0.1:1",
        "localhost.example:1", "128.0.0.1:1", "[::1", ""}) {
    INFO(far);
    CHECK_FALSE(IsSameHostServer(far));
  }
}

TEST_CASE("a --tls-server-name alone means TLS") {
  RemoteFlags remote;
  remote.tls_server_name = "npu-box.example";
  absl::StatusOr<ConnectOptions> options =
      ResolveConnectOptions("npu-box:7070", remote, ClientEnvironment());
  REQUIRE(options.ok());
  CHECK(options->tls);
  CHECK(options->tls_server_name == "npu-box.example");
}

TEST_CASE("a token for a remote host without TLS is refused, naming the way") {
  ClientEnvironment env;
  env.token = kToken;
  absl::StatusOr<ConnectOptions> refused =
      ResolveConnectOptions("npu-box:7070", RemoteFlags(), env);
  REQUIRE(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(refused.status().message()),
             Catch::Contains("IRONTUNE_TOKEN") &&
                 Catch::Contains("npu-box:7070") &&
                 Catch::Contains("--tls-ca") && Catch::Contains("--tls"));
  CHECK_THAT(std::string(refused.status().message()), !Catch::Contains(kToken));
  // Without a token nothing secret goes: plaintext is allowed.
  CHECK(ResolveConnectOptions("npu-box:7070", RemoteFlags(), {}).ok());
  RemoteFlags tls;
  tls.tls = true;
  absl::StatusOr<ConnectOptions> over_tls =
      ResolveConnectOptions("npu-box:7070", tls, env);
  REQUIRE(over_tls.ok());
  CHECK(over_tls->token == kToken);
  for (const char* near : {"unix:/x.sock", "127.0.0.1:1", "localhost:1"}) {
    absl::StatusOr<ConnectOptions> ok =
        ResolveConnectOptions(near, RemoteFlags(), env);
    REQUIRE(ok.ok());
    CHECK(ok->token == kToken);
    CHECK_FALSE(ok->tls);
  }
}

TEST_CASE("a token goes to a unix socket and to loopback") {
  FakeServer unix_socket;
  Run over_unix = Status({"--server", unix_socket.address()});
  INFO(over_unix.err);
  CHECK(over_unix.code == kExitOk);
  CHECK(unix_socket.service().status_authorizations() ==
        std::vector<std::string>{kBearer});

  FakeServer loopback("127.0.0.1");
  Run by_address = Status({"--server", loopback.address()});
  INFO(by_address.err);
  CHECK(by_address.code == kExitOk);
  // From the environment, by name.
  Run by_name = Status({}, "localhost:" + std::to_string(loopback.port()));
  INFO(by_name.err);
  CHECK(by_name.code == kExitOk);
  CHECK(loopback.service().status_authorizations() ==
        std::vector<std::string>{kBearer, kBearer});
}

TEST_CASE(
    "a plaintext listener the client takes for remote never sees the "
    "token") {
  FakeServer listener("127.0.0.1");
  // ipv4:127.0.0.1:PORT reaches the listener, but is not spelled as
  // loopback: it stands in for npu-box:PORT.
  const std::string remote =
      "ipv4:127.0.0.1:" + std::to_string(listener.port());
  Run flag = Status({"--server", remote});
  CHECK(flag.code == kExitError);
  CHECK_THAT(flag.err, Catch::Contains("not sending the token") &&
                           Catch::Contains("--tls-ca"));
  Run env = Status({}, remote);
  CHECK(env.code == kExitError);
  CHECK_THAT(env.err, Catch::Contains("IRONTUNE_TOKEN"));
  CHECK(listener.service().status_authorizations().empty());
}

TEST_CASE(
    "a --tls-server-name alone speaks TLS, so plaintext never sees the "
    "token") {
  FakeServer listener("127.0.0.1");
  Run run = Status(
      {"--server", listener.address(), "--tls-server-name", "localhost"});
  CHECK(run.code == kExitError);  // a TLS handshake with a plaintext server
  CHECK(listener.service().status_authorizations().empty());
}

TEST_CASE(
    "gRPC itself keeps a token off a plaintext channel to a peer "
    "off loopback") {
  const std::string address = NonLoopbackAddress();
  if (address.empty()) {
    WARN("this host has no non-loopback IPv4 address: not checked");
    return;
  }
  // The host's own address stands in for a remote daemon; ConnectTuner is
  // given the token without TLS, as no command line can give it.
  FakeServer listener(address);
  ConnectOptions options;
  options.token = kToken;
  std::unique_ptr<TunerConnection> tuner =
      ConnectTuner(listener.address(), options);
  absl::StatusOr<v1::StatusResponse> status =
      tuner->GetStatus(v1::GetStatusRequest(), 5);
  CHECK(status.status().code() == absl::StatusCode::kUnavailable);
  CHECK(listener.service().status_authorizations().empty());
  // Without a token the same listener is reached in plaintext.
  absl::StatusOr<v1::StatusResponse> anonymous =
      ConnectTuner(listener.address())->GetStatus(v1::GetStatusRequest(), 5);
  CHECK(anonymous.ok());
  CHECK(listener.service().status_authorizations() ==
        std::vector<std::string>{""});
}

}  // namespace
}  // namespace irontune

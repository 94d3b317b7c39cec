#include "daemon/edge/auth.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "daemon/base/sha256.h"
#include "daemon/edge/message_size.h"
#include "daemon/edge/refusal_log.h"
#include "daemon/edge/tls.h"
#include "daemon/scheduler/admission.h"

namespace irontune {
namespace {

const std::string kCiToken = "ci-secret-0123456789";
const std::string kOpsToken = "ops-secret-9876543210";

std::string TokensText() {
  return "# irontune tokens\n\n"
         "ci submit " +
         Sha256Hex(kCiToken) +
         "\n"
         "  ops   admin  " +
         Sha256Hex(kOpsToken) + "  \n";
}

TEST_CASE("auth: a tokens file parses into names, roles and hashes") {
  absl::StatusOr<TokenTable> table = TokenTable::Parse(TokensText(), "tokens");
  REQUIRE(table.ok());
  CHECK(table->size() == 2);
  const TokenEntry* ci = table->Find(kCiToken);
  REQUIRE(ci != nullptr);
  CHECK(ci->name == "ci");
  CHECK(ci->role == Role::kSubmit);
  const TokenEntry* ops = table->Find("  " + kOpsToken + "\n");
  REQUIRE(ops != nullptr);
  CHECK(ops->name == "ops");
  CHECK(ops->role == Role::kAdmin);
  CHECK(table->Find("not-a-token") == nullptr);
  CHECK(table->Find("") == nullptr);
  // The hash itself is not a token.
  CHECK(table->Find(Sha256Hex(kCiToken)) == nullptr);
}

TEST_CASE("auth: a bad tokens file is refused naming the file and line") {
  const std::string hash = Sha256Hex("x");
  struct Case {
    std::string text;
    std::string error;
  };
  const Case cases[] = {
      {"ci submit\n", "tokens:1: expected NAME ROLE SHA256, found 2 fields"},
      {"# c\nci root " + hash + "\n", "tokens:2: role \"root\""},
      {"ci submit abc\n", "tokens:1: \"abc\" is not a SHA-256"},
      {"ci submit " + hash.substr(1) + "g\n", "tokens:1:"},
      {"c/i submit " + hash + "\n", "tokens:1: name \"c/i\""},
      {"ci submit " + hash + "\nci admin " + Sha256Hex("y") + "\n",
       "tokens:2: name ci appears twice"},
      {"a submit " + hash + "\nb admin " + hash + "\n",
       "tokens:2: this hash appears twice"},
      {"# nothing\n\n", "tokens: no tokens"},
      {"ci submit " + hash + " extra\n", "found 4 fields"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<TokenTable> table = TokenTable::Parse(c.text, "tokens");
    REQUIRE_FALSE(table.ok());
    CHECK(table.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(table.status().message()), Catch::Contains(c.error));
  }
}

TEST_CASE("auth: an upper-case hash is accepted as the same hash") {
  std::string upper = Sha256Hex(kCiToken);
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  absl::StatusOr<TokenTable> table =
      TokenTable::Parse("ci submit " + upper + "\n", "t");
  REQUIRE(table.ok());
  CHECK(table->Find(kCiToken) != nullptr);
}

TEST_CASE("auth: TokenLine makes a line the parser reads back") {
  absl::StatusOr<std::string> line =
      TokenLine("ci-runner", Role::kSubmit, kCiToken + "\n");
  REQUIRE(line.ok());
  CHECK(*line == "ci-runner submit " + Sha256Hex(kCiToken));
  absl::StatusOr<TokenTable> table = TokenTable::Parse(*line, "t");
  REQUIRE(table.ok());
  CHECK(table->Find(kCiToken)->name == "ci-runner");
  CHECK_FALSE(TokenLine("bad name", Role::kAdmin, "x").ok());
  CHECK_FALSE(TokenLine("ci", Role::kAdmin, " \n").ok());
}

TEST_CASE("auth: a missing tokens file is refused naming it") {
  absl::StatusOr<TokenTable> table =
      TokenTable::Load("/nonexistent/irontune/tokens");
  REQUIRE_FALSE(table.ok());
  CHECK_THAT(std::string(table.status().message()),
             Catch::Contains("/nonexistent/irontune/tokens"));
}

TEST_CASE("auth: each Rpc is named as tuner.proto names its method") {
  const std::vector<std::pair<Rpc, std::string>> names = {
      {Rpc::kAutotune, "Autotune"},       {Rpc::kMeasure, "Measure"},
      {Rpc::kGetStatus, "GetStatus"},     {Rpc::kListJobs, "ListJobs"},
      {Rpc::kCancel, "Cancel"},           {Rpc::kWatch, "Watch"},
      {Rpc::kGetResult, "GetResult"},     {Rpc::kExportCache, "ExportCache"},
      {Rpc::kImportCache, "ImportCache"}, {Rpc::kListImports, "ListImports"},
      {Rpc::kDropImport, "DropImport"},   {Rpc::kClearCache, "ClearCache"},
  };
  for (const auto& [rpc, name] : names)
    CHECK(std::string(RpcName(rpc)) == name);
  // The service has no method the enum lacks.
  CHECK(std::string(RpcName(static_cast<Rpc>(names.size()))) == "?");
}

TEST_CASE("auth: the role table") {
  for (Rpc rpc : {Rpc::kAutotune, Rpc::kMeasure, Rpc::kGetStatus,
                  Rpc::kListJobs, Rpc::kCancel, Rpc::kWatch, Rpc::kGetResult}) {
    INFO(RpcName(rpc));
    CHECK(RequiredRole(rpc) == Role::kSubmit);
  }
  for (Rpc rpc : {Rpc::kExportCache, Rpc::kImportCache, Rpc::kListImports,
                  Rpc::kDropImport, Rpc::kClearCache}) {
    INFO(RpcName(rpc));
    CHECK(RequiredRole(rpc) == Role::kAdmin);
  }
  Caller submit;
  submit.name = "ci";
  submit.peer = "ipv4:10.0.0.1:5000";
  submit.has_token = submit.named = true;
  Caller admin = submit;
  admin.name = "ops";
  admin.role = Role::kAdmin;
  admin.peer = "ipv4:10.0.0.2:5000";
  CHECK(Authenticator::Authorize(submit, Rpc::kAutotune).ok());
  absl::Status denied = Authenticator::Authorize(submit, Rpc::kImportCache);
  CHECK(denied.code() == absl::StatusCode::kPermissionDenied);
  CHECK_THAT(std::string(denied.message()),
             Catch::Contains("ci@ipv4:10.0.0.1:5000") &&
                 Catch::Contains("ImportCache") && Catch::Contains("admin"));
  CHECK(Authenticator::Authorize(admin, Rpc::kImportCache).ok());
  CHECK(Authenticator::Authorize(admin, Rpc::kDropImport).ok());
  CHECK(Authenticator::Authorize(submit, Rpc::kClearCache).code() ==
        absl::StatusCode::kPermissionDenied);
  CHECK(Authenticator::Authorize(admin, Rpc::kClearCache).ok());
  // Jobs: one's own, or any as admin.
  CHECK(Authenticator::MayTouchJob(submit, Rpc::kCancel, "j1", "ci").ok());
  CHECK(
      Authenticator::MayTouchJob(submit, Rpc::kCancel, "j1", "other").code() ==
      absl::StatusCode::kPermissionDenied);
  CHECK(Authenticator::MayTouchJob(submit, Rpc::kWatch, "j1", "other").code() ==
        absl::StatusCode::kPermissionDenied);
  CHECK(Authenticator::MayTouchJob(admin, Rpc::kCancel, "j1", "other").ok());
}

TEST_CASE("auth: with tokens every caller needs a known bearer token") {
  absl::StatusOr<TokenTable> table = TokenTable::Parse(TokensText(), "t");
  REQUIRE(table.ok());
  const Authenticator auth(*std::move(table));
  const std::string peer = "ipv4:192.0.2.7:41000";
  absl::StatusOr<Caller> none = auth.Authenticate(std::nullopt, peer);
  CHECK(none.status().code() == absl::StatusCode::kUnauthenticated);
  // Local callers too: a tokens file applies to everyone.
  CHECK(auth.Authenticate(std::nullopt, "unix:").status().code() ==
        absl::StatusCode::kUnauthenticated);
  CHECK(auth.Authenticate("Bearer wrong", peer).status().code() ==
        absl::StatusCode::kUnauthenticated);
  CHECK(auth.Authenticate(kCiToken, peer).status().code() ==
        absl::StatusCode::kUnauthenticated);
  absl::StatusOr<Caller> ci = auth.Authenticate("Bearer " + kCiToken, peer);
  REQUIRE(ci.ok());
  CHECK(ci->name == "ci");
  CHECK(ci->role == Role::kSubmit);
  CHECK(ci->peer == peer);
  CHECK(ci->ToString() == "ci@" + peer);
}

const char* const kLoopbackPeers[] = {"ipv4:127.0.0.1:5000",
                                      "ipv4:127.8.9.10:1",
                                      "ipv6:[::1]:5000",
                                      "ipv6:%5B::1%5D:5000",
                                      "ipv6:[::ffff:127.0.0.1]:5000",
                                      "unix-abstract:irontune"};

TEST_CASE("auth: without tokens only unix socket callers are admin") {
  const Authenticator auth(std::nullopt);
  for (const char* peer : {"unix:", "unix:/run/irontune/irontuned.sock"}) {
    INFO(peer);
    absl::StatusOr<Caller> caller = auth.Authenticate(std::nullopt, peer);
    REQUIRE(caller.ok());
    CHECK(caller->role == Role::kAdmin);
    CHECK_FALSE(caller->has_token);
  }
  // Loopback TCP and abstract sockets reach every local user: not local.
  for (const char* peer : kLoopbackPeers) {
    INFO(peer);
    CHECK(auth.Authenticate(std::nullopt, peer).status().code() ==
          absl::StatusCode::kUnauthenticated);
  }
  for (const char* peer :
       {"ipv4:10.1.2.3:5000", "ipv4:128.0.0.1:5000", "ipv6:[2001:db8::1]:5000",
        "ipv6:[::ffff:10.0.0.1]:1", "ipv4:", ""}) {
    INFO(peer);
    CHECK(auth.Authenticate("Bearer x", peer).status().code() ==
          absl::StatusCode::kUnauthenticated);
  }
}

TEST_CASE("auth: --allow-loopback-without-tokens makes loopback local") {
  const Authenticator auth(std::nullopt, /*loopback_admin=*/true);
  for (const char* peer : kLoopbackPeers) {
    INFO(peer);
    absl::StatusOr<Caller> caller = auth.Authenticate(std::nullopt, peer);
    REQUIRE(caller.ok());
    CHECK(caller->role == Role::kAdmin);
  }
  CHECK(auth.Authenticate(std::nullopt, "ipv4:10.1.2.3:5000").status().code() ==
        absl::StatusCode::kUnauthenticated);
  // What the call gate asks: locality from the listener, not the peer.
  CHECK(auth.AuthenticateOn(std::nullopt, true, "").ok());
  CHECK(auth.AuthenticateOn(std::nullopt, false, "").status().code() ==
        absl::StatusCode::kUnauthenticated);
}

TEST_CASE("auth: an empty or short token is refused") {
  // The SHA-256 of "" is what hashing a missing file gives.
  absl::StatusOr<TokenTable> empty =
      TokenTable::Parse("ci admin " + Sha256Hex("") + "\n", "tokens");
  CHECK(empty.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(empty.status().message()),
             Catch::Contains("tokens:1") && Catch::Contains("empty token"));
  absl::StatusOr<std::string> line =
      TokenLine("ci", Role::kSubmit, std::string(kMinTokenLength - 1, 'a'));
  CHECK(line.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(line.status().message()),
             Catch::Contains("fewer than 16"));
  CHECK(TokenLine("ci", Role::kSubmit, std::string(kMinTokenLength, 'a')).ok());
  // An empty bearer value never matches, whatever the file holds.
  absl::StatusOr<TokenTable> table = TokenTable::Parse(TokensText(), "t");
  REQUIRE(table.ok());
  const Authenticator auth(*std::move(table));
  for (const char* header : {"Bearer ", "Bearer    ", "bearer "}) {
    absl::Status s = auth.Authenticate(header, "unix:").status();
    CHECK(s.code() == absl::StatusCode::kUnauthenticated);
    CHECK_THAT(std::string(s.message()), Catch::Contains("empty"));
  }
}

TEST_CASE("auth: refusals' log lines are rate-limited with a count") {
  RefusalLog log(absl::Seconds(1));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  CHECK(log.Note("refused A", t0) == std::optional<std::string>("refused A"));
  for (int i = 0; i < 2999; ++i) {
    CHECK_FALSE(
        log.Note("refused B", t0 + absl::Milliseconds(i % 999)).has_value());
  }
  std::optional<std::string> next =
      log.Note("refused C", t0 + absl::Seconds(1));
  REQUIRE(next.has_value());
  CHECK(*next == "refused C (and 2999 more refused since the last such line)");
  CHECK(log.total() == 3001);
}

TEST_CASE("admission: small RPCs have their own request limit") {
  AdmissionLimits limits;
  limits.small_message_bytes = 1000;
  CHECK(CheckSmallRequest(Rpc::kGetStatus, 1000, limits).ok());
  absl::Status s = CheckSmallRequest(Rpc::kGetStatus, 1001, limits);
  CHECK(s.code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("GetStatus") &&
                 Catch::Contains("--max-small-message-bytes"));
  for (Rpc big : {Rpc::kAutotune, Rpc::kMeasure, Rpc::kImportCache}) {
    CHECK(IsBigMessageRpc(big));
    CHECK(CheckSmallRequest(big, 1 << 30, limits).ok());
  }
}

TEST_CASE("tls: which listen addresses are loopback") {
  CHECK(TransportOf("unix:/run/irontune/irontuned.sock") == Transport::kUnix);
  for (const char* a :
       {"127.0.0.1:0", "127.1.2.3:50051", "localhost:50051", "[::1]:50051",
        "ipv4:127.0.0.1:1", "dns:///localhost:1", "LOCALHOST:1"}) {
    INFO(a);
    CHECK(TransportOf(a) == Transport::kLoopbackTcp);
  }
  for (const char* a : {"0.0.0.0:50051", "[::]:50051", "10.0.0.1:1",
                        "npu-box.example:50051", "128.0.0.1:1", ":50051"}) {
    INFO(a);
    CHECK(TransportOf(a) == Transport::kRemoteTcp);
  }
}

TEST_CASE("tls: plaintext off loopback needs --insecure or TLS") {
  std::vector<std::string> warnings;
  const std::vector<std::string> local = {"unix:/tmp/s", "127.0.0.1:0"};
  CHECK(CheckListen(local, false, false, true, false, &warnings).ok());
  CHECK(warnings.empty());
  const std::vector<std::string> remote = {"unix:/tmp/s", "0.0.0.0:50051"};
  absl::Status refused =
      CheckListen(remote, false, false, true, false, &warnings);
  CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.message()),
             Catch::Contains("0.0.0.0:50051") &&
                 Catch::Contains("--tls-cert") &&
                 Catch::Contains("--insecure"));
  CHECK(CheckListen(remote, true, false, true, false, &warnings).ok());
  CHECK(warnings.empty());
  CHECK(CheckListen(remote, false, true, true, false, &warnings).ok());
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("--insecure"));
}

TEST_CASE("tls: without tokens, loopback and abstract need a flag") {
  CHECK(TransportOf("unix-abstract:irontune") == Transport::kUnixAbstract);
  for (const char* address : {"127.0.0.1:0", "[::1]:1", "unix-abstract:x"}) {
    INFO(address);
    std::vector<std::string> warnings;
    absl::Status refused =
        CheckListen({address}, false, false, false, false, &warnings);
    CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(refused.message()),
               Catch::Contains(address) &&
                   Catch::Contains("--allow-loopback-without-tokens"));
    CHECK(CheckListen({address}, false, false, true, false, &warnings).ok());
    CHECK(warnings.empty());
    CHECK(CheckListen({address}, false, false, false, true, &warnings).ok());
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains("admin"));
  }
  std::vector<std::string> warnings;
  CHECK(
      CheckListen({"unix:/tmp/s"}, false, false, false, false, &warnings).ok());
  CHECK(warnings.empty());
}

// A file written with `mode` in a fresh directory under the build tree.
class ModeFile {
 public:
  ModeFile(const std::string& name, const std::string& text, mode_t mode)
      : path_(std::string(IRONTUNE_BINARY_DIR) + "/" + name) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << text;
    REQUIRE(::chmod(path_.c_str(), mode) == 0);
  }
  ~ModeFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Whoever can write the tokens file can make a token of their own admin.
TEST_CASE("auth: a tokens file other users may write is refused") {
  const std::string line = *TokenLine("ci-runner", Role::kSubmit,
                                      "a-token-of-sixteen-chars-or-more");
  for (mode_t mode : {0620, 0602, 0666}) {
    ModeFile file("tokens_mode_test", line + "\n", mode);
    absl::StatusOr<TokenTable> table = TokenTable::Load(file.path());
    INFO(mode);
    REQUIRE_FALSE(table.ok());
    CHECK(table.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(
        std::string(table.status().message()),
        Catch::Contains("writable by other users; chmod go-w " + file.path()));
  }
  for (mode_t mode : {0600, 0640, 0644}) {
    ModeFile file("tokens_mode_test", line + "\n", mode);
    INFO(mode);
    CHECK(TokenTable::Load(file.path()).ok());
  }
}

TEST_CASE("tls: a key other users may read or write is refused") {
  const std::string pem = "-----BEGIN X-----\nAAAA\n-----END X-----\n";
  ModeFile cert("tls_mode_test.pem", pem, 0644);
  for (mode_t mode : {0604, 0644, 0660}) {
    ModeFile key("tls_mode_test.key", pem, mode);
    INFO(mode);
    absl::StatusOr<std::optional<TlsConfig>> tls =
        LoadTls(TlsFiles{cert.path(), key.path(), ""});
    REQUIRE_FALSE(tls.ok());
    CHECK(tls.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(tls.status().message()),
               Catch::StartsWith("--tls-key " + key.path() + ": mode 0"));
  }
  ModeFile key("tls_mode_test.key", pem, 0640);
  CHECK(LoadTls(TlsFiles{cert.path(), key.path(), ""}).ok());
  ModeFile open_cert("tls_mode_test_w.pem", pem, 0666);
  CHECK(LoadTls(TlsFiles{open_cert.path(), key.path(), ""}).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("tls: a certificate without its key is refused") {
  absl::StatusOr<std::optional<TlsConfig>> none = LoadTls(TlsFiles{});
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  absl::StatusOr<std::optional<TlsConfig>> half =
      LoadTls(TlsFiles{"/some/cert.pem", "", ""});
  CHECK(half.status().code() == absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::optional<TlsConfig>> missing =
      LoadTls(TlsFiles{"/nonexistent/c.pem", "/nonexistent/k.pem", ""});
  CHECK_THAT(std::string(missing.status().message()),
             Catch::Contains("--tls-cert /nonexistent/c.pem"));
}

}  // namespace
}  // namespace irontune

// End to end, security: the real irontuned and irontune-client as
// subprocesses. The unix socket's mode and group, plaintext refused off
// loopback, TLS on loopback with a certificate made here by the openssl
// command (CN localhost, SAN localhost and 127.0.0.1), bearer tokens and
// their roles, job ownership by token name, imports listed and dropped,
// and the CI job of docs/ci.md. Every wait is a bound, never an assertion.
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "irontune/v1/tuner.grpc.pb.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/process.h"
#include "tests/testing/raw_grpc.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune::e2e {
namespace {

const std::string kDaemon = IRONTUNE_IRONTUNED;
const std::string kClient = IRONTUNE_CLIENT;
const std::string kSource = IRONTUNE_SOURCE_DIR;
const std::string kExample = kSource + "/examples/llama-3.2-1b.rec";
const std::string kOpenssl = "/usr/bin/openssl";

const std::string kCiToken = "ci-7f3a9c1e5b2d4f6a8c0e";
const std::string kOtherToken = "other-1b3d5f7a9c2e4f6a";
const std::string kOpsToken = "ops-9e8d7c6b5a4f3e2d1c0b";

std::string Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// testing::AddSiluCalls as dir/small.txtpb.
std::string WriteSmall(const std::string& dir) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(testing::AddSiluCalls(), &text);
  return Write(dir + "/small.txtpb", text);
}

void Openssl(const std::string& dir, std::vector<std::string> args) {
  REQUIRE(std::filesystem::exists(kOpenssl));  // scripts/install-deps
  args.insert(args.begin(), kOpenssl);
  Result r = Run(args, dir, 60);
  INFO(r.err);
  REQUIRE(r.code == 0);
}

// A CA (ca.pem) and, signed by it, a server certificate for localhost and
// 127.0.0.1 (server.pem, server.key) and a client certificate (client.pem,
// client.key), all under `dir`.
void MakeCertificates(const std::string& dir) {
  const std::vector<std::string> ec = {
      "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"};
  std::vector<std::string> ca = {"req",     "-x509",
                                 "-days",   "2",
                                 "-subj",   "/CN=irontune test CA",
                                 "-keyout", dir + "/ca.key",
                                 "-out",    dir + "/ca.pem"};
  ca.insert(ca.end(), ec.begin(), ec.end());
  Openssl(dir, ca);
  Write(dir + "/server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  Write(dir + "/client.ext", "extendedKeyUsage=clientAuth\n");
  for (const std::string name : {"server", "client"}) {
    std::vector<std::string> req = {
        "req",
        "-subj",
        "/CN=" +
            (name == "server" ? std::string("localhost") : std::string("ci")),
        "-keyout",
        dir + "/" + name + ".key",
        "-out",
        dir + "/" + name + ".csr"};
    req.insert(req.end(), ec.begin(), ec.end());
    Openssl(dir, req);
    Openssl(dir,
            {"x509", "-req", "-days", "2", "-in", dir + "/" + name + ".csr",
             "-CA", dir + "/ca.pem", "-CAkey", dir + "/ca.key",
             "-CAcreateserial", "-extfile", dir + "/" + name + ".ext", "-out",
             dir + "/" + name + ".pem"});
  }
}

// The tokens file: ci and other (submit), ops (admin); and a file holding
// each token.
std::string MakeTokens(const std::string& dir) {
  std::string lines = "# irontune e2e tokens\n";
  for (const auto& [name, role, token] :
       {std::tuple{"ci", "submit", kCiToken},
        std::tuple{"other", "submit", kOtherToken},
        std::tuple{"ops", "admin", kOpsToken}}) {
    const std::string file = Write(dir + "/" + name + ".token", token + "\n");
    Result r =
        Run({"/bin/sh", "-c",
             kDaemon + " --hash-token " + name + ":" + role + " < " + file},
            dir, 30);
    INFO(r.err);
    REQUIRE(r.code == 0);
    lines += r.out;
  }
  return Write(dir + "/tokens", lines);
}

// An irontuned on 127.0.0.1:0 with `flags` and its sim clock `clock`,
// stopped with SIGTERM.
class TcpDaemon {
 public:
  TcpDaemon(const std::string& dir, std::vector<std::string> flags,
            const std::string& clock = "virtual")
      : dir_(dir) {
    process_ = std::make_unique<Process>(
        "irontuned",
        SimDaemonArgv(kDaemon, dir + "/state", "127.0.0.1:0", clock, flags),
        dir);
    REQUIRE(process_->started());
    address_ = WaitForServingAddress(*process_, "127.0.0.1:");
    INFO(process_->Stderr());
    REQUIRE(!address_.empty());
  }
  ~TcpDaemon() {
    process_->Signal(SIGTERM);
    process_->Wait(15);
  }

  // irontune-client with TLS (trusting ca.pem, checking for localhost) and
  // `token_name`'s token file ("" for none), then `args`.
  Result Client(const std::string& token_name, std::vector<std::string> args,
                double seconds = 120) const {
    std::vector<std::string> argv = {
        kClient,          "--server",          address_,   "--tls-ca",
        dir_ + "/ca.pem", "--tls-server-name", "localhost"};
    if (!token_name.empty()) {
      argv.insert(argv.end(),
                  {"--token-file", dir_ + "/" + token_name + ".token"});
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return Run(argv, dir_, seconds);
  }

  // A stub over TLS.
  std::unique_ptr<v1::Tuner::Stub> Stub() const {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(dir_ + "/ca.pem");
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return v1::Tuner::NewStub(
        grpc::CreateCustomChannel(address_, grpc::SslCredentials(ssl), args));
  }

  const std::string& address() const { return address_; }
  pid_t pid() const { return process_->pid(); }
  std::string Log() const { return process_->Stderr(); }

 private:
  std::string dir_;
  std::string address_;
  std::unique_ptr<Process> process_;
};

// The code of GetStatus over `stub` with `token` ("" for none).
grpc::StatusCode StatusCall(v1::Tuner::Stub& stub, const std::string& token) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  v1::StatusResponse response;
  return stub.GetStatus(&context, v1::GetStatusRequest(), &response)
      .error_code();
}

// The code of Cancel(job) over `stub` with `token`.
grpc::StatusCode CancelCall(v1::Tuner::Stub& stub, const std::string& token,
                            const std::string& job) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  context.AddMetadata("authorization", "Bearer " + token);
  v1::CancelRequest request;
  request.set_job_id(job);
  v1::CancelResponse response;
  return stub.Cancel(&context, request, &response).error_code();
}

// The code of an ImportCache of one line over `stub` with `token`.
grpc::StatusCode ImportCall(v1::Tuner::Stub& stub, const std::string& token) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  context.AddMetadata("authorization", "Bearer " + token);
  v1::ImportCacheResponse response;
  auto writer = stub.ImportCache(&context, &response);
  v1::CacheLine line;
  line.set_line("{}");
  writer->Write(line);
  writer->WritesDone();
  return writer->Finish().error_code();
}

// The job id a detached submit printed.
std::string DetachedJob(const Result& r) {
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out)["job_id"].get<std::string>();
}

TEST_CASE("security: the unix socket is mode 0660, of --socket-group") {
  const std::string dir = TempDir("sec-socket");
  group* own = getgrgid(getgid());
  REQUIRE(own != nullptr);
  const std::string socket = dir + "/sock";
  // A umask that would leave the socket open to everyone.
  const mode_t old = umask(0);
  Process daemon(
      "irontuned",
      {kDaemon, "--state-dir", dir + "/state", "--listen", "unix:" + socket,
       "--sim-clock", "virtual", "--socket-group", own->gr_name},
      dir);
  umask(old);
  REQUIRE(!daemon.WaitForStderrLine("serving", 30).empty());
  struct stat st {};
  REQUIRE(stat(socket.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0660);
  CHECK(st.st_gid == getgid());
  // Local, no tokens: served.
  CHECK(Run({kClient, "--server", "unix:" + socket, "status"}, dir, 30).code ==
        0);
  daemon.Signal(SIGTERM);
  REQUIRE(daemon.Wait(15));
  CHECK(daemon.exit_code() == 0);

  Result unknown = Run(
      {kDaemon, "--state-dir", dir + "/state2", "--listen",
       "unix:" + dir + "/sock2", "--socket-group", "no-such-group-irontune"},
      dir, 30);
  CHECK(unknown.code == 1);
  CHECK_THAT(unknown.err, Catch::Contains("--socket-group") &&
                              Catch::Contains("no such group"));
}

TEST_CASE("security: plaintext off loopback is refused without --insecure") {
  const std::string dir = TempDir("sec-plain");
  // Refused before anything binds.
  Result r = Run({kDaemon, "--state-dir", dir + "/state", "--listen",
                  "0.0.0.0:0", "--sim-clock", "virtual"},
                 dir, 30);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("0.0.0.0:0") &&
                        Catch::Contains("--tls-cert") &&
                        Catch::Contains("--insecure"));
  Result half = Run({kDaemon, "--state-dir", dir + "/state", "--listen",
                     "[::]:0", "--tls-cert", Write(dir + "/c.pem", "x")},
                    dir, 30);
  CHECK(half.code == 1);
  CHECK_THAT(half.err, Catch::Contains("--tls-key"));
}

TEST_CASE("security: TLS on loopback, tokens and roles") {
  const std::string dir = TempDir("sec-tls");
  MakeCertificates(dir);
  const std::string tokens = MakeTokens(dir);
  TcpDaemon daemon(dir, {"--tls-cert", dir + "/server.pem", "--tls-key",
                         dir + "/server.key", "--tokens", tokens});
  auto stub = daemon.Stub();

  // Plaintext to the TLS port does not get through.
  Result plain = Run({kClient, "--server", daemon.address(), "--token-file",
                      dir + "/ops.token", "--timeout", "5", "status"},
                     dir, 30);
  CHECK(plain.code == 1);

  // No token, or a wrong one: UNAUTHENTICATED.
  CHECK(StatusCall(*stub, "") == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(StatusCall(*stub, "not-a-token") == grpc::StatusCode::UNAUTHENTICATED);
  Result anonymous = daemon.Client("", {"status"});
  CHECK(anonymous.code == 1);
  CHECK_THAT(anonymous.err, Catch::Contains("--token-file"));
  CHECK(StatusCall(*stub, kCiToken) == grpc::StatusCode::OK);

  // A job belongs to its token's name, whatever --client says.
  const std::string job = DetachedJob(daemon.Client(
      "ci", {"submit", kExample, "--detach", "--json", "--client", "ops"}));
  Result jobs = daemon.Client("ci", {"jobs", "--json"});
  REQUIRE(jobs.code == 0);
  const nlohmann::json listed = nlohmann::json::parse(jobs.out)["jobs"];
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["client"] == "ci");

  // Another submit token may not cancel, watch or fetch it, nor import.
  CHECK(CancelCall(*stub, kOtherToken, job) ==
        grpc::StatusCode::PERMISSION_DENIED);
  Result denied = daemon.Client("other", {"cancel", job});
  CHECK(denied.code == 1);
  CHECK_THAT(denied.err, Catch::Contains("permission denied"));
  CHECK(daemon.Client("other", {"result", job}).code == 1);
  CHECK(ImportCall(*stub, kCiToken) == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(daemon.Client("ci", {"cache", "export"}).code == 1);

  // The admin may.
  CHECK(CancelCall(*stub, kOpsToken, job) == grpc::StatusCode::OK);
  // Its owner may cancel its own.
  const std::string own = DetachedJob(
      daemon.Client("ci", {"submit", kExample, "--detach", "--json"}));
  Result cancelled = daemon.Client("ci", {"cancel", own});
  INFO(cancelled.err);
  CHECK(cancelled.code == 0);
  // The log names who did what, and from where.
  CHECK_THAT(daemon.Log(),
             Catch::Contains("refused Cancel") &&
                 Catch::Contains("other@ipv4:127.0.0.1") &&
                 Catch::Contains("cancelled by ops@ipv4:127.0.0.1"));
}

TEST_CASE("security: a forged import is listed with its origin and dropped") {
  const std::string dir = TempDir("sec-import");
  MakeCertificates(dir);
  const std::string tokens = MakeTokens(dir);
  // The forged lines: another daemon's cache after a small tune.
  const std::string small = WriteSmall(dir);
  std::string forged;
  {
    const std::string odir = dir + "/other";
    std::filesystem::create_directories(odir);
    Process other(
        "other",
        {kDaemon, "--state-dir", odir, "--listen", "unix:" + odir + "/sock",
         "--sim-clock", "virtual", "--log-level", "info"},
        odir);
    REQUIRE(!other.WaitForStderrLine("serving", 30).empty());
    Result tuned = Run({kClient, "--server", "unix:" + odir + "/sock", "submit",
                        small, "--rounds", "3", "--calls", "5"},
                       odir, 300);
    INFO(tuned.err);
    REQUIRE(tuned.code == 0);
    forged = dir + "/forged.jsonl";
    REQUIRE(Run({kClient, "--server", "unix:" + odir + "/sock", "cache",
                 "export", forged},
                odir, 60)
                .code == 0);
    other.Signal(SIGTERM);
    REQUIRE(other.Wait(15));
  }
  TcpDaemon daemon(dir, {"--tls-cert", dir + "/server.pem", "--tls-key",
                         dir + "/server.key", "--tokens", tokens});
  CHECK(daemon.Client("ci", {"cache", "import", forged}).code == 1);
  Result imported = daemon.Client("ops", {"cache", "import", forged});
  INFO(imported.err);
  REQUIRE(imported.code == 0);
  CHECK_THAT(imported.out, Catch::Contains("(import 1)"));

  Result listed = daemon.Client("ops", {"cache", "imports", "--json"});
  INFO(listed.err);
  REQUIRE(listed.code == 0);
  const nlohmann::json imports = nlohmann::json::parse(listed.out)["imports"];
  REQUIRE(imports.size() == 1);
  CHECK(imports[0]["imported_by"] == "ops");
  CHECK(imports[0]["source"] == forged);
  CHECK_THAT(imports[0]["peer"].get<std::string>(),
             Catch::Contains("127.0.0.1"));
  const int rows = std::stoi(imports[0]["rows"].get<std::string>());
  CHECK(rows > 0);
  CHECK(daemon.Client("ci", {"cache", "imports"}).code == 1);
  CHECK(daemon.Client("ci", {"cache", "drop-import", "1"}).code == 1);

  Result dropped = daemon.Client("ops", {"cache", "drop-import", "1"});
  INFO(dropped.err);
  REQUIRE(dropped.code == 0);
  CHECK_THAT(dropped.out,
             Catch::Contains(std::to_string(rows) + " rows removed"));
  Result after = daemon.Client("ops", {"cache", "imports"});
  CHECK_THAT(after.out, Catch::Contains("dropped"));
  Result stats = daemon.Client("ci", {"status", "--json"});
  REQUIRE(stats.code == 0);
  const nlohmann::json cache = nlohmann::json::parse(stats.out)["cache"];
  CHECK((!cache.contains("rows") || cache["rows"] == "0"));
}

TEST_CASE(
    "security: without tokens, loopback TCP and abstract sockets refuse the "
    "start unless allowed, with a warning") {
  const std::string dir = TempDir("sec-loopback");
  const std::vector<std::string> addresses = {
      "127.0.0.1:0",
      "unix-abstract:irontune-sec-" + std::to_string(::getpid())};
  for (const std::string& address : addresses) {
    INFO(address);
    Result refused =
        Run(SimDaemonArgv(kDaemon, dir + "/state", address, "virtual", {}), dir,
            30);
    CHECK(refused.code == 1);
    CHECK_THAT(refused.err, Catch::Contains(address) &&
                                Catch::Contains("--allow-loopback-without-"
                                                "tokens"));
  }
  TcpDaemon allowed(dir, {"--allow-loopback-without-tokens"});
  CHECK_THAT(allowed.Log(),
             Catch::Contains("warn") && Catch::Contains("is admin"));
  Result status =
      Run({kClient, "--server", allowed.address(), "status"}, dir, 30);
  CHECK(status.code == 0);
}

TEST_CASE("security: client certificates are checked against --tls-client-ca") {
  const std::string dir = TempDir("sec-mtls");
  MakeCertificates(dir);
  TcpDaemon daemon(dir, {"--tls-cert", dir + "/server.pem", "--tls-key",
                         dir + "/server.key", "--tls-client-ca",
                         dir + "/ca.pem", "--allow-loopback-without-tokens"});
  // Loopback without tokens (allowed by the flag): no token needed, but a
  // certificate is.
  CHECK(daemon.Client("", {"--timeout", "5", "status"}).code == 1);
  Result with = daemon.Client("", {"--tls-cert", dir + "/client.pem",
                                   "--tls-key", dir + "/client.key", "status"});
  INFO(with.err);
  CHECK(with.code == 0);
}

TEST_CASE(
    "ci: a CI job over TLS with a token fails --check and keeps the diff") {
  const std::string dir = TempDir("sec-ci");
  MakeCertificates(dir);
  const std::string tokens = MakeTokens(dir);
  TcpDaemon daemon(dir, {"--tls-cert", dir + "/server.pem", "--tls-key",
                         dir + "/server.key", "--tokens", tokens});
  const std::string small = WriteSmall(dir);
  const std::string profile =
      Write(dir + "/stale.json",
            "{\"entries\": [\n{\"operator\": \"SiLU\", \"size\": 8192, "
            "\"tile_size\": 1024, \"num_aie_columns\": 1}\n]}\n");
  // As docs/ci.md's job runs it: the server and token from the
  // environment, the diff kept as a file.
  const std::string diff = dir + "/profile.diff";
  Result job = Run(
      {"/bin/sh", "-c",
       kClient + " --tls-ca " + dir + "/ca.pem --tls-server-name localhost " +
           "submit " + small + " --profile " + profile +
           " --priority batch --rounds 3 --calls 5 --check > " + diff},
      dir, 300,
      {"IRONTUNE_SERVER=" + daemon.address(), "IRONTUNE_TOKEN=" + kCiToken});
  INFO(job.err);
  CHECK(job.code == 3);
  const std::string text = ReadFile(diff);
  CHECK_THAT(text, Catch::Contains("SiLU size=8192"));
  // Without the token the same job is refused, with exit 1.
  Result refused = Run(
      {"/bin/sh", "-c",
       kClient + " --tls-ca " + dir + "/ca.pem --tls-server-name localhost " +
           "submit " + small + " --profile " + profile + " --check"},
      dir, 120, {"IRONTUNE_SERVER=" + daemon.address()});
  CHECK(refused.code == 1);
  CHECK_THAT(refused.err, Catch::Contains("UNAUTHENTICATED") ||
                              Catch::Contains("does not know you"));
}

// The stats of an Autotune `r` printed with --json.
nlohmann::json SubmitStats(const Result& r) {
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out)["stats"];
}

TEST_CASE("security: clearing the cache needs admin, the next job re-times") {
  const std::string dir = TempDir("sec-clear");
  MakeCertificates(dir);
  const std::string tokens = MakeTokens(dir);
  const std::string small = WriteSmall(dir);
  TcpDaemon daemon(dir, {"--tls-cert", dir + "/server.pem", "--tls-key",
                         dir + "/server.key", "--tokens", tokens});
  const std::vector<std::string> submit = {"submit",  small, "--rounds", "3",
                                           "--calls", "5",   "--json"};
  const nlohmann::json first = SubmitStats(daemon.Client("ci", submit));
  const int timed = first.value("settings_timed", 0);
  REQUIRE(timed > 0);
  // Again: from the cache (a winner is still re-timed against the recorded
  // setting, so not every figure is a hit).
  const nlohmann::json cached = SubmitStats(daemon.Client("ci", submit));
  CHECK(cached.value("settings_timed", 0) < timed);
  CHECK(cached.value("cache_hits", 0) > 0);

  // A submit token may not clear it, by RPC or by the client.
  auto stub = daemon.Stub();
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(20));
    context.AddMetadata("authorization", "Bearer " + kCiToken);
    v1::ClearCacheResponse response;
    grpc::Status s =
        stub->ClearCache(&context, v1::ClearCacheRequest(), &response);
    CHECK(s.error_code() == grpc::StatusCode::PERMISSION_DENIED);
    CHECK_THAT(s.error_message(), Catch::Contains("ClearCache"));
  }
  Result denied = daemon.Client("ci", {"cache", "clear", "--yes"});
  CHECK(denied.code == 1);
  CHECK_THAT(denied.err, Catch::Contains("permission denied"));
  // Without --yes the client asks, and sends nothing.
  Result unconfirmed = daemon.Client("ops", {"cache", "clear"});
  CHECK(unconfirmed.code == 2);
  CHECK_THAT(unconfirmed.err, Catch::Contains("--yes"));
  CHECK(SubmitStats(daemon.Client("ci", submit)).value("cache_hits", 0) > 0);

  Result cleared = daemon.Client("ops", {"cache", "clear", "--yes"});
  INFO(cleared.err);
  REQUIRE(cleared.code == 0);
  CHECK_THAT(cleared.out, Catch::Contains("cleared the cache: "));
  CHECK_THAT(cleared.out, !Catch::Contains("cleared the cache: 0 "));
  Result stats = daemon.Client("ci", {"status", "--json"});
  REQUIRE(stats.code == 0);
  const nlohmann::json cache = nlohmann::json::parse(stats.out)["cache"];
  CHECK((!cache.contains("rows") || cache["rows"] == "0"));

  // The next submit takes nothing from the cache and times afresh (which
  // settings a race keeps for the full Timing, and which wins, follow the
  // noise, so the totals may differ from the first job's).
  const nlohmann::json again = SubmitStats(daemon.Client("ci", submit));
  CHECK(again.value("settings_timed", 0) > 0);
  CHECK(again.value("cache_hits", 0) == 0);
  CHECK_THAT(daemon.Log(), Catch::Contains("cleared by ops@ipv4:127.0.0.1"));
}

using testing::PaddedMessage;
using testing::RawCall;
constexpr std::chrono::seconds kRawDeadline{60};

// Sends tokenless 200 MB GetStatus and wrong-token 200 MB Autotune
// requests over `channel`, each refused UNAUTHENTICATED.
void Flood(const std::shared_ptr<grpc::Channel>& channel,
           const grpc::ByteBuffer& big) {
  for (int i = 0; i < 2; ++i) {
    CHECK(RawCall(channel, "/irontune.v1.Tuner/GetStatus", big, "",
                  kRawDeadline) == grpc::StatusCode::UNAUTHENTICATED);
    CHECK(RawCall(channel, "/irontune.v1.Tuner/Autotune", big,
                  "wrong-token-0123456789",
                  kRawDeadline) == grpc::StatusCode::UNAUTHENTICATED);
  }
}

std::shared_ptr<grpc::Channel> PlainChannel(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

TEST_CASE(
    "security: calls without a valid token are refused before their message "
    "is read, on TLS, unix, abstract and plaintext loopback listeners") {
  const std::string dir = TempDir("sec-flood");
  MakeCertificates(dir);
  const std::string tokens = MakeTokens(dir);
  const std::string sock = dir + "/flood.sock";
  const std::string abstract =
      "unix-abstract:irontune-flood-" + std::to_string(::getpid());
  TcpDaemon tls(dir, {"--tls-cert", dir + "/server.pem", "--tls-key",
                      dir + "/server.key", "--tokens", tokens, "--listen",
                      "unix:" + sock, "--listen", abstract});
  const std::string plain_dir = dir + "/plain";
  std::filesystem::create_directories(plain_dir);
  TcpDaemon plain(plain_dir, {"--tokens", tokens});
  const pid_t pids[] = {tls.pid(), plain.pid()};
  long before[2];
  for (int i = 0; i < 2; ++i) before[i] = ProcStatusKib(pids[i], "VmHWM");
  REQUIRE(before[0] > 0);
  REQUIRE(before[1] > 0);

  constexpr size_t kBig = size_t{200} << 20;
  const grpc::ByteBuffer big = PaddedMessage(kBig);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(dir + "/ca.pem");
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  args.SetMaxSendMessageSize(-1);
  Flood(
      grpc::CreateCustomChannel(tls.address(), grpc::SslCredentials(ssl), args),
      big);
  Flood(PlainChannel("unix:" + sock), big);
  Flood(PlainChannel(abstract), big);
  Flood(PlainChannel(plain.address()), big);

  // Eight 200 MB requests on each daemon: had one been read, its peak RSS
  // would have grown by 200 MB at least. A few MB of headers and buffers
  // is all they may cost.
  for (int i = 0; i < 2; ++i) {
    const long after = ProcStatusKib(pids[i], "VmHWM");
    INFO("daemon " << i << ": VmHWM " << before[i] << " -> " << after
                   << " KiB");
    CHECK(after - before[i] < 32 * 1024);
  }
  // The gate logged its refusals (rate-limited: auth_test's RefusalLog
  // case, which does not depend on how fast these calls came).
  CHECK_THAT(tls.Log(), Catch::Contains("before reading it"));

  // A valid token still gets through, a health probe needs none, and a
  // small RPC's oversized request is refused once read.
  auto stub = tls.Stub();
  CHECK(StatusCall(*stub, kCiToken) == grpc::StatusCode::OK);
  CHECK(tls.Client("", {"health"}).code == 0);
  CHECK(RawCall(PlainChannel("unix:" + sock), "/irontune.v1.Tuner/GetStatus",
                PaddedMessage(size_t{2} << 20), kCiToken,
                kRawDeadline) == grpc::StatusCode::RESOURCE_EXHAUSTED);
}

using testing::SmallAutotune;

// A stream of `method` sending `request` with `token` to `address`.
std::unique_ptr<testing::RawStream> Open(const std::string& address,
                                         const std::string& method,
                                         const grpc::ByteBuffer& request,
                                         const std::string& token) {
  return std::make_unique<testing::RawStream>(PlainChannel(address),
                                              "/irontune.v1.Tuner/" + method,
                                              request, token, kRawDeadline);
}

// Waits up to 30 s until GetStatus with `token` shows a running job and
// `queued` jobs waiting; the last answer.
v1::StatusResponse WaitForQueue(const std::string& address,
                                const std::string& token, int queued) {
  auto stub = v1::Tuner::NewStub(PlainChannel(address));
  v1::StatusResponse response;
  for (int i = 0; i < 300; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    context.AddMetadata("authorization", "Bearer " + token);
    response.Clear();
    if (stub->GetStatus(&context, v1::GetStatusRequest(), &response).ok() &&
        response.has_running() && response.queue_size() == queued) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return response;
}

TEST_CASE(
    "security: one token's padded queued jobs are refused past its bytes and "
    "the queue's, and are not held in memory") {
  const std::string dir = TempDir("sec-qmem");
  const std::string tokens = MakeTokens(dir);
  TcpDaemon daemon(dir,
                   {"--tokens", tokens, "--sim-build-seconds", "0",
                    "--client-queue-bytes", "512M", "--queue-memory", "576M"},
                   "realtime");
  const std::string& address = daemon.address();
  // An admin's long job holds the worker; what follows waits behind it.
  auto busy = Open(
      address, "Autotune",
      testing::ToByteBuffer(SmallAutotune(/*quick=*/false).SerializeAsString()),
      kOpsToken);
  REQUIRE(busy->First().ok());
  REQUIRE(WaitForQueue(address, kOpsToken, 0).has_running());
  const long before = ProcStatusKib(daemon.pid(), "VmHWM");
  REQUIRE(before > 0);

  // Eight 64 MiB requests of ci's, each followed (its stream open, as a
  // client watching its job): 512 MiB, ci's limit, all queued.
  constexpr size_t kPadded = size_t{64} << 20;
  const grpc::ByteBuffer padded =
      testing::PaddedRequest(SmallAutotune(/*quick=*/true), kPadded);
  std::vector<std::unique_ptr<testing::RawStream>> held;
  for (int i = 0; i < 8; ++i) {
    held.push_back(Open(address, "Autotune", padded, kCiToken));
    const grpc::Status s = held.back()->First();
    INFO(i << ": " << s.error_message());
    REQUIRE(s.ok());
  }
  // A ninth is refused before it is queued, naming the figures and flag.
  grpc::Status refused = Open(address, "Autotune", padded, kCiToken)->First();
  CHECK(refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(refused.error_message(), Catch::Contains("--client-queue-bytes") &&
                                          Catch::Contains("512.0 MiB") &&
                                          Catch::Contains("\"ci\""));
  // Another token still gets in, up to what the queue may hold in all.
  held.push_back(Open(address, "Autotune", padded, kOtherToken));
  REQUIRE(held.back()->First().ok());
  refused = Open(address, "Autotune", padded, kOtherToken)->First();
  CHECK(refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(refused.error_message(), Catch::Contains("--queue-memory"));
  CHECK(WaitForQueue(address, kOpsToken, 9).queue_size() == 9);

  // Eleven 64 MiB requests read, nine queued (576 MiB): their padding
  // (unknown fields) was dropped on receipt and gRPC's copy given up, so
  // the peak grew by what receiving them costs (about three times one
  // request for the first, gRPC's buffers and the parse, and some of the
  // allocator's keeping after), far less than the 1152 MiB the nine held
  // before (a copy in the handler, one in the job).
  const long after = ProcStatusKib(daemon.pid(), "VmHWM");
  INFO("VmHWM " << before << " -> " << after << " KiB");
  CHECK(after - before < 640 * 1024);

  // The streams closed, their jobs cancelled: ci's bytes are released.
  held.clear();
  grpc::Status again;
  for (int i = 0; i < 100; ++i) {
    auto stream = Open(address, "Autotune", padded, kCiToken);
    again = stream->First();
    if (again.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(again.ok());
  CHECK_THAT(daemon.Log(), Catch::Contains("--client-queue-bytes"));
}

TEST_CASE(
    "security: one token's Watches cannot take another's submit, and admins "
    "keep streams of their own") {
  const std::string dir = TempDir("sec-streams");
  const std::string tokens = MakeTokens(dir);
  TcpDaemon daemon(
      dir,
      {"--tokens", tokens, "--sim-build-seconds", "0", "--max-streams", "5",
       "--max-streams-per-caller", "2", "--admin-streams", "2"},
      "realtime");
  const std::string& address = daemon.address();
  // ci's long job, followed: one stream.
  auto submit = Open(
      address, "Autotune",
      testing::ToByteBuffer(SmallAutotune(/*quick=*/false).SerializeAsString()),
      kCiToken);
  std::string first;
  REQUIRE(submit->First(&first).ok());
  v1::AutotuneEvent queued;
  REQUIRE(queued.ParseFromString(first));
  v1::WatchRequest watch;
  watch.set_job_id(queued.job_id());
  const grpc::ByteBuffer watch_bytes =
      testing::ToByteBuffer(watch.SerializeAsString());

  // Its Watches: one more is its quota, the next refused.
  auto watching = Open(address, "Watch", watch_bytes, kCiToken);
  REQUIRE(watching->First().ok());
  const grpc::Status over =
      Open(address, "Watch", watch_bytes, kCiToken)->First();
  CHECK(over.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(over.error_message(),
             Catch::Contains("\"ci\" has 2 streams open") &&
                 Catch::Contains("--max-streams-per-caller 2"));

  // Another token's submit still gets a stream: the third of the three
  // submit callers may use.
  auto other = Open(
      address, "Autotune",
      testing::ToByteBuffer(SmallAutotune(/*quick=*/true).SerializeAsString()),
      kOtherToken);
  std::string other_first;
  REQUIRE(other->First(&other_first).ok());
  v1::AutotuneEvent other_queued;
  REQUIRE(other_queued.ParseFromString(other_first));
  CHECK(other_queued.has_queued());
  // Past those three, only admins: the last two of --max-streams.
  v1::WatchRequest watch_other;
  watch_other.set_job_id(other_queued.job_id());
  const grpc::Status full =
      Open(address, "Watch",
           testing::ToByteBuffer(watch_other.SerializeAsString()), kOtherToken)
          ->First();
  CHECK(full.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(full.error_message(), Catch::Contains("--admin-streams"));
  auto admin = Open(address, "Watch", watch_bytes, kOpsToken);
  CHECK(admin->First().ok());
}

}  // namespace
}  // namespace irontune::e2e

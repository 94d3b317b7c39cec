#include "tests/testing/pg_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "daemon/fleet/pg.h"
#include "tests/testing/process.h"

namespace irontune::testing {
namespace {

namespace fs = std::filesystem;

// PostgreSQL's server bindir, newest major version first; "" when none.
std::string FindBinDir() {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    if (fs::exists(entry.path() / "bin" / "initdb")) {
      found.push_back(entry.path() / "bin");
    }
  }
  std::sort(found.begin(), found.end());
  return found.empty() ? "" : found.back().string();
}

// A port on 127.0.0.1 free a moment ago.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

void WriteFile(const std::string& path, const std::string& text, int mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

}  // namespace

PgCluster::PgCluster() {
  bin_ = FindBinDir();
  if (bin_.empty()) {
    why_unavailable_ =
        "PostgreSQL's server is not installed (apt-get install postgresql-15)";
    return;
  }
  as_postgres_ = geteuid() == 0;
  const passwd* owner = as_postgres_ ? getpwnam("postgres") : nullptr;
  if (as_postgres_ && owner == nullptr) {
    why_unavailable_ = "running as root and there is no postgres user";
    return;
  }
  dir_ = e2e::TempDir("pg");
  data_ = dir_ + "/data";
  const std::string pw = dir_ + "/initdb-password";
  WriteFile(pw, password_ + "\n", 0600);
  if (as_postgres_) {
    chown(dir_.c_str(), owner->pw_uid, owner->pw_gid);
    chown(pw.c_str(), owner->pw_uid, owner->pw_gid);
  }
  std::string output;
  if (RunAsOwner("initdb",
                 {"-D", data_, "-U", user_, "--auth-local=trust",
                  "--auth-host=scram-sha-256", "--pwfile", pw, "-E", "UTF8",
                  "--no-sync"},
                 &output) != 0) {
    why_unavailable_ = "initdb failed: " + output;
    return;
  }
  MakeCertificate(owner ? owner->pw_uid : geteuid(),
                  owner ? owner->pw_gid : getegid());
  port_ = FreePort();
  password_file_ = dir_ + "/pgpass";
  WriteFile(password_file_,
            "127.0.0.1:" + std::to_string(port_) + ":*:" + user_ + ":" +
                password_ + "\n",
            0600);
  if (!Start()) {
    why_unavailable_ =
        "the server did not start: " + e2e::ReadFile(dir_ + "/log");
  }
}

PgCluster::~PgCluster() {
  if (!dir_.empty()) {
    if (available()) Stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

int PgCluster::RunAsOwner(const std::string& binary,
                          const std::vector<std::string>& args,
                          std::string* output) {
  std::vector<std::string> argv;
  if (as_postgres_) argv = {"/usr/sbin/runuser", "-u", "postgres", "--"};
  argv.push_back(bin_ + "/" + binary);
  argv.insert(argv.end(), args.begin(), args.end());
  e2e::Result r = e2e::Run(argv, dir_, 60);
  if (output != nullptr) *output = r.out + r.err;
  return r.code;
}

bool PgCluster::MakeCertificate(uid_t uid, gid_t gid) {
  const std::string key = dir_ + "/server.key";
  const std::string crt = dir_ + "/server.crt";
  const e2e::Result made =
      e2e::Run({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048",
                "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj",
                "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"},
               dir_, 60);
  if (made.code != 0) return false;
  chmod(key.c_str(), 0600);
  chown(key.c_str(), uid, gid);
  chown(crt.c_str(), uid, gid);
  ca_file_ = crt;
  return true;
}

bool PgCluster::Start() {
  std::string options =
      "-k " + dir_ + " -p " + std::to_string(port_) +
      " -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off";
  if (!ca_file_.empty()) {
    options += " -c ssl=on -c ssl_cert_file=" + ca_file_ +
               " -c ssl_key_file=" + dir_ + "/server.key";
  }
  return RunAsOwner("pg_ctl",
                    {"-D", data_, "-l", dir_ + "/log", "-w", "-t", "30", "-o",
                     options, "start"},
                    nullptr) == 0;
}

bool PgCluster::Stop() {
  return RunAsOwner("pg_ctl", {"-D", data_, "-m", "immediate", "-w", "stop"},
                    nullptr) == 0;
}

std::string PgCluster::SocketUrl(const std::string& database) const {
  return "postgresql:///" + database + "?host=" + dir_ +
         "&port=" + std::to_string(port_) + "&user=" + user_;
}

std::string PgCluster::TcpUrl(const std::string& database) const {
  return "postgresql://" + user_ + "@127.0.0.1:" + std::to_string(port_) + "/" +
         database;
}

std::string PgCluster::NewDatabase() {
  const std::string name = "t" + std::to_string(++databases_);
  auto conn = pg::Connection::Open(SocketUrl("postgres"), "the test cluster");
  if (conn.ok()) (*conn)->ExecScript("CREATE DATABASE " + name).IgnoreError();
  return name;
}

}  // namespace irontune::testing

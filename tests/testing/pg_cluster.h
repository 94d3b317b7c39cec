// A throwaway PostgreSQL cluster for the fleet's tests: initdb in a fresh
// temporary directory, a postgres listening on a unix socket there and on
// 127.0.0.1 (a free port), with TLS on loopback (a self-signed certificate
// for 127.0.0.1 made by the openssl command), stopped and removed when the
// object goes.
//
// PostgreSQL refuses to run as root: as root the cluster belongs to the
// `postgres` user and its commands run through runuser. Local (unix socket)
// connections are trusted; loopback TCP ones need the superuser's password
// (scram-sha-256), which password_file() holds in libpq's passfile format.
//
// Not thread-safe. Where PostgreSQL 15's server binaries are not installed,
// available() is false and why_unavailable() says so.
#ifndef IRONTUNE_TESTS_TESTING_PG_CLUSTER_H_
#define IRONTUNE_TESTS_TESTING_PG_CLUSTER_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace irontune::testing {

class PgCluster {
 public:
  // Starts the cluster (a few seconds). Check available() after.
  PgCluster();
  ~PgCluster();
  PgCluster(const PgCluster&) = delete;
  PgCluster& operator=(const PgCluster&) = delete;

  bool available() const { return why_unavailable_.empty(); }
  const std::string& why_unavailable() const { return why_unavailable_; }

  // Creates an empty database and returns its name ("t1", "t2", ...).
  std::string NewDatabase();
  // A URL for `database` over the unix socket (trusted, no password).
  std::string SocketUrl(const std::string& database) const;
  // A URL for `database` over 127.0.0.1 (needs password_file()).
  std::string TcpUrl(const std::string& database) const;
  // A passfile with the superuser's password, mode 0600.
  const std::string& password_file() const { return password_file_; }
  const std::string& password() const { return password_; }
  // The server's certificate, its own CA (sslrootcert); "" without TLS.
  const std::string& ca_file() const { return ca_file_; }
  const std::string& user() const { return user_; }
  int port() const { return port_; }

  // Stops the server (immediate mode: the processes quit without a
  // checkpoint, as in a crash; committed transactions survive, since their
  // WAL is written at commit) or starts it again, as an outage.
  bool Stop();
  bool Start();

 private:
  // Makes the server's key and certificate; false without openssl.
  bool MakeCertificate(uid_t uid, gid_t gid);
  // Runs a server binary as the cluster's owner; its exit code.
  int RunAsOwner(const std::string& binary,
                 const std::vector<std::string>& args, std::string* output);

  std::string why_unavailable_;
  std::string bin_;   // PostgreSQL's bindir
  std::string dir_;   // the temporary directory (socket, log, passfile)
  std::string data_;  // the cluster's data directory
  std::string user_ = "irontune";
  std::string password_ = "fleet-test-password-0123";
  std::string password_file_;
  std::string ca_file_;
  int port_ = 0;
  int databases_ = 0;
  bool as_postgres_ = false;
};

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_TESTING_PG_CLUSTER_H_

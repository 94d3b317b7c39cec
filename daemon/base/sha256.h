// SHA-256 through OpenSSL.
#ifndef IRONTUNE_DAEMON_BASE_SHA256_H_
#define IRONTUNE_DAEMON_BASE_SHA256_H_

#include <string>
#include <string_view>

namespace irontune {

// The lower-case hex SHA-256 of `data`. Thread-safe.
std::string Sha256Hex(std::string_view data);

// Incremental hashing, for data that arrives in pieces. Not thread-safe.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view data);
  // The hex digest of everything passed to Update. REQUIRES: called once.
  std::string HexDigest();

 private:
  void* ctx_;  // EVP_MD_CTX, owned
};

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_SHA256_H_

#include "daemon/base/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace irontune {
namespace {

EVP_MD_CTX* Ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }

// OpenSSL fails here only when out of memory; there is nothing to recover.
void CheckOk(int openssl_result, const char* what) {
  if (openssl_result != 1) {
    std::fprintf(stderr, "irontune: OpenSSL %s failed\n", what);
    std::abort();
  }
}

std::string ToHex(const unsigned char* bytes, unsigned int size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xf]);
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  Sha256 hash;
  hash.Update(data);
  return hash.HexDigest();
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) CheckOk(0, "EVP_MD_CTX_new");
  CheckOk(EVP_DigestInit_ex(Ctx(ctx_), EVP_sha256(), nullptr),
          "EVP_DigestInit_ex");
}

Sha256::~Sha256() { EVP_MD_CTX_free(Ctx(ctx_)); }

void Sha256::Update(std::string_view data) {
  CheckOk(EVP_DigestUpdate(Ctx(ctx_), data.data(), data.size()),
          "EVP_DigestUpdate");
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  CheckOk(EVP_DigestFinal_ex(Ctx(ctx_), digest, &size), "EVP_DigestFinal_ex");
  return ToHex(digest, size);
}

}  // namespace irontune

#include "daemon/store/cache_key.h"

#include "daemon/base/sha256.h"

namespace irontune {
namespace {

// Fixed-width little-endian, so the encoding is the same on every host.
void PutU64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
}

void PutString(std::string& out, std::string_view text) {
  PutU64(out, text.size());
  out.append(text);
}

// Bump when what CacheKey holds or how it is encoded changes.
constexpr std::string_view kKeyTag = "irontune.cache_key.v1";

}  // namespace

std::string CacheKey::Encode() const {
  std::string out;
  PutString(out, kKeyTag);
  PutString(out, recipe_hash);
  PutString(out, artifact_hash);
  PutU64(out, values.size());
  for (const auto& [name, value] : values) {
    PutString(out, name);
    PutU64(out, static_cast<uint64_t>(value));
  }
  PutU64(out, input_sha256.size());
  for (const auto& [name, digest] : input_sha256) {
    PutString(out, name);
    PutString(out, digest);
  }
  PutU64(out, static_cast<uint64_t>(static_cast<int64_t>(packaging)));
  PutU64(out, static_cast<uint64_t>(static_cast<int64_t>(repeats)));
  PutU64(out, distinct ? 1 : 0);
  if (!tag.empty()) PutString(out, tag);
  return out;
}

std::string CacheKey::Digest() const {
  return Sha256Hex(Encode()).substr(0, kCacheKeyDigits);
}

std::string InputDigest(std::string_view bytes) { return Sha256Hex(bytes); }

bool IsCacheKeyDigest(std::string_view text) {
  if (text.size() != kCacheKeyDigits) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace irontune

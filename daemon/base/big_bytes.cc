#include "daemon/base/big_bytes.h"

#include <sys/mman.h>

#include <cstdint>

namespace irontune {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

// Reserves `n` bytes in `s` (emptied first: nothing is copied into new
// storage) and, where they are new and big, advises their whole huge pages.
void Reserve(std::string& s, size_t n) {
  if (n <= s.capacity()) return;
  s.clear();
  s.shrink_to_fit();
  s.reserve(n);
  if (n < kBigBytes) return;
#ifdef MADV_HUGEPAGE
  const uintptr_t begin = reinterpret_cast<uintptr_t>(s.data());
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = (begin + n) & ~(kHugePage - 1);
  if (last > first) {
    // Advice only: a refusal (EINVAL where THP is not built in) leaves the
    // buffer as it was.
    (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#endif
}

}  // namespace

void AssignZeros(std::string& s, size_t n) {
  Reserve(s, n);
  s.assign(n, '\0');
}

void AssignBytes(std::string& s, std::string_view bytes) {
  Reserve(s, bytes.size());
  s.assign(bytes.data(), bytes.size());
}

std::string ZeroBytes(size_t n) {
  std::string s;
  AssignZeros(s, n);
  return s;
}

std::string CopyBytes(std::string_view bytes) {
  std::string s;
  AssignBytes(s, bytes);
  return s;
}

}  // namespace irontune

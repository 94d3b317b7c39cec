#include "daemon/base/big_bytes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace irontune {
namespace {

constexpr size_t kBig = size_t{16} << 20;

bool AllZero(const std::string& s) {
  return s.find_first_not_of('\0') == std::string::npos;
}

// The VmFlags line of the mapping in /proc/self/smaps that holds `at`; ""
// where none does.
std::string VmFlagsAt(const void* at) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(at);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= a && a < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// An address in `s`'s storage on a whole 2 MiB page.
const void* Interior(const std::string& s) {
  const uintptr_t huge = uintptr_t{2} << 20;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(s.data());
  return reinterpret_cast<const void*>((begin + huge - 1) & ~(huge - 1));
}

TEST_CASE("ZeroBytes and CopyBytes make what they name", "[big_bytes]") {
  for (size_t n : {size_t{0}, size_t{5}, kBigBytes - 1, kBig + 3}) {
    const std::string z = ZeroBytes(n);
    CHECK(z.size() == n);
    CHECK(AllZero(z));
    std::string src(n, 'a');
    for (size_t i = 0; i < n; i += 4093) src[i] = static_cast<char>(i);
    CHECK(CopyBytes(src) == src);
  }
}

TEST_CASE("AssignZeros and AssignBytes replace what a string held",
          "[big_bytes]") {
  std::string s(kBig, 'x');
  const char* storage = s.data();
  AssignZeros(s, kBig / 2);
  CHECK(s.size() == kBig / 2);
  CHECK(AllZero(s));
  CHECK(s.data() == storage);  // capacity enough: reused, not remade
  AssignBytes(s, std::string(kBig + 1, 'y'));
  CHECK(s == std::string(kBig + 1, 'y'));
  AssignBytes(s, "abc");
  CHECK(s == "abc");
  AssignZeros(s, 2);
  CHECK(s == std::string(2, '\0'));
}

TEST_CASE("a big buffer's pages are advised huge", "[big_bytes]") {
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) {
    WARN("this kernel has no transparent huge pages: nothing to advise");
    return;
  }
  // The control: a fresh mapping of its own, never advised. (A plain
  // string is no control: the allocator may carve it from memory an
  // earlier big buffer had advised.)
  void* fresh = mmap(nullptr, kBig, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(fresh != MAP_FAILED);
  const std::string plain(kBig, '\0');
  const std::string big = ZeroBytes(kBig);
  const std::string copy = CopyBytes(plain);
  const void* middle = static_cast<char*>(fresh) + kBig / 2;
  INFO("fresh mapping " << VmFlagsAt(middle));
  INFO("ZeroBytes " << VmFlagsAt(Interior(big)));
  INFO("CopyBytes " << VmFlagsAt(Interior(copy)));
  CHECK(VmFlagsAt(middle).find(" hg") == std::string::npos);
  CHECK(VmFlagsAt(Interior(big)).find(" hg") != std::string::npos);
  CHECK(VmFlagsAt(Interior(copy)).find(" hg") != std::string::npos);
  munmap(fresh, kBig);
}

}  // namespace
}  // namespace irontune

#include "daemon/base/sha256.h"

#include <catch2/catch.hpp>
#include <string>

namespace irontune {
namespace {

TEST_CASE("Sha256Hex matches the FIPS 180-2 vectors", "[sha256]") {
  CHECK(Sha256Hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256Hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("Sha256Hex hashes embedded NUL bytes", "[sha256]") {
  const std::string with_nul("a\0b", 3);
  CHECK(Sha256Hex(with_nul) != Sha256Hex("a"));
  CHECK(Sha256Hex(with_nul) != Sha256Hex("ab"));
}

TEST_CASE("Incremental hashing equals one-shot hashing", "[sha256]") {
  std::string data;
  for (int i = 0; i < 10000; ++i) data.push_back(static_cast<char>(i * 7));

  Sha256 pieces;
  size_t offset = 0;
  size_t size = 1;
  while (offset < data.size()) {
    const size_t n = std::min(size, data.size() - offset);
    pieces.Update(std::string_view(data).substr(offset, n));
    offset += n;
    size = size * 3 + 1;  // uneven pieces, across block boundaries
  }
  CHECK(pieces.HexDigest() == Sha256Hex(data));

  Sha256 abc;
  abc.Update("a");
  abc.Update("");
  abc.Update("bc");
  CHECK(abc.HexDigest() == Sha256Hex("abc"));
}

TEST_CASE("A fresh Sha256 digests the empty string", "[sha256]") {
  Sha256 empty;
  CHECK(empty.HexDigest() == Sha256Hex(""));
}

}  // namespace
}  // namespace irontune

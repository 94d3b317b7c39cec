#include "daemon/tune/inputs.h"

#include <cstring>
#include <random>

#include "common/recording.h"

namespace irontune {
namespace {

uint64_t Mix(uint64_t x) {
  // splitmix64's finaliser: spreads nearby seeds apart.
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
void Put(std::string& out, size_t i, T v) {
  std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

uint64_t InputSeed(uint64_t seed, int step, int op_buffer) {
  return Mix(Mix(seed) ^ (static_cast<uint64_t>(step) << 32) ^
             static_cast<uint32_t>(op_buffer));
}

std::string SeededInput(v1::DType dtype, uint64_t nbytes, uint64_t seed) {
  std::string out(nbytes, '\0');
  const uint64_t size = DTypeSize(dtype);
  if (size == 0) return out;
  const size_t count = nbytes / size;
  std::mt19937_64 rng(seed);
  // 16 random bits make one bf16 or f16 value: a sign, an exponent putting
  // its magnitude in [2^-7, 1) (bf16) or [2^-4, 1) (f16), and a mantissa.
  // One 64-bit draw serves four values, so large buffers fill quickly.
  uint64_t bits = 0;
  int left = 0;
  auto next16 = [&]() -> uint32_t {
    if (left == 0) {
      bits = rng();
      left = 4;
    }
    uint32_t r = static_cast<uint32_t>(bits & 0xffff);
    bits >>= 16;
    --left;
    return r;
  };
  std::uniform_int_distribution<int> small(-8, 8);
  std::uniform_int_distribution<int> small_unsigned(0, 16);
  for (size_t i = 0; i < count; ++i) {
    switch (dtype) {
      case v1::DTYPE_BF16: {
        uint32_t r = next16();
        uint16_t sign = static_cast<uint16_t>((r & 1) << 15);
        uint16_t exponent = static_cast<uint16_t>(120 + (r >> 8) % 7);
        Put<uint16_t>(out, i, sign | (exponent << 7) | ((r >> 1) & 0x7f));
        break;
      }
      case v1::DTYPE_F16: {
        uint32_t r = next16();
        uint16_t sign = static_cast<uint16_t>((r & 1) << 15);
        uint16_t exponent = static_cast<uint16_t>(11 + (r >> 11) % 4);
        Put<uint16_t>(out, i, sign | (exponent << 10) | ((r >> 1) & 0x3ff));
        break;
      }
      case v1::DTYPE_F32: {
        // Uniform in [-1, 1) from 24 random bits.
        uint32_t r = static_cast<uint32_t>(rng() >> 40);
        Put<float>(out, i, static_cast<float>(r) / (1 << 23) - 1.0f);
        break;
      }
      case v1::DTYPE_I8:
        Put<int8_t>(out, i, static_cast<int8_t>(small(rng)));
        break;
      case v1::DTYPE_U8:
        Put<uint8_t>(out, i, static_cast<uint8_t>(small_unsigned(rng)));
        break;
      case v1::DTYPE_I16:
        Put<int16_t>(out, i, static_cast<int16_t>(small(rng)));
        break;
      case v1::DTYPE_U16:
        Put<uint16_t>(out, i, static_cast<uint16_t>(small_unsigned(rng)));
        break;
      case v1::DTYPE_I32:
        Put<int32_t>(out, i, small(rng));
        break;
      case v1::DTYPE_U32:
        Put<uint32_t>(out, i, static_cast<uint32_t>(small_unsigned(rng)));
        break;
      case v1::DTYPE_I64:
        Put<int64_t>(out, i, small(rng));
        break;
      default:
        return out;
    }
  }
  return out;
}

std::shared_ptr<const std::string> InputCache::Get(v1::DType dtype,
                                                   uint64_t nbytes,
                                                   uint64_t seed) {
  const Key key{dtype, nbytes, seed};
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  auto made =
      std::make_shared<const std::string>(SeededInput(dtype, nbytes, seed));
  if (nbytes > max_bytes_) return made;
  while (bytes_ + nbytes > max_bytes_ && !order_.empty()) {
    auto oldest = entries_.find(order_.front());
    bytes_ -= oldest->second->size();
    entries_.erase(oldest);
    order_.pop_front();
  }
  entries_.emplace(key, made);
  order_.push_back(key);
  bytes_ += nbytes;
  return made;
}

}  // namespace irontune

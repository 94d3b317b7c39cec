#include "daemon/tune/inputs.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <system_error>
#include <thread>
#include <type_traits>

#include "common/recording.h"
#include "daemon/base/big_bytes.h"
#include "daemon/base/thread_roles.h"
#include "daemon/ops/numeric.h"

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

// The random draws a seeded buffer is made of, in a fixed order.
class Draws {
 public:
  explicit Draws(uint64_t seed) : rng_(seed) {}

  // 16 random bits; one 64-bit draw serves four, so large buffers fill
  // quickly.
  uint32_t Next16() {
    if (left_ == 0) {
      bits_ = rng_();
      left_ = 4;
    }
    const uint32_t r = static_cast<uint32_t>(bits_ & 0xffff);
    bits_ >>= 16;
    --left_;
    return r;
  }
  uint64_t Next64() { return rng_(); }
  int Small() { return small_(rng_); }
  int SmallUnsigned() { return small_unsigned_(rng_); }

 private:
  std::mt19937_64 rng_;
  uint64_t bits_ = 0;
  int left_ = 0;
  std::uniform_int_distribution<int> small_{-8, 8};
  std::uniform_int_distribution<int> small_unsigned_{0, 16};
};

// 16 random bits as a bf16 or f16 value: a sign, an exponent putting its
// magnitude in [2^-7, 1) (bf16) or [2^-4, 1) (f16), and a mantissa.
uint16_t Bf16(uint32_t r) {
  const uint16_t sign = static_cast<uint16_t>((r & 1) << 15);
  const uint16_t exponent = static_cast<uint16_t>(120 + (r >> 8) % 7);
  return sign | static_cast<uint16_t>(exponent << 7) | ((r >> 1) & 0x7f);
}

uint16_t F16(uint32_t r) {
  const uint16_t sign = static_cast<uint16_t>((r & 1) << 15);
  const uint16_t exponent = static_cast<uint16_t>(11 + (r >> 11) % 4);
  return sign | static_cast<uint16_t>(exponent << 10) | ((r >> 1) & 0x3ff);
}

// Uniform in [-1, 1) from 24 random bits.
float F32(uint64_t r) {
  return static_cast<float>(static_cast<uint32_t>(r >> 40)) / (1 << 23) - 1.0f;
}

template <typename T, typename Draw>
void Fill(std::string& out, size_t count, Draw draw) {
  for (size_t i = 0; i < count; ++i) Put<T>(out, i, static_cast<T>(draw()));
}

// Every 16-bit draw's value through `to` (Bf16 or F16), made once.
using Table16 = std::array<uint16_t, 1 << 16>;
Table16 MakeTable16(uint16_t (*to)(uint32_t)) {
  Table16 t;
  for (uint32_t r = 0; r < t.size(); ++r) t[r] = to(r);
  return t;
}

// Fill<uint16_t> of `table[d.Next16()]`, the same values, four from each
// 64-bit draw at once: a table lookup instead of Bf16's division makes a
// large weight (the example's lm-head: 525 MB) in about half the time.
void Fill16(std::string& out, size_t count, Draws& d, const Table16& table) {
  char* at = out.data();
  const size_t whole = count / 4;
  for (size_t i = 0; i < whole; ++i, at += 4 * sizeof(uint16_t)) {
    const uint64_t r = d.Next64();
    const uint16_t v[4] = {table[r & 0xffff], table[(r >> 16) & 0xffff],
                           table[(r >> 32) & 0xffff], table[r >> 48]};
    std::memcpy(at, v, sizeof(v));
  }
  for (size_t i = 4 * whole; i < count; ++i) {
    Put<uint16_t>(out, i, table[d.Next16()]);
  }
}

}  // namespace

uint64_t InputSeed(uint64_t seed, int step, int op_buffer) {
  return Mix(Mix(seed) ^ (static_cast<uint64_t>(step) << 32) ^
             static_cast<uint32_t>(op_buffer));
}

uint64_t OperatorInputSeed(uint64_t seed, int op_buffer) {
  return InputSeed(seed, /*step=*/0, op_buffer);
}

std::string SeededInput(v1::DType dtype, uint64_t nbytes, uint64_t seed) {
  std::string out = ZeroBytes(nbytes);
  const uint64_t size = DTypeSize(dtype);
  if (size == 0) return out;
  const size_t count = nbytes / size;
  Draws d(seed);
  VisitElementType(dtype, [&]<typename E>(E) {
    using T = typename E::Storage;
    if constexpr (E::kind == ElementKind::kBf16 ||
                  E::kind == ElementKind::kF16) {
      static const Table16 kTable =
          MakeTable16(E::kind == ElementKind::kBf16 ? Bf16 : F16);
      Fill16(out, count, d, kTable);
    } else if constexpr (E::kind == ElementKind::kFloat) {
      Fill<T>(out, count, [&] { return F32(d.Next64()); });
    } else if constexpr (std::is_signed_v<T>) {
      Fill<T>(out, count, [&] { return d.Small(); });
    } else {
      Fill<T>(out, count, [&] { return d.SmallUnsigned(); });
    }
  });
  return out;
}

std::shared_ptr<const std::string> InputCache::Get(v1::DType dtype,
                                                   uint64_t nbytes,
                                                   uint64_t seed) {
  const Key key{dtype, nbytes, seed};
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  if (pending_.contains(key)) return TakePrefetched(key);
  made_bytes_ += nbytes;
  return Keep(key, std::make_shared<const std::string>(
                       SeededInput(dtype, nbytes, seed)));
}

void InputCache::Release(int user) { in_use_.erase(user); }

void InputCache::Prefetch(const std::vector<Want>& wants, int user) {
  std::set<Key>& theirs = in_use_[user];
  for (const Want& w : wants) {
    const Key key{w.dtype, w.nbytes, w.seed};
    theirs.insert(key);
    if (entries_.contains(key) || pending_.contains(key)) continue;
    made_bytes_ += w.nbytes;
    try {
      pending_[key] = std::async(std::launch::async, [w] {
                        BecomeHelperThread();
                        return std::make_shared<const std::string>(
                            SeededInput(w.dtype, w.nbytes, w.seed));
                      }).share();
    } catch (const std::system_error&) {
      // No thread to spare: the input is made when it is asked for.
      made_bytes_ -= w.nbytes;
    }
  }
}

bool InputCache::Ended(const std::shared_future<Made>& made) {
  return made.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

InputCache::Made InputCache::TakePrefetched(const Key& key) {
  auto it = pending_.find(key);
  Made made = it->second.get();
  pending_.erase(it);
  return Keep(key, std::move(made));
}

int InputCache::prefetched_ended() const {
  return static_cast<int>(
      std::count_if(pending_.begin(), pending_.end(),
                    [](const auto& entry) { return Ended(entry.second); }));
}

void InputCache::TakeEnded() {
  std::vector<Key> ended;
  for (const auto& [key, made] : pending_) {
    if (Ended(made)) ended.push_back(key);
  }
  for (const Key& key : ended) TakePrefetched(key);
}

bool InputCache::InUse(const Key& key) const {
  for (const auto& [user, keys] : in_use_) {
    if (keys.contains(key)) return true;
  }
  return false;
}

void InputCache::MakeAll(const std::vector<Want>& wants, int threads,
                         int user) {
  std::vector<Key> todo, prefetched;
  uint64_t needed = 0;
  // Before `user`'s last inputs stop being in use: one it prefetched is
  // kept for it, whatever its size.
  TakeEnded();
  std::set<Key>& mine = in_use_[user];
  mine.clear();
  for (const Want& w : wants) {
    const Key key{w.dtype, w.nbytes, w.seed};
    if (!entries_.contains(key) && !mine.contains(key)) {
      (pending_.contains(key) ? prefetched : todo).push_back(key);
      needed += w.nbytes;
    }
    mine.insert(key);
  }
  Trim(needed);  // what the batch does not use goes first
  MakeEach(todo, threads);
  for (const Key& key : prefetched) TakePrefetched(key);
}

void InputCache::MakeEach(const std::vector<Key>& todo, int threads) {
  if (todo.size() < 2 || threads < 2) {
    for (const Key& k : todo) {
      Get(static_cast<v1::DType>(std::get<0>(k)), std::get<1>(k),
          std::get<2>(k));
    }
    return;
  }
  std::vector<std::shared_ptr<const std::string>> made(todo.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < todo.size(); i = next++) {
      const auto& [dtype, nbytes, seed] = todo[i];
      made[i] = std::make_shared<const std::string>(
          SeededInput(static_cast<v1::DType>(dtype), nbytes, seed));
    }
  };
  std::vector<std::thread> helpers;
  const size_t n = std::min<size_t>(threads, todo.size());
  for (size_t t = 1; t < n; ++t) helpers.emplace_back(work);
  work();  // the caller is one of them
  for (std::thread& t : helpers) t.join();
  for (size_t i = 0; i < todo.size(); ++i) {
    made_bytes_ += std::get<1>(todo[i]);
    Keep(todo[i], std::move(made[i]));
  }
}

void InputCache::Trim(uint64_t more) {
  std::deque<Key> kept;
  while (!order_.empty()) {
    const Key key = order_.front();
    order_.pop_front();
    auto it = entries_.find(key);
    if (bytes_ + more > max_bytes_ && !InUse(key)) {
      bytes_ -= it->second->size();
      entries_.erase(it);
    } else {
      kept.push_back(key);
    }
  }
  order_ = std::move(kept);
}

std::shared_ptr<const std::string> InputCache::Keep(
    const Key& key, std::shared_ptr<const std::string> made) {
  const uint64_t nbytes = made->size();
  const bool in_use = InUse(key);
  if (nbytes > max_bytes_ && !in_use) return made;
  Trim(in_use ? 0 : nbytes);
  entries_.emplace(key, made);
  order_.push_back(key);
  bytes_ += nbytes;
  return made;
}

void AddArtifactWants(const v1::Operator& op, const Artifact& artifact,
                      const std::map<std::string, std::string>& given,
                      uint64_t seed, std::vector<InputCache::Want>& wants) {
  for (const ArtifactBuffer& buf : artifact.buffers) {
    if (!buf.fills || buf.op_buffer < 0 || buf.op_buffer >= op.buffers_size())
      continue;
    const v1::Buffer& ob = op.buffers(buf.op_buffer);
    if (given.contains(ob.name())) continue;
    wants.push_back(
        {ob.dtype(), buf.nbytes, OperatorInputSeed(seed, buf.op_buffer)});
  }
}

void AddDeclaredWants(const v1::Operator& op,
                      const std::map<std::string, std::string>& given,
                      uint64_t seed, std::vector<InputCache::Want>& wants) {
  for (int i = 0; i < op.buffers_size(); ++i) {
    const v1::Buffer& ob = op.buffers(i);
    const std::optional<uint64_t> nbytes = BufferBytes(ob);
    if (!ob.fills() || !nbytes || given.contains(ob.name())) continue;
    wants.push_back({ob.dtype(), *nbytes, OperatorInputSeed(seed, i)});
  }
}

}  // namespace irontune

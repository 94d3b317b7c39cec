// Element conversions and output-row sampling shared by the simulated NPU's
// kernels (daemon/sim/kernels.h) and the CPU reference that judges
// outputs (daemon/ops/reference.h). One place, so both read and round elements
// the same way and compute the same rows.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_DAEMON_OPS_NUMERIC_H_
#define IRONTUNE_DAEMON_OPS_NUMERIC_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "irontune/v1/recording.pb.h"

namespace irontune {

// bf16 <-> f32, rounding to nearest even (NaN kept quiet).
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);
// IEEE half <-> f32, rounding to nearest even; overflow to infinity.
float F16ToFloat(uint16_t bits);
uint16_t FloatToF16(float value);

// How an element of a dtype is held: its C++ type `Storage` (bf16 and f16
// as uint16_t bits) and its kind, which says how it converts to a float.
enum class ElementKind { kBf16, kF16, kFloat, kInteger };
template <typename T, ElementKind K>
struct ElementType {
  using Storage = T;
  static constexpr ElementKind kind = K;
};

// Calls visit(ElementType<...>{}) with `dtype`'s element type and returns
// true; returns false without calling it for DTYPE_UNSPECIFIED or a dtype
// this build does not know. The one list of the dtypes' storage types.
template <typename Visit>
bool VisitElementType(v1::DType dtype, Visit&& visit) {
  using K = ElementKind;
  switch (dtype) {
    case v1::DTYPE_BF16:
      visit(ElementType<uint16_t, K::kBf16>{});
      return true;
    case v1::DTYPE_F16:
      visit(ElementType<uint16_t, K::kF16>{});
      return true;
    case v1::DTYPE_F32:
      visit(ElementType<float, K::kFloat>{});
      return true;
    case v1::DTYPE_I8:
      visit(ElementType<int8_t, K::kInteger>{});
      return true;
    case v1::DTYPE_U8:
      visit(ElementType<uint8_t, K::kInteger>{});
      return true;
    case v1::DTYPE_I16:
      visit(ElementType<int16_t, K::kInteger>{});
      return true;
    case v1::DTYPE_U16:
      visit(ElementType<uint16_t, K::kInteger>{});
      return true;
    case v1::DTYPE_I32:
      visit(ElementType<int32_t, K::kInteger>{});
      return true;
    case v1::DTYPE_U32:
      visit(ElementType<uint32_t, K::kInteger>{});
      return true;
    case v1::DTYPE_I64:
      visit(ElementType<int64_t, K::kInteger>{});
      return true;
    default:
      return false;
  }
}

// Element `i` of a buffer of `dtype` at `data` (little-endian), as a float;
// 0 for DTYPE_UNSPECIFIED. REQUIRES: `data` holds element i.
float LoadElement(v1::DType dtype, const char* data, uint64_t i);
// Elements [begin, begin + n) into out[0, n), each as LoadElement reads it,
// the dtype looked at once. REQUIRES: `data` holds them; `out` has n slots.
void LoadElements(v1::DType dtype, const char* data, uint64_t begin, uint64_t n,
                  float* out);
// Stores `v` as element `i`: floats rounded to nearest even, integers
// rounded and saturated (NaN as 0). REQUIRES: `data` holds element i.
void StoreElement(v1::DType dtype, char* data, uint64_t i, float v);
// in[0, n) as elements [begin, begin + n), each as StoreElement stores it,
// the dtype looked at once. REQUIRES: `data` holds them; `in` has n values.
void StoreElements(v1::DType dtype, char* data, uint64_t begin, uint64_t n,
                   const float* in);
// `v` at the precision of `dtype` (bf16, f16; others unchanged).
float RoundTo(v1::DType dtype, float v);

// Dimensions past this are not computed (they would overflow products).
inline constexpr int64_t kMaxDim = int64_t{1} << 31;
// Whether every dim is in [1, kMaxDim].
inline bool Sane(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) {
    if (d <= 0 || d > kMaxDim) return false;
  }
  return true;
}

// Bounded work: a step computes at most kSampleWorkBudget multiply-adds.
inline constexpr int64_t kSampleWorkBudget = int64_t{1} << 25;
// GEMM computes at most this many rows of C.
inline constexpr int64_t kMaxGemmRows = 64;

// How many of `rows` rows to compute when each costs `work_per_row`:
// min(kSampleWorkBudget / work_per_row (at least 1), cap), within
// [0, rows].
int64_t SampledRows(int64_t rows, int64_t work_per_row, int64_t cap);
// The j-th of r evenly spaced rows of `rows`: j * rows / r.
// REQUIRES: 0 <= j < r.
int64_t SampleRow(int64_t j, int64_t r, int64_t rows);

// RoPE's default theta: Llama 3.2 1B (docs/npu-facts.md, "A real model's
// shapes"); RMSNorm's epsilon.
inline constexpr double kRopeTheta = 500000;
inline constexpr double kRmsNormEps = 1e-6;

// RoPE's rotation angle for the element pair at `p` (even) of a `dim`-element
// head in row `row`: row * theta^(-p / dim).
inline double RopeAngle(int64_t row, int64_t p, int64_t dim, double theta) {
  return row * std::pow(theta, -static_cast<double>(p) / dim);
}

// RoPE (iron/operators/rope.py) of one row of `cols` elements, computed in
// T: the row is x[x_base + i], its angle row ang[a_base + 2p] (cos) and
// ang[a_base + 2p + 1] (sin); method 0 (`halves`) rotates element p with
// p + cols / 2, method 1 element 2p with 2p + 1. Calls set(i, y) for each
// element i of the row. `x` and `ang` are read with operator[].
template <typename T, typename Buffer, typename Set>
void RopeRow(const Buffer& x, int64_t x_base, const Buffer& ang, int64_t a_base,
             int64_t cols, bool halves, Set&& set) {
  const int64_t half = cols / 2;
  for (int64_t p = 0; p < half; ++p) {
    const T cs = ang[a_base + 2 * p], sn = ang[a_base + 2 * p + 1];
    const int64_t i0 = halves ? p : 2 * p, i1 = halves ? p + half : 2 * p + 1;
    const T x0 = x[x_base + i0], x1 = x[x_base + i1];
    set(i0, x0 * cs - x1 * sn);
    set(i1, x0 * sn + x1 * cs);
  }
}

// The elementwise classes (docs/operators.md): their one-element maps, which
// the CPU reference and the simulated NPU's kernels share. Binary classes
// read two inputs (x, z), unary ones x. ElementMap is nullopt for a class
// that is not elementwise. Params read: AXPY scalar_factor (3.0),
// LeakyReLU alpha (0.01), Clamp low and high (unbounded when missing), Log
// offset (0, as the kernel holds it: float32; y = log(x + offset)).
// RowwiseMul is binary with its second input one row, broadcast: element i
// of x takes element i % row of it (BroadcastsSecond).
bool IsElementwiseClass(std::string_view cls);
bool IsBinaryElementwiseClass(std::string_view cls);
bool BroadcastsSecond(std::string_view cls);
std::optional<double> ElementMap(const v1::Operator& op, double x, double z);

// ElementMap of one operator, its class and params looked up once: for
// maps over many elements. Thread-safe (a value).
class ElementMapper {
 public:
  explicit ElementMapper(const v1::Operator& op);
  // Whether the class is elementwise (ElementMap is not nullopt).
  bool maps() const { return kind_ != Kind::kNone; }
  // Whether class `cls` is one of the elementwise classes mapped: the one
  // list of them (IsElementwiseClass).
  static bool Maps(std::string_view cls);
  // ElementMap(op, x, z); 0 where it is nullopt.
  double operator()(double x, double z) const;

 private:
  enum class Kind {
    kNone,
    kAdd,
    kMul,
    kAxpy,
    kSilu,
    kRelu,
    kSigmoid,
    kTanh,
    kGelu,
    kLeakyRelu,
    kClamp,
    kLog
  };
  static const std::map<std::string, Kind, std::less<>>& Kinds();

  Kind kind_ = Kind::kNone;
  double a_ = 0;  // AXPY's factor, LeakyReLU's alpha, Clamp's low
  double b_ = 0;  // Clamp's high
};

// Limbs' and Magnitude's output row of an input row (iron/operators/
// limbs.py @ 20ab08a, magnitude.py @ 279b5b8). Limbs: `in_len` float32 in,
// the six planes [hi, mid, hi, lo, mid, hi] of `in_len` bf16 limbs each
// out (hi = x to bf16, mid = the float32 residual to bf16, lo = the next
// residual to bf16; each rounded to nearest even); Magnitude: `in_len`
// floats [re | im] in, hypot(re, im) of the halves out, in double.
bool IsRowMapClass(std::string_view cls);
// The output row's length for an input row of `in_len` (6 * in_len,
// in_len / 2); 0 for another class.
int64_t RowMapOutLength(std::string_view cls, int64_t in_len);

// The computations the CPU reference and the simulated NPU's kernels both
// have, an F (a function) each.
template <typename F>
struct Computations {
  F gemm, gemv, elementwise, row_wise, rope, mha, sample, row_mapped, gqa;
};
// The computation of class `cls` in `c`; nullptr for a class neither
// computes. The one list of the classes computed, and by which.
template <typename F>
F ComputationOf(std::string_view cls, const Computations<F>& c) {
  if (cls == "GEMM") return c.gemm;
  if (cls == "GEMV") return c.gemv;
  if (IsElementwiseClass(cls)) return c.elementwise;
  if (cls == "RMSNorm" || cls == "Softmax") return c.row_wise;
  if (cls == "RoPE") return c.rope;
  if (cls == "MHA") return c.mha;
  if (cls == "Sample") return c.sample;
  if (IsRowMapClass(cls)) return c.row_mapped;
  if (cls == "GQAScores" || cls == "GQAContext") return c.gqa;
  return nullptr;
}
// `x` read with operator[] from `base`; `y` gets RowMapOutLength values.
template <typename Buffer>
void RowMap(std::string_view cls, const Buffer& x, int64_t base, int64_t in_len,
            float* y) {
  if (cls == "Limbs") {
    for (int64_t i = 0; i < in_len; ++i) {
      const float v = static_cast<float>(x[base + i]);
      const float hi = RoundTo(v1::DTYPE_BF16, v);
      const float r = v - hi;
      const float mid = RoundTo(v1::DTYPE_BF16, r);
      const float lo = RoundTo(v1::DTYPE_BF16, r - mid);
      const float planes[6] = {hi, mid, hi, lo, mid, hi};
      for (int p = 0; p < 6; ++p) y[p * in_len + i] = planes[p];
    }
    return;
  }
  const int64_t half = in_len / 2;  // Magnitude
  for (int64_t i = 0; i < half; ++i) {
    y[i] =
        static_cast<float>(std::hypot(static_cast<double>(x[base + i]),
                                      static_cast<double>(x[base + half + i])));
  }
}

// GQAScores' and GQAContext's shape (iron/operators/gqa.py @ 607010e): one
// query's `heads` over a [seq_len, groups, head_dim] cache, `used` of its
// positions (the call's bound).
struct GqaDims {
  int64_t heads = 0, groups = 0, seq_len = 0, head_dim = 0, used = 0;

  // An output row's length: GQAScores' seq_len, GQAContext's head_dim.
  int64_t RowLength(bool scores) const { return scores ? seq_len : head_dim; }
  // Whether a, b and the output, of these many elements, hold the layout:
  // a [seq_len, groups, head_dim], b [heads, head_dim] (GQAScores) or
  // [heads, seq_len], the output `heads` rows of RowLength.
  bool Fits(bool scores, uint64_t a, uint64_t b, uint64_t out) const {
    return a >= static_cast<uint64_t>(seq_len * groups * head_dim) &&
           b >= static_cast<uint64_t>(heads * (scores ? head_dim : seq_len)) &&
           out >= static_cast<uint64_t>(heads * RowLength(scores));
  }
};
// The GqaDims of `op`, the CPU reference's or the sim's view of an
// operator (Param and Extent by name, each with a fallback): heads, groups,
// seq_len and head_dim (default 64) its params, `used` its seq_len bounded
// by the call, within [0, seq_len]. nullopt where a dim is not Sane or
// heads is not a multiple of groups.
template <typename Op>
std::optional<GqaDims> ReadGqaDims(const Op& op) {
  GqaDims s{.heads = op.Param("heads", 0),
            .groups = op.Param("groups", 0),
            .seq_len = op.Param("seq_len", 0),
            .head_dim = op.Param("head_dim", 64)};
  if (!Sane({s.heads, s.groups, s.seq_len, s.head_dim}) ||
      s.heads % s.groups != 0)
    return std::nullopt;
  s.used = std::clamp<int64_t>(op.Extent("seq_len", s.seq_len), 0, s.seq_len);
  return s;
}
// Row h of the output, in double in index order: GQAScores (a = keys, b =
// q [heads, head_dim]) y[l] = q[h] . keys[l, g] for l < used; GQAContext
// (a = cache, b = weights [heads, seq_len]) y[d] = sum_{l < used}
// weights[h, l] * cache[l, g, d]; g = h / (heads / groups).
template <typename Buffer>
void GqaRow(bool scores, const Buffer& a, const Buffer& b, const GqaDims& s,
            int64_t h, double* y) {
  const int64_t g = h / (s.heads / s.groups), dim = s.head_dim;
  for (int64_t l = 0; l < s.used; ++l) {
    const int64_t row = (l * s.groups + g) * dim;
    if (scores) {
      double sum = 0;
      for (int64_t d = 0; d < dim; ++d)
        sum += static_cast<double>(b[h * dim + d]) * a[row + d];
      y[l] = sum;
    } else {
      const double w = b[h * s.seq_len + l];
      for (int64_t d = 0; d < dim; ++d) y[d] += w * a[row + d];
    }
  }
}

// The last extent of `b`'s shape, capped at 2^40; `fallback` for an empty
// shape or a last extent of 0.
int64_t LastAxis(const v1::Buffer& b, int64_t fallback);

// One query row's attention over `len` cached rows, computed in T: adds
// softmax(q[row] . k[base + l] / sqrt(d)) . v[base + l] to y[0, d). Rows are
// `d` elements; `q`, `k` and `v` are read with operator[]; `p` is scratch of
// at least `len` elements.
template <typename T, typename Buffer>
void AttendRow(const Buffer& q, const Buffer& k, const Buffer& v, int64_t row,
               int64_t base, int64_t len, int64_t d, std::vector<T>& p, T* y) {
  const T scale = T{1} / std::sqrt(static_cast<T>(d));
  T mx = -std::numeric_limits<T>::infinity();
  for (int64_t l = 0; l < len; ++l) {
    T s = 0;
    for (int64_t i = 0; i < d; ++i) s += q[row * d + i] * k[base + l * d + i];
    p[l] = s * scale;
    mx = std::max(mx, p[l]);
  }
  T sum = 0;
  for (int64_t l = 0; l < len; ++l) sum += (p[l] = std::exp(p[l] - mx));
  for (int64_t l = 0; l < len; ++l) {
    const T weight = p[l] / sum;
    for (int64_t i = 0; i < d; ++i) y[i] += weight * v[base + l * d + i];
  }
}

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_OPS_NUMERIC_H_

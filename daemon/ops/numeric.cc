#include "daemon/ops/numeric.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "common/op_access.h"

namespace irontune {
namespace {

template <typename T>
T LoadAs(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void StoreAs(char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

template <typename T>
T SaturateInt(float v) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(static_cast<double>(v));
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  return static_cast<T>(std::clamp(r, lo, hi));
}

}  // namespace

float Bf16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t FloatToBf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

float F16ToFloat(uint16_t bits) {
  const uint32_t sign = (bits >> 15) & 1, exp = (bits >> 10) & 0x1f,
                 mant = bits & 0x3ff;
  float magnitude;
  if (exp == 0) {
    magnitude = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    magnitude = mant ? std::numeric_limits<float>::quiet_NaN()
                     : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mant | 0x400),
                           static_cast<int>(exp) - 25);
  }
  return sign ? -magnitude : magnitude;
}

uint16_t FloatToF16(float value) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  float a = std::fabs(value);
  if (std::isnan(a)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -14)) {  // subnormal: units of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int e;
  float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  uint32_t mant =
      static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));  // 11 bits
  if (mant == 2048) {
    mant = 1024;
    ++e;
  }
  const int biased = e - 1 + 15;
  if (biased >= 31) return sign | 0x7c00;
  return sign | static_cast<uint16_t>((biased << 10) | (mant & 0x3ff));
}

namespace {

// A stored element of type E as a float.
template <typename E>
float ToFloat(typename E::Storage v) {
  if constexpr (E::kind == ElementKind::kBf16) {
    return Bf16ToFloat(v);
  } else if constexpr (E::kind == ElementKind::kF16) {
    return F16ToFloat(v);
  } else {
    return static_cast<float>(v);
  }
}

// `v` as an element of type E: floats rounded to nearest even, integers
// rounded and saturated.
template <typename E>
typename E::Storage FromFloat(float v) {
  if constexpr (E::kind == ElementKind::kBf16) {
    return FloatToBf16(v);
  } else if constexpr (E::kind == ElementKind::kF16) {
    return FloatToF16(v);
  } else if constexpr (E::kind == ElementKind::kFloat) {
    return v;
  } else {
    return SaturateInt<typename E::Storage>(v);
  }
}

}  // namespace

float LoadElement(v1::DType dtype, const char* data, uint64_t i) {
  float value = 0;
  VisitElementType(dtype, [&]<typename E>(E) {
    using T = typename E::Storage;
    value = ToFloat<E>(LoadAs<T>(data + i * sizeof(T)));
  });
  return value;
}

void LoadElements(v1::DType dtype, const char* data, uint64_t begin, uint64_t n,
                  float* out) {
  const bool known = VisitElementType(dtype, [&]<typename E>(E) {
    using T = typename E::Storage;
    const char* p = data + begin * sizeof(T);
    for (uint64_t j = 0; j < n; ++j)
      out[j] = ToFloat<E>(LoadAs<T>(p + j * sizeof(T)));
  });
  if (!known) std::fill(out, out + n, 0.0f);
}

void StoreElements(v1::DType dtype, char* data, uint64_t begin, uint64_t n,
                   const float* in) {
  VisitElementType(dtype, [&]<typename E>(E) {
    using T = typename E::Storage;
    char* p = data + begin * sizeof(T);
    for (uint64_t j = 0; j < n; ++j)
      StoreAs(p + j * sizeof(T), FromFloat<E>(in[j]));
  });
}

void StoreElement(v1::DType dtype, char* data, uint64_t i, float v) {
  StoreElements(dtype, data, i, 1, &v);
}

float RoundTo(v1::DType dtype, float v) {
  switch (dtype) {
    case v1::DTYPE_BF16:
      return Bf16ToFloat(FloatToBf16(v));
    case v1::DTYPE_F16:
      return F16ToFloat(FloatToF16(v));
    default:
      return v;
  }
}

int64_t SampledRows(int64_t rows, int64_t work_per_row, int64_t cap) {
  const int64_t by_budget = std::max<int64_t>(
      1, kSampleWorkBudget / std::max<int64_t>(work_per_row, 1));
  return std::clamp<int64_t>(std::min(by_budget, cap), 0,
                             std::max<int64_t>(rows, 0));
}

int64_t SampleRow(int64_t j, int64_t r, int64_t rows) {
  // The product fits 64 bits for any buffer a host holds; the 128-bit
  // division (a library call) is for the rest.
  constexpr int64_t kNarrow = int64_t{1} << 31;
  if (j < kNarrow && rows < kNarrow) return j * rows / r;
  return static_cast<int64_t>((static_cast<__int128>(j) * rows) / r);
}

int64_t LastAxis(const v1::Buffer& b, int64_t fallback) {
  if (b.shape_size() == 0 || b.shape(b.shape_size() - 1) == 0) return fallback;
  return static_cast<int64_t>(
      std::min<uint64_t>(b.shape(b.shape_size() - 1), 1ull << 40));
}

namespace {

double DoubleParam(const v1::Operator& op, std::string_view name,
                   double fallback) {
  const v1::Value* v = FindParam(op, name);
  if (v == nullptr) return fallback;
  if (v->kind_case() == v1::Value::kDoubleValue) return v->double_value();
  if (v->kind_case() == v1::Value::kIntValue) return v->int_value();
  return fallback;
}

}  // namespace

bool IsBinaryElementwiseClass(std::string_view cls) {
  return cls == "ElementwiseAdd" || cls == "ElementwiseMul" || cls == "AXPY" ||
         cls == "RowwiseMul";
}

bool BroadcastsSecond(std::string_view cls) { return cls == "RowwiseMul"; }

bool IsRowMapClass(std::string_view cls) {
  return cls == "Limbs" || cls == "Magnitude";
}

int64_t RowMapOutLength(std::string_view cls, int64_t in_len) {
  if (cls == "Limbs") return 6 * in_len;
  if (cls == "Magnitude") return in_len / 2;
  return 0;
}

bool IsElementwiseClass(std::string_view cls) {
  return ElementMapper::Maps(cls);
}

std::optional<double> ElementMap(const v1::Operator& op, double x, double z) {
  const ElementMapper map(op);
  if (!map.maps()) return std::nullopt;
  return map(x, z);
}

const std::map<std::string, ElementMapper::Kind, std::less<>>&
ElementMapper::Kinds() {
  static const auto* const kKinds =
      new std::map<std::string, Kind, std::less<>>{
          {"ElementwiseAdd", Kind::kAdd},
          {"ElementwiseMul", Kind::kMul},
          {"AXPY", Kind::kAxpy},
          {"SiLU", Kind::kSilu},
          {"ReLU", Kind::kRelu},
          {"Sigmoid", Kind::kSigmoid},
          {"Tanh", Kind::kTanh},
          {"GELU", Kind::kGelu},
          {"LeakyReLU", Kind::kLeakyRelu},
          {"Clamp", Kind::kClamp},
          {"Log", Kind::kLog},
          {"RowwiseMul", Kind::kMul}};
  return *kKinds;
}

bool ElementMapper::Maps(std::string_view cls) {
  return Kinds().find(cls) != Kinds().end();
}

ElementMapper::ElementMapper(const v1::Operator& op) {
  const auto it = Kinds().find(op.class_name());
  if (it == Kinds().end()) return;
  kind_ = it->second;
  const auto bf16 = [](double v) {
    return RoundTo(v1::DTYPE_BF16, static_cast<float>(v));
  };
  if (kind_ == Kind::kAxpy) a_ = bf16(DoubleParam(op, "scalar_factor", 3.0));
  if (kind_ == Kind::kLeakyRelu) a_ = DoubleParam(op, "alpha", 0.01);
  // iron/operators/log.py: the offset as the kernel holds it, a float32.
  if (kind_ == Kind::kLog)
    a_ = static_cast<float>(DoubleParam(op, "offset", 0.0));
  if (kind_ == Kind::kClamp) {
    a_ = bf16(DoubleParam(op, "low", -INFINITY));
    b_ = bf16(DoubleParam(op, "high", INFINITY));
  }
}

double ElementMapper::operator()(double x, double z) const {
  switch (kind_) {
    case Kind::kAdd:
      return x + z;
    case Kind::kMul:
      return x * z;
    case Kind::kAxpy:
      return a_ * x + z;
    case Kind::kSilu:
      return x / (1.0 + std::exp(-x));
    case Kind::kRelu:
      return x > 0 ? x : 0.0;
    case Kind::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Kind::kTanh:
      return std::tanh(x);
    case Kind::kGelu: {
      const double k = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    case Kind::kLeakyRelu:
      return x >= 0 ? x : a_ * x;
    case Kind::kClamp:
      return std::min(std::max(x, a_), b_);
    case Kind::kLog:
      return std::log(x + a_);
    case Kind::kNone:
      break;
  }
  return 0;
}

}  // namespace irontune

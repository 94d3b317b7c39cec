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

float LoadElement(v1::DType dtype, const char* data, uint64_t i) {
  switch (dtype) {
    case v1::DTYPE_BF16:
      return Bf16ToFloat(LoadAs<uint16_t>(data + 2 * i));
    case v1::DTYPE_F16:
      return F16ToFloat(LoadAs<uint16_t>(data + 2 * i));
    case v1::DTYPE_F32:
      return LoadAs<float>(data + 4 * i);
    case v1::DTYPE_I8:
      return LoadAs<int8_t>(data + i);
    case v1::DTYPE_U8:
      return LoadAs<uint8_t>(data + i);
    case v1::DTYPE_I16:
      return LoadAs<int16_t>(data + 2 * i);
    case v1::DTYPE_U16:
      return LoadAs<uint16_t>(data + 2 * i);
    case v1::DTYPE_I32:
      return static_cast<float>(LoadAs<int32_t>(data + 4 * i));
    case v1::DTYPE_U32:
      return static_cast<float>(LoadAs<uint32_t>(data + 4 * i));
    case v1::DTYPE_I64:
      return static_cast<float>(LoadAs<int64_t>(data + 8 * i));
    default:
      return 0;
  }
}

namespace {

// out[j] = convert(element begin + j) for elements of type T.
template <typename T, typename Convert>
void LoadRun(const char* data, uint64_t begin, uint64_t n, float* out,
             Convert convert) {
  const char* p = data + begin * sizeof(T);
  for (uint64_t j = 0; j < n; ++j)
    out[j] = convert(LoadAs<T>(p + j * sizeof(T)));
}

}  // namespace

void LoadElements(v1::DType dtype, const char* data, uint64_t begin, uint64_t n,
                  float* out) {
  auto same = [](auto v) { return static_cast<float>(v); };
  switch (dtype) {
    case v1::DTYPE_BF16:
      return LoadRun<uint16_t>(data, begin, n, out, Bf16ToFloat);
    case v1::DTYPE_F16:
      return LoadRun<uint16_t>(data, begin, n, out, F16ToFloat);
    case v1::DTYPE_F32:
      return LoadRun<float>(data, begin, n, out, same);
    case v1::DTYPE_I8:
      return LoadRun<int8_t>(data, begin, n, out, same);
    case v1::DTYPE_U8:
      return LoadRun<uint8_t>(data, begin, n, out, same);
    case v1::DTYPE_I16:
      return LoadRun<int16_t>(data, begin, n, out, same);
    case v1::DTYPE_U16:
      return LoadRun<uint16_t>(data, begin, n, out, same);
    case v1::DTYPE_I32:
      return LoadRun<int32_t>(data, begin, n, out, same);
    case v1::DTYPE_U32:
      return LoadRun<uint32_t>(data, begin, n, out, same);
    case v1::DTYPE_I64:
      return LoadRun<int64_t>(data, begin, n, out, same);
    default:
      std::fill(out, out + n, 0.0f);
  }
}

namespace {

// Element begin + j = convert(in[j]) for elements of type T.
template <typename T, typename Convert>
void StoreRun(char* data, uint64_t begin, uint64_t n, const float* in,
              Convert convert) {
  char* p = data + begin * sizeof(T);
  for (uint64_t j = 0; j < n; ++j) StoreAs(p + j * sizeof(T), convert(in[j]));
}

}  // namespace

void StoreElements(v1::DType dtype, char* data, uint64_t begin, uint64_t n,
                   const float* in) {
  auto same = [](float v) { return v; };
  switch (dtype) {
    case v1::DTYPE_BF16:
      return StoreRun<uint16_t>(data, begin, n, in, FloatToBf16);
    case v1::DTYPE_F16:
      return StoreRun<uint16_t>(data, begin, n, in, FloatToF16);
    case v1::DTYPE_F32:
      return StoreRun<float>(data, begin, n, in, same);
    case v1::DTYPE_I8:
      return StoreRun<int8_t>(data, begin, n, in, SaturateInt<int8_t>);
    case v1::DTYPE_U8:
      return StoreRun<uint8_t>(data, begin, n, in, SaturateInt<uint8_t>);
    case v1::DTYPE_I16:
      return StoreRun<int16_t>(data, begin, n, in, SaturateInt<int16_t>);
    case v1::DTYPE_U16:
      return StoreRun<uint16_t>(data, begin, n, in, SaturateInt<uint16_t>);
    case v1::DTYPE_I32:
      return StoreRun<int32_t>(data, begin, n, in, SaturateInt<int32_t>);
    case v1::DTYPE_U32:
      return StoreRun<uint32_t>(data, begin, n, in, SaturateInt<uint32_t>);
    case v1::DTYPE_I64:
      return StoreRun<int64_t>(data, begin, n, in, SaturateInt<int64_t>);
    default:
      return;
  }
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

#include "daemon/tune/judge.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/design.h"
#include "common/families.h"
#include "common/op_access.h"
#include "common/recording.h"
#include "daemon/base/sha256.h"
#include "daemon/ops/numeric.h"
#include "daemon/ops/reference.h"

namespace irontune {
namespace {

// Why `op` (the `which` setting) has no gate to judge by; nullopt when it
// has one.
std::optional<std::string> NoGate(const v1::Operator& op,
                                  absl::string_view which) {
  if (op.tolerance().gate_case() != v1::Tolerance::GATE_NOT_SET) {
    return std::nullopt;
  }
  return absl::StrCat(kOnlyBitIdentical, ": ", op.class_name(),
                      " states no tolerance (", which,
                      " Operator.tolerance is unset)");
}

bool Comparable(const v1::Tolerance& t) {
  return t.gate_case() == v1::Tolerance::kClose ||
         t.gate_case() == v1::Tolerance::kBf16Ulps;
}

// Why a bounded extent is not judged against the reference: a per-call
// value gives it fewer rows than its param holds, or none is given (IRON
// compares values.get(extent) with the extent's length).
std::optional<std::string> BoundShort(const v1::Operator& op,
                                      const CallValues& values) {
  for (const v1::CallValue& cv : op.values()) {
    if (cv.bounds().empty()) continue;
    const std::optional<int64_t> length = IntParam(op, cv.bounds());
    auto it = values.find(cv.name());
    if (it == values.end()) {
      return absl::StrCat(kOnlyBitIdentical, " under a bound (no value for ",
                          cv.name(), ", which bounds ", cv.bounds(), ")");
    }
    if (length.has_value() && it->second != *length) {
      return absl::StrCat(kOnlyBitIdentical, " under a bound");
    }
  }
  return std::nullopt;
}

// A bf16 bit pattern on a monotonic integer scale; -0 and +0 are one point.
int32_t Bf16Ordinal(float v) {
  const int32_t bits = FloatToBf16(v);
  return (bits & 0x8000) ? 0x8000 - bits : bits;
}

// One element's comparison under a gate.
struct ElementVerdict {
  bool bad = false;
  bool nonfinite = false;  // a NaN or infinity not reproduced
  double err = 0;          // |got - want|, or ulps under bf16_ulps
  double bound = 0;
};

ElementVerdict CompareElement(const v1::Tolerance& gate, bool is_bf16, double g,
                              double w) {
  ElementVerdict v;
  const bool g_finite = std::isfinite(g), w_finite = std::isfinite(w);
  if (!g_finite || !w_finite) {
    const bool same = (std::isnan(g) && std::isnan(w)) || g == w;
    v.bad = v.nonfinite = !same;
    v.err = same ? 0 : std::numeric_limits<double>::infinity();
    return v;
  }
  if (gate.has_close()) {
    v.err = std::fabs(g - w);
    v.bound = gate.close().atol() + gate.close().rtol() * std::fabs(w);
    v.bad = v.err > v.bound;
    return v;
  }
  // bf16_ulps; an integer buffer is compared bit for bit.
  if (!is_bf16) {
    v.err = std::fabs(g - w);
    v.bad = g != w;
    return v;
  }
  const float want = RoundTo(v1::DTYPE_BF16, static_cast<float>(w));
  const double abs_err = std::fabs(g - want);
  v.err = std::abs(Bf16Ordinal(static_cast<float>(g)) - Bf16Ordinal(want));
  v.bound = gate.bf16_ulps().ulps();
  const double atol = gate.bf16_ulps().atol();
  v.bad = v.err > v.bound && !(atol > 0 && abs_err < atol);
  return v;
}

// Why `got` is not within `gate` of `want` on the computed elements.
std::optional<std::string> Compare(const v1::Buffer& buffer,
                                   const std::string& got,
                                   const std::string& want,
                                   const ComputedRows& computed,
                                   const v1::Tolerance& gate) {
  const v1::DType dtype = buffer.dtype();
  const uint64_t width = DTypeSize(dtype);
  if (got.size() != want.size()) {
    return absl::StrCat("wrote ", got.size(), " bytes, not ", want.size());
  }
  if (gate.has_bf16_ulps() && dtype != v1::DTYPE_BF16 &&
      (dtype == v1::DTYPE_F32 || dtype == v1::DTYPE_F16)) {
    return absl::StrCat("a bf16_ulps gate on a ", v1::DType_Name(dtype),
                        " buffer (ulps are defined for bf16 outputs)");
  }
  const bool is_bf16 = dtype == v1::DTYPE_BF16;
  const int64_t elements = computed.Elements();
  const uint64_t size = width == 0 ? 0 : want.size() / width;
  int64_t n = 0, bad = 0, nonfinite = 0, worst = -1;
  ElementVerdict worst_verdict;
  for (int64_t k = 0; k < elements; ++k) {
    const int64_t i = computed.ElementIndex(k);
    if (i < 0 || static_cast<uint64_t>(i) >= size) continue;
    ++n;
    const ElementVerdict v =
        CompareElement(gate, is_bf16, LoadElement(dtype, got.data(), i),
                       LoadElement(dtype, want.data(), i));
    if (!v.bad) continue;
    ++bad;
    nonfinite += v.nonfinite ? 1 : 0;
    if (worst < 0 ||
        v.err - v.bound > worst_verdict.err - worst_verdict.bound) {
      worst = i;
      worst_verdict = v;
    }
  }
  const auto allowed = static_cast<int64_t>(
      std::floor(gate.max_mismatch_frac() * static_cast<double>(n)));
  if (bad == 0 || (nonfinite == 0 && bad <= allowed)) return std::nullopt;
  std::string out =
      absl::StrCat(bad, " of ", n, " elements miss (", allowed, " allowed",
                   nonfinite > 0 ? ", a non-finite one among them" : "", "); ");
  absl::StrAppend(&out, absl::StrFormat("worst element %d off by %.6g", worst,
                                        worst_verdict.err));
  absl::StrAppend(&out, gate.has_bf16_ulps() && is_bf16 ? " ulps" : "",
                  absl::StrFormat(" > %.6g", worst_verdict.bound));
  return out;
}

// The names of a catalogue shape "[rows, tile_size]", outermost first.
std::vector<std::string> ShapeNames(absl::string_view shape) {
  shape = absl::StripPrefix(absl::StripSuffix(shape, "]"), "[");
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(shape, ',')) {
    out.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return out;
}

// The axis of `buffer` that param `param` of `op` sizes, else -1.
int BoundAxis(const v1::Operator& op, const v1::Buffer& buffer,
              const std::string& param) {
  const int rank = buffer.shape_size();
  if (const Family* family = FindFamily(op.class_name())) {
    for (const BufferSpec& spec : family->buffers) {
      if (spec.name != buffer.name()) continue;
      const std::vector<std::string> names = ShapeNames(spec.shape);
      for (size_t i = 0; i < names.size(); ++i) {
        // A leading axis may be left out (GEMV's A when num_matrices is 1):
        // the shapes align at their innermost axis.
        const int axis = rank - static_cast<int>(names.size() - i);
        if (names[i] == param && axis >= 0) return axis;
      }
      return -1;
    }
  }
  const std::optional<int64_t> length = IntParam(op, param);
  for (int a = 0; length.has_value() && a < rank; ++a) {
    if (static_cast<int64_t>(buffer.shape(a)) == *length) return a;
  }
  return -1;
}

}  // namespace

std::string RowsUnderBound(const v1::Operator& op, const v1::Buffer& buffer,
                           const std::string& bytes, const CallValues& values) {
  std::vector<uint64_t> shape(buffer.shape().begin(), buffer.shape().end());
  uint64_t total = DTypeSize(buffer.dtype());
  for (uint64_t e : shape) {
    if (e != 0 && total > UINT64_MAX / e) return bytes;
    total *= e;
  }
  if (total != bytes.size() || total == 0) return bytes;
  std::string data = bytes;
  for (const v1::CallValue& cv : op.values()) {
    auto it = values.find(cv.name());
    if (cv.bounds().empty() || it == values.end()) continue;
    const int axis = BoundAxis(op, buffer, cv.bounds());
    if (axis < 0) continue;
    const uint64_t extent = shape[axis];
    const uint64_t used = static_cast<uint64_t>(
        std::clamp<int64_t>(it->second, 0, static_cast<int64_t>(extent)));
    uint64_t outer = 1, inner = DTypeSize(buffer.dtype());
    for (int a = 0; a < axis; ++a) outer *= shape[a];
    for (size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
    std::string kept;
    kept.reserve(outer * used * inner);
    for (uint64_t o = 0; o < outer; ++o) {
      kept.append(data, o * extent * inner, used * inner);
    }
    data = std::move(kept);
    shape[axis] = used;
  }
  return data;
}

std::string OutputDigest(const v1::Operator& op,
                         const std::map<std::string, std::string>& written,
                         const CallValues& values) {
  // Most calls bound nothing: their buffers are hashed as drained, not
  // copied first.
  const bool bounded = std::any_of(
      op.values().begin(), op.values().end(), [&](const v1::CallValue& cv) {
        return !cv.bounds().empty() && values.count(cv.name());
      });
  Sha256 hash;
  for (const v1::Buffer& buffer : op.buffers()) {
    auto it = written.find(buffer.name());
    if (it == written.end()) continue;
    if (bounded) {
      hash.Update(RowsUnderBound(op, buffer, it->second, values));
    } else {
      hash.Update(it->second);
    }
  }
  return hash.HexDigest();
}

std::optional<std::string> Judge(
    const v1::Operator& default_op, const v1::Operator& op,
    const SharedInputs& inputs,
    const std::map<std::string, std::string>& written, const CallValues& values,
    const ReferenceLookup& reference) {
  const std::pair<const char*, const v1::Operator*> gates[] = {
      {"the default's", &default_op}, {"its own", &op}};
  for (const auto& [which, owner] : gates) {
    if (auto why = NoGate(*owner, which)) return why;
    if (!Comparable(owner->tolerance())) return std::string(kOnlyBitIdentical);
  }
  if (auto why = BoundShort(op, values)) return why;
  absl::StatusOr<Reference> computed;
  absl::StatusOr<const Reference*> want;
  if (reference) {
    want = reference(op, inputs, values);
  } else {
    computed = ReferenceOutputs(op, inputs, values);
    want = computed.ok() ? absl::StatusOr<const Reference*>(&*computed)
                         : computed.status();
  }
  if (!want.ok()) {
    return absl::StrCat(kOnlyBitIdentical, " (", want.status().message(), ")");
  }
  for (const auto& [which, owner] : gates) {
    for (const v1::Buffer& buffer : op.buffers()) {
      auto expected = (*want)->outputs.find(buffer.name());
      if (expected == (*want)->outputs.end()) continue;  // not drained
      auto got = written.find(buffer.name());
      std::optional<std::string> why;
      if (got == written.end()) {
        why = "no output written";
      } else {
        why = Compare(buffer, got->second, expected->second,
                      (*want)->computed.at(buffer.name()), owner->tolerance());
      }
      if (why.has_value()) {
        return absl::StrCat(buffer.name(), " under ", which, " gate: ", *why);
      }
    }
  }
  return std::nullopt;
}

JudgeFn BitIdenticalJudge() {
  return [](const v1::Operator&, const v1::Operator&, const SharedInputs&,
            const std::map<std::string, std::string>&, const CallValues&,
            const ReferenceLookup&) -> std::optional<std::string> {
    return std::string(kOnlyBitIdentical);
  };
}

ReferenceMemo::ReferenceMemo(ReferenceFn compute)
    : compute_(compute ? std::move(compute) : ReferenceFn(ReferenceOutputs)) {}

absl::StatusOr<const Reference*> ReferenceMemo::Get(
    const std::string& inputs_id, const v1::Operator& op,
    const SharedInputs& inputs, const CallValues& values) {
  v1::Operator design = DesignOf(op);
  design.clear_tunables();
  const std::string bytes = DeterministicBytes(design);
  std::string key =
      absl::StrCat(inputs_id.size(), ":", inputs_id, bytes.size(), ":", bytes);
  for (const auto& [name, value] : values) {
    absl::StrAppend(&key, name.size(), ":", name, "=", value, ";");
  }
  auto it = kept_.find(key);
  if (it == kept_.end()) {
    it = kept_.emplace(std::move(key), compute_(op, inputs, values)).first;
  }
  if (!it->second.ok()) return it->second.status();
  return &*it->second;
}

}  // namespace irontune

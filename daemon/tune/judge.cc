#include "daemon/tune/judge.h"

#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/op_access.h"
#include "common/recording.h"
#include "daemon/ops/numeric.h"
#include "daemon/ops/reference.h"

namespace irontune {
namespace {

bool Comparable(const v1::Tolerance& t) {
  return t.gate_case() == v1::Tolerance::kClose;
}

// A per-call value gives an extent fewer rows than its param holds.
bool BoundShort(const v1::Operator& op, const CallValues& values) {
  for (const v1::CallValue& cv : op.values()) {
    if (cv.bounds().empty()) continue;
    const std::optional<int64_t> length = IntParam(op, cv.bounds());
    auto it = values.find(cv.name());
    if (length.has_value() && it != values.end() && it->second < *length) {
      return true;
    }
  }
  return false;
}

// Why `got` is not within `gate` of `want` on the computed elements.
std::optional<std::string> Compare(const v1::Buffer& buffer,
                                   const std::string& got,
                                   const std::string& want,
                                   const ComputedRows& computed,
                                   const v1::Tolerance::Close& gate) {
  const v1::DType dtype = buffer.dtype();
  const uint64_t width = DTypeSize(dtype);
  if (got.size() != want.size()) {
    return absl::StrCat("wrote ", got.size(), " bytes, not ", want.size());
  }
  const int64_t elements = computed.Elements();
  const uint64_t size = width == 0 ? 0 : want.size() / width;
  double worst_excess = 0;
  int64_t worst = -1;
  double worst_err = 0, worst_bound = 0;
  for (int64_t k = 0; k < elements; ++k) {
    const int64_t i = computed.ElementIndex(k);
    if (i < 0 || static_cast<uint64_t>(i) >= size) continue;
    const double g = LoadElement(dtype, got.data(), i);
    const double w = LoadElement(dtype, want.data(), i);
    const double bound = gate.atol() + gate.rtol() * std::fabs(w);
    double err;
    if (std::isnan(g) || std::isnan(w)) {
      if (std::isnan(g) && std::isnan(w)) continue;
      err = std::numeric_limits<double>::infinity();
    } else if (g == w) {
      continue;  // also equal infinities
    } else {
      err = std::fabs(g - w);
    }
    if (err <= bound) continue;
    const double excess = err - bound;
    if (worst < 0 || excess > worst_excess) {
      worst_excess = excess;
      worst = i;
      worst_err = err;
      worst_bound = bound;
    }
  }
  if (worst < 0) return std::nullopt;
  return absl::StrFormat("worst element %d off by %.6g > %.6g", worst,
                         worst_err, worst_bound);
}

}  // namespace

std::optional<std::string> Judge(
    const v1::Operator& default_op, const v1::Operator& op,
    const std::map<std::string, std::string>& inputs,
    const std::map<std::string, std::string>& written,
    const CallValues& values) {
  const std::pair<const char*, const v1::Tolerance*> gates[] = {
      {"the default's", &default_op.tolerance()}, {"its own", &op.tolerance()}};
  for (const auto& [which, gate] : gates) {
    if (!Comparable(*gate)) return std::string(kOnlyBitIdentical);
  }
  if (BoundShort(op, values)) {
    return absl::StrCat(kOnlyBitIdentical, " under a bound");
  }
  absl::StatusOr<Reference> want = ReferenceOutputs(op, inputs, values);
  if (!want.ok()) {
    return absl::StrCat(kOnlyBitIdentical, " (", want.status().message(), ")");
  }
  for (const auto& [which, gate] : gates) {
    for (const v1::Buffer& buffer : op.buffers()) {
      auto expected = want->outputs.find(buffer.name());
      if (expected == want->outputs.end()) continue;  // not drained
      auto got = written.find(buffer.name());
      std::optional<std::string> why;
      if (got == written.end()) {
        why = "no output written";
      } else {
        why = Compare(buffer, got->second, expected->second,
                      want->computed.at(buffer.name()), gate->close());
      }
      if (why.has_value()) {
        return absl::StrCat(buffer.name(), " under ", which, " gate: ", *why);
      }
    }
  }
  return std::nullopt;
}

JudgeFn BitIdenticalJudge() {
  return [](const v1::Operator&, const v1::Operator&,
            const std::map<std::string, std::string>&,
            const std::map<std::string, std::string>&,
            const CallValues&) -> std::optional<std::string> {
    return std::string(kOnlyBitIdentical);
  };
}

}  // namespace irontune

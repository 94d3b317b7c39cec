// The catalogue's entries, by group (families_table*.cc); common/families.h
// is the interface. Internal to common/.
//
// Thread-safe (pure functions returning fresh values).
#ifndef IRONTUNE_COMMON_FAMILIES_TABLE_H_
#define IRONTUNE_COMMON_FAMILIES_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/families.h"
#include "common/value.h"

namespace irontune::catalogue {

// An entry's opening: its class and what it computes, in one line.
inline Family Entry(std::string class_name, std::string summary) {
  Family f;
  f.class_name = std::move(class_name);
  f.summary = std::move(summary);
  return f;
}

// IRON's accuracy gate of an entry: as text (Family::tolerance) and as
// irontune's gate (Family::gate).
struct Gate {
  std::string text;
  v1::Tolerance tolerance;
};

// An entry's closing: `f` with its gate, its build constraints as text
// (Family::refusals) and the IRON file it is read from (Family::source) at
// `commit` ("" where the index named none).
Family Finish(Family f, Gate gate, std::string refusals, std::string source,
              std::string_view commit = kIronBaseCommit);

// The entries' makers: a param (dim) with no default, or with one; a param
// whose default IRON derives, described by `note`; a tunable with no
// default, or an int one; the gates.
inline Dim P(std::string name) { return Dim{std::move(name), v1::Value(), ""}; }
inline Dim P(std::string name, v1::Value v) {
  return Dim{std::move(name), std::move(v), ""};
}
inline Dim Pf(std::string name, std::string note) {
  return Dim{std::move(name), v1::Value(), std::move(note)};
}
inline TunableSpec T(std::string name, std::string note = "") {
  return TunableSpec{std::move(name), v1::Value(), std::move(note), {}};
}
inline TunableSpec T(std::string name, int64_t v, std::string note = "") {
  return TunableSpec{std::move(name), IntValue(v), std::move(note), {}};
}
// `t` with its domain rule.
inline TunableSpec R(TunableSpec t, DomainRule rule) {
  t.domain = std::move(rule);
  return t;
}
// A rule IRON's class does not declare at the commit followed (it declares
// no domains there): irontune's own, with DomainRule::origin saying so.
DomainRule OwnRule(DomainRule rule);
// OwnRule(Choices of `values`).
DomainRule OwnList(std::vector<int64_t> values);
// A count of columns, channels or cores named by a stream's per= with no
// domain of its own: IRON takes it as a Width (domain.py).
inline DomainRule PerWidth() { return WidthRule(); }
inline v1::Tolerance Close(double atol, double rtol) {
  v1::Tolerance t;
  t.mutable_close()->set_atol(atol);
  t.mutable_close()->set_rtol(rtol);
  return t;
}
// IRON's Tolerance.bf16_ulps(n, atol=...): within n bf16 ulps of the
// reference, or off by less than atol when atol > 0.
inline v1::Tolerance Bf16Ulps(int ulps, double atol = 0) {
  v1::Tolerance t;
  t.mutable_bf16_ulps()->set_ulps(ulps);
  t.mutable_bf16_ulps()->set_atol(atol);
  return t;
}
inline v1::Tolerance Exact() {
  v1::Tolerance t;
  t.mutable_exact();
  return t;
}

// Rowwise's tunables (iron/common/elementwise.py): one column unless
// given, one channel, both widths of the streams' per=.
std::vector<TunableSpec> RowTunables();
// Rowwise's per-call value: the rows each core processes, bounding rows.
inline ValueSpec RowCount() {
  return {"count", "rows each core processes; derived from the bound", "rows"};
}

// The elementwise template's tunables (iron/common/elementwise.py), its
// line's tile_size a Divisors of the output's elements up to 4096, and
// its refusals as text.
std::vector<TunableSpec> LineTunables();
extern const char kLineRefusal[];
// The elementwise template's per-call value: the lines each core
// processes, bounding size.
inline ValueSpec LineCount() {
  return {"count", "lines each core processes; derived from the bound", "size"};
}

// Elementwise, row-wise and softmax classes.
std::vector<Family> ElementwiseFamilies();
// GEMM, GEMV, MHA, GQAContext, RoPE, DepthwiseConv1d.
std::vector<Family> LinearFamilies();
// Copy, Dequant, Emit, Repeat, Sample, Transpose.
std::vector<Family> MovementFamilies();
// Limbs, Log, Magnitude, Resample, ResampleTaps.
std::vector<Family> SignalFamilies();

}  // namespace irontune::catalogue

#endif  // IRONTUNE_COMMON_FAMILIES_TABLE_H_

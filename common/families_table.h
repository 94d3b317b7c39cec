// The catalogue's entries, by group (families_table*.cc); common/families.h
// is the interface. Internal to common/.
//
// Thread-safe (pure functions returning fresh values).
#ifndef IRONTUNE_COMMON_FAMILIES_TABLE_H_
#define IRONTUNE_COMMON_FAMILIES_TABLE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/families.h"
#include "common/value.h"

namespace irontune::catalogue {

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
  return TunableSpec{std::move(name), v1::Value(), std::move(note)};
}
inline TunableSpec T(std::string name, int64_t v, std::string note = "") {
  return TunableSpec{std::move(name), IntValue(v), std::move(note)};
}
inline v1::Tolerance Close(double atol, double rtol) {
  v1::Tolerance t;
  t.mutable_close()->set_atol(atol);
  t.mutable_close()->set_rtol(rtol);
  return t;
}
inline v1::Tolerance Exact() {
  v1::Tolerance t;
  t.mutable_exact();
  return t;
}

// Elementwise, row-wise and softmax classes.
std::vector<Family> ElementwiseFamilies();
// GEMM, GEMV, MHA, GQAContext, RoPE, DepthwiseConv1d.
std::vector<Family> LinearFamilies();
// Copy, Dequant, Emit, Repeat, Sample, Transpose.
std::vector<Family> MovementFamilies();

}  // namespace irontune::catalogue

#endif  // IRONTUNE_COMMON_FAMILIES_TABLE_H_

// The catalogue's entries, by group (families_table*.cc); common/families.h
// is the interface. Internal to common/.
//
// Thread-safe (pure functions returning fresh values).
#ifndef IRONTUNE_COMMON_FAMILIES_TABLE_H_
#define IRONTUNE_COMMON_FAMILIES_TABLE_H_

#include <vector>

#include "common/families.h"

namespace irontune::catalogue {

// Elementwise, row-wise and softmax classes.
std::vector<Family> ElementwiseFamilies();
// GEMM, GEMV, MHA, GQAContext, RoPE, DepthwiseConv1d.
std::vector<Family> LinearFamilies();
// Copy, Dequant, Emit, Repeat, Sample, Transpose.
std::vector<Family> MovementFamilies();

}  // namespace irontune::catalogue

#endif  // IRONTUNE_COMMON_FAMILIES_TABLE_H_

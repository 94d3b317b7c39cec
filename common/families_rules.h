// The catalogue's build constraints, per class (families_rules*.cc);
// common/families.h ConstraintViolation is the interface. Internal to
// common/.
//
// Each returns the first violation as a sentence, or "". A tunable the
// operator lacks takes IRON's resolved default.
//
// Thread-safe (pure functions).
#ifndef IRONTUNE_COMMON_FAMILIES_RULES_H_
#define IRONTUNE_COMMON_FAMILIES_RULES_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"
#include "irontune/v1/recording.pb.h"

namespace irontune::rules {

// Abseil 20220623 on Debian 12 has its own string_view (not std::).
inline absl::string_view Sv(std::string_view s) { return {s.data(), s.size()}; }

std::string KiB(int64_t bytes);
// "" when `need` bytes fit a core's L1; else what `what` needs.
std::string L1(int64_t need, std::string_view what);
int64_t Param(const v1::Operator& op, std::string_view name, int64_t fallback);
int64_t Tunable(const v1::Operator& op, std::string_view name,
                int64_t fallback);
// Tunable `name` (when present) within [1, columns].
std::string Columns(const v1::Operator& op, std::string_view generation,
                    int columns, std::string_view name = "num_aie_columns");
std::string Positive(const v1::Operator& op,
                     std::initializer_list<std::string_view> names,
                     int64_t fallback);
// `rows` a multiple of num_aie_columns (default `default_columns`) x
// num_channels (default 1).
std::string RowsOverCores(const v1::Operator& op, int64_t rows,
                          int64_t default_columns);

// The elementwise template's shared checks: columns, num_channels, a
// tile_size within one core's line, and `size` whole lines of tile_size
// over the columns and channels. "" when they hold.
std::string WholeLines(const v1::Operator& op, std::string_view generation,
                       int columns);

// The existing groups (families_rules.cc).
std::string Gemm(const v1::Operator& op, std::string_view generation,
                 int columns);
std::string Gemv(const v1::Operator& op, std::string_view generation,
                 int columns);
std::string Line(const v1::Operator& op, std::string_view generation,
                 int columns, int buffers);
std::string Rows(const v1::Operator& op, std::string_view generation,
                 int columns, int64_t default_columns);
std::string Rope(const v1::Operator& op, std::string_view generation,
                 int columns);
std::string Mha(const v1::Operator& op, std::string_view generation,
                int columns);
std::string Tiled(const v1::Operator& op, std::string_view generation,
                  int columns);
std::string Movement(const v1::Operator& op, int columns);

// GQAScores, GQAContext, Limbs, Log, Magnitude, RowwiseMul, Resample,
// ResampleTaps (families_rules_groups.cc); nullopt for another class.
std::optional<std::string> Grouped(const v1::Operator& op,
                                   std::string_view generation, int columns);

// Softmax's resolved block (softmax.py resolve): the row where it is at
// most 4096, else the longest multiple of 32 up to 1024 dividing it (else
// min(cols, 1024)).
int64_t SoftmaxDefaultBlock(int64_t cols);

// ResampleTaps' filter window for `in` samples to `out` (resample
// reference.window): 2 * ceil(support) + 1, support 2 * in / out when
// downsampling, else 2.
int64_t ResampleWindow(int64_t in, int64_t out);

}  // namespace irontune::rules

#endif  // IRONTUNE_COMMON_FAMILIES_RULES_H_

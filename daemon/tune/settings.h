// The settings of an operator the tuner may try (IRON's autotune `settings`),
// and the seam through which it learns the domains and constraints of an
// operator's tunables (SearchSpace).
//
// Pure functions of their arguments; thread-safe as long as the SearchSpace's
// functions are. Arguments are borrowed for the duration of the call only.
#ifndef IRONTUNE_DAEMON_TUNE_SETTINGS_H_
#define IRONTUNE_DAEMON_TUNE_SETTINGS_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/npu/device.h"
#include "daemon/tune/search.h"
#include "irontune/v1/recording.pb.h"
#include "irontune/v1/value.pb.h"

namespace irontune {

// Where the tuner learns what it may try. Every member has a working default
// (DefaultSearchSpace()); a null member takes the default's behaviour.
//
// DefaultSearchSpace() asks the recording first and the families registry
// after: the recording's own domain where it has one, else a known class's
// rule evaluated for the operator's shape on the generation
// (OperatorDomain: IRON's Width, Divisors, Choices, Placement, Pinned,
// `when`), and ConstraintViolation for whether a setting resolves.
struct SearchSpace {
  // The values tunable `tunable` of `op` may take on `generation`. An
  // empty result means only the recorded value.
  std::function<std::vector<v1::Value>(const v1::Operator& op,
                                       const std::string& tunable,
                                       const std::string& generation)>
      domain;
  // Why `op` (at the setting its tunables' values hold) does not resolve on
  // `platform`; empty where it does.
  std::function<std::string(const v1::Operator& op, const Platform& platform)>
      violation;
  // The design a setting of `op` resolves to: two settings of one identity
  // are one design and timed once. The default: the resolved design's
  // bytes (ResolvedDesignBytes, common/design.h) of `op` at `setting`.
  // Settings passes the operator already resolved on its platform and
  // that operator's own setting.
  std::function<std::string(const v1::Operator& op,
                            const TunableValues& setting)>
      identity;
};

// The recording's own domain where it has one, else a known class's rule
// evaluated for the operator (OperatorDomain), its violations from
// ConstraintViolation, and a design's identity from the resolved design
// (IRON's design_key after resolve).
SearchSpace DefaultSearchSpace();

// Whether `space` is DefaultSearchSpace()'s, member by member (each one the
// default's own function, not an equal one).
bool IsDefaultSpace(const SearchSpace& space);

// `space` with each member it leaves unset taken from DefaultSearchSpace().
SearchSpace CompleteSearchSpace(const SearchSpace& space);

// The recording's own domains (Tunable.domain), no constraint: the space of
// a class the registry does not know, and of hand-made test recordings.
SearchSpace RecordingSearchSpace();

// Above this many combinations of an operator's domains Settings refuses
// (InvalidArgument) rather than enumerate them: a recording may declare
// domains whose product no tuner could time.
inline constexpr int64_t kMaxCombinations = int64_t{1} << 20;

// The setting `op` was recorded at: each tunable's name and value, in the
// operator's order.
TunableValues RecordedSetting(const v1::Operator& op);

// `op` with each tunable named in `setting` set to its value there; tunables
// the setting lacks keep their value, names the operator lacks are ignored.
v1::Operator WithSetting(const v1::Operator& op, const TunableValues& setting);

// The same names with ValuesEqual values, in any order.
bool SettingsEqual(const TunableValues& a, const TunableValues& b);

// "tile_m=64 tile_k=128", in the setting's order (for logs).
std::string SettingText(const TunableValues& setting);

// A canonical text of the setting: sorted by name, values typed
// ("i:64", "b:1", "s:bf16", "d:<hex bits>").
std::string SettingIdentity(const TunableValues& setting);

// The settings of `op` to time on `platform`, IRON's `settings`: the
// recorded one first, then every other combination of its tunables' domains
// (space.domain, each tunable's recorded value counting as in its domain),
// in odometer order with the last tunable varying fastest, each kept where
// it resolves (space.violation empty) and its design (space.identity of
// the setting resolved on `platform`, common/design.h ResolvedDesign) is
// not already kept. Tunables in `pinned` or in op.pinned() are held at
// their recorded value. Dropped combinations are counted and, where any,
// one line is logged through `log` (may be null): "<class>: D of N settings
// dropped (first: <reason>)".
// Fails with InvalidArgument when the domains' product exceeds
// kMaxCombinations. In the default space (each member DefaultSearchSpace()'s
// own) the answer is a function of `op`, the platform's generation and
// columns and the pins alone: it is kept (process-wide, bounded,
// thread-safe) and a later call with the same ones returns it without
// enumerating, logging the same line. Other spaces are enumerated on
// every call.
absl::StatusOr<std::vector<TunableValues>> Settings(
    const v1::Operator& op, const Platform& platform,
    const std::set<std::string>& pinned, const SearchSpace& space,
    const std::function<void(const std::string&)>& log = nullptr);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_SETTINGS_H_

// The pieces of the search over an operator shape's tunables, as IRON's
// autotune module defines them: where each operator of a call is timed
// (OpValues, OpPoints), what its inputs hold (OpInputs), when a timed
// setting may replace the recorded one (Comparison::Gains), the settings a
// coordinate descent tries for one tunable (Line), and which dims a profile
// entry for a shape names (NamedDims). docs/search.md says why.
//
// Pure functions of their arguments; thread-safe. Arguments are borrowed for
// the duration of the call only; results own their data.
#ifndef IRONTUNE_DAEMON_TUNE_SEARCH_H_
#define IRONTUNE_DAEMON_TUNE_SEARCH_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/expression.h"
#include "irontune/v1/measurement.pb.h"
#include "irontune/v1/recording.pb.h"
#include "irontune/v1/value.pb.h"

namespace irontune {

// The per-call values operator `op` (an index into Calls.operators) is
// written in `call`, by CallValue (member) name: every binding of
// call.recording() whose op is `op`, evaluated at `*at`, or at call.values()
// when `at` is null. A member no binding sets is absent.
// Fails with InvalidArgument naming the binding
// (`recording.bindings[2].expression: ...`) when an expression does not
// evaluate, e.g. it names a value `at` lacks.
absl::StatusOr<CallValues> OpValues(const v1::Timed& call, uint32_t op,
                                    const CallValues* at = nullptr);

// A share of a call's runs and the operator's per-call values there.
struct WeightedValues {
  double weight = 0;
  CallValues values;
};

// Where operator `op` (whose definition is `design`, i.e.
// calls.operators(op)) is timed in `call`. Each of call.points() gives the
// operator's values (OpValues at the point's values) and a label: the values
// of its bound members (design.values() with a non-empty `bounds`), in
// member-name order; a bound member no binding sets labels as absent.
// Points with equal labels merge: weights summed, the first point's values
// kept. Where more than one group results they are returned in first-seen
// order; otherwise (no points, every point alike, or no bound member) the
// single {1.0, OpValues(call, op)}.
// Fails as OpValues does, at the first point that fails.
absl::StatusOr<std::vector<WeightedValues>> OpPoints(
    const v1::Timed& call, uint32_t op, const v1::Operator& design);

// What operator `op`'s buffers hold in `call`, by the operator's buffer
// name (design.buffers(i).name()), for every step running `op`. A buffer
// counts only where its ref covers the whole graph buffer: offset 0, and
// the operator buffer's bytes (product(shape) * DTypeSize(dtype)) equal to
// the graph buffer's nbytes, with ref.length 0 or that same size; a view
// into part of a graph buffer is not the whole content and is left out.
// The graph buffer must have a Content (the first of that name is used).
// Where several steps give one operator buffer, the last step's wins.
// Refs to graph buffers the recording lacks, or beyond design.buffers(),
// are skipped. Never fails.
std::map<std::string, std::string> OpInputs(const v1::Timed& call, uint32_t op,
                                            const v1::Operator& design);

// A call's graph buffers (sizes and contents by name) and its steps by
// operator, read once for OpInputs over many operators of the call. Holds
// views into the call, which must outlive it. Thread-compatible.
class CallBuffers {
 public:
  explicit CallBuffers(const v1::Timed& call);
  // OpInputs(call, op, design), without reading the whole call again.
  std::map<std::string, std::string> OpInputs(uint32_t op,
                                              const v1::Operator& design) const;

 private:
  std::map<std::string_view, uint64_t> nbytes_;
  std::map<std::string_view, const std::string*> contents_;
  std::map<uint32_t, std::vector<const v1::Step*>> steps_;
};

// How many standard errors faster than the recorded setting a setting must
// be to be taken. One-sided, z = 2.0 leaves about a 2.3% chance (normal
// errors) that a setting no faster than the recorded one is taken on one
// trial; docs/search.md ("When a setting gains") says why this value.
inline constexpr double kGainZ = 2.0;

// One setting of a shape, timed against the setting it was recorded at: the
// method's working value, with the rules of gaining; it leaves as a
// v1::Trial only at the wire boundary (scheduler/replies.h TrialOf).
struct Comparison {
  std::vector<v1::Field> tunables;
  // How much longer its steps take than the recorded setting's; negative is
  // faster.
  double delta_us = 0;
  // The standard error of delta_us; nullopt from one round.
  std::optional<double> noise_us;
  // Why it may not replace the recorded setting; empty where it may.
  std::string refused;

  // Whether it may be taken: admitted (refused empty), faster (delta_us <
  // 0), its noise known, and faster beyond `z` times that noise
  // (-delta_us > z * noise_us, strictly).
  bool Gains(double z = kGainZ) const;
};

// One setting of an operator's tunables: name -> value, in the operator's
// tunable order.
using TunableValues = std::vector<v1::Field>;

// How many tunables of `a` differ from `b`'s (by name, ValuesEqual; a name
// `b` lacks counts as differing).
int ChangedTunables(const TunableValues& a, const TunableValues& b);

// Whether `challenger` may replace `incumbent`, both timed against the same
// recorded setting: it is admitted, both noises are known (an incumbent
// that is the recorded setting, `incumbent_recorded`, has noise 0), and it
// is faster by more than both margins: the statistical one, z times the
// two noises in quadrature, and the practical one, `practical_us`
// (strictly).
bool Beats(const Comparison& challenger, const Comparison& incumbent,
           bool incumbent_recorded, double z, double practical_us);

// Which of `trials` (in the catalogue's order, the recorded setting first)
// to take when `trials[incumbent]` runs today: the incumbent unless some
// trial Beats it. Among those that do, the ones no slower than the fastest
// of them by more than the margins (z times their noises in quadrature,
// or practical_us, whichever is larger) are equals, and of the equals the
// one with the fewest ChangedTunables from the incumbent is taken, then the
// first. Deterministic: noise decides only which trials beat the incumbent
// and which are equal, never the order among equals.
// REQUIRES: 0 <= incumbent < trials.size().
int Pick(const std::vector<Comparison>& trials, int incumbent, double z,
         double practical_us);

// Whether `challenger` is worth confirming against `incumbent` (as Beats
// takes them): admitted, both noises known, faster by its point estimate,
// and its interval reaching past the practical margin (gain + z noises >
// practical_us). Looser than Beats on purpose: a challenger whose true gain
// is close to a margin passes Beats on some seeds and not others, so the
// decision is left to the confirmation, which measures it until it is
// clear (docs/statistics.md, "Close calls").
bool Contends(const Comparison& challenger, const Comparison& incumbent,
              bool incumbent_recorded, double z, double practical_us);

// The indices of the trials that Contend against `trials[incumbent]`: at
// most `most` of them, the fastest by delta_us, returned in trials' order.
// REQUIRES: 0 <= incumbent < trials.size().
std::vector<int> Contenders(const std::vector<Comparison>& trials,
                            int incumbent, double z, double practical_us,
                            int most);

// Whether a screening figure `screened` (against the recorded setting)
// may still come within `practical_us` of the best so far, `best` (on the
// same footing; the recorded setting itself is 0 +- 0): it is admitted,
// and either a noise is unknown or its delta less z times the two noises
// in quadrature is no more than best's delta plus practical_us. A setting
// that does not reach is out of the race (docs/search.md, "Racing").
bool Reaches(const Comparison& screened, const Comparison& best, double z,
             double practical_us);

// Independent figures of one comparison (e.g. one per confirmation batch)
// as one. From kSpreadBatches figures on: the median delta, with noise
// the larger of the Maritz-Jarrett standard error of that median (the
// spread seen between the figures) and the figures' median noise over the
// square root of their count; so a figure whose own noise is far off (an
// outlier round in a batch of three) moves neither. Fewer: the mean
// delta, with noise the square root of the sum of the squared noises over
// their count. Refused (the first reason) where any was, noise unknown
// where any was. Tunables are the first's. docs/statistics.md ("Close
// calls") says why. REQUIRES: !figures.empty().
inline constexpr int kSpreadBatches = 4;
Comparison Pooled(const std::vector<Comparison>& figures);

// Where a challenger's figure against the incumbent (delta_us its time
// minus the incumbent's) leaves the decision, for sequential testing:
// the gain's interval, gain +- z noises, lies wholly above the practical
// margin (kClears), reaches no higher than it or the figure is refused or
// noiseless (kFallsShort), or holds it (kOpen: measure again).
enum class Evidence { kClears, kFallsShort, kOpen };
Evidence Weigh(const Comparison& against_incumbent, double z,
               double practical_us);

// What the confirmation batches gave for a shape's challengers: each one
// against the incumbent, and each against each other, paired round by round
// in the batches both were timed in (versus[i][j]: i's time minus j's,
// pooled; versus[i][i] is unused). Every challenger is in the first batch,
// so every pair has a figure.
struct Confirmation {
  std::vector<Comparison> against_incumbent;
  std::vector<std::vector<Comparison>> versus;
};

// The practical margin when `held` (a challenger, by index) would be the
// incumbent: min_gain of its step, the incumbent's step plus its delta.
double PracticalFor(const Confirmation& c, int held, double incumbent_us,
                    double min_gain);

// How far another winner might be faster than `held`: the largest, over
// the other `winners`, of versus[q][held]'s gain plus z noises (infinite
// where a noise is unknown or the figure refused; -infinity with no other).
double MostAnotherGains(const Confirmation& c, const std::vector<int>& winners,
                        int held, double z);

// Which challenger of `c` to take, -1 for the incumbent (`incumbent`, the
// setting it runs, whose step takes `incumbent_us`). The incumbent stays
// unless some challenger's confirmed gain clears both margins: its figure
// against the incumbent (already paired with it) is Weigh's kClears, the
// gain less z noises above min_gain of incumbent_us. Stricter than Beats
// on purpose: a gain that only just passes a margin on its point estimate
// is not confirmed, and a re-tune would take it under some seeds and not
// others. Among those that clear (the winners), a winner is settled when
// no other winner might be faster than it by more than the practical margin
// it would hold as the incumbent (MostAnotherGains <= PracticalFor, that is
// Weigh's kFallsShort): a re-tune from it would then keep it. Of the
// settled winners, the fewest ChangedTunables from `incumbent`, then the
// first; where none is settled, the one another might beat by least, then
// the first. Deterministic where the figures are clear: noise decides which
// winners are settled, never the order among them.
int PickConfirmed(const Confirmation& c, const TunableValues& incumbent,
                  double incumbent_us, double min_gain, double z);

// Whether the confirmation of `c` is still open (measure again): some
// challenger's figure against the incumbent is Weigh's kOpen, or two
// challengers that may still be settled (neither kFallsShort against the
// incumbent, nor cleared against by another that may win: kClears of
// another's figure against it) have a figure against each other that is
// kOpen either way, each held to the margin it would hold as the
// incumbent; a pair is not open for the one whose being settled no longer
// matters, because PickConfirmed (with `incumbent`, the setting it runs)
// could not take it: a winner settled now has fewer ChangedTunables, or
// as many and comes first. With min_gain 0 a tie between two such
// challengers stays open: no figure falls short of a margin of 0. `still`
// gets the challengers that keep being timed: those in an open figure.
bool ConfirmationOpen(const Confirmation& c, const TunableValues& incumbent,
                      double incumbent_us, double min_gain, double z,
                      std::vector<int>& still);

// The settings of `found` a coordinate descent tries for tunable `name`
// from `through`: for each distinct value of `name` among `found`
// (ValuesEqual; in first-seen order), every setting with that value that
// differs from `through` in the fewest other tunables (compared by name with
// ValuesEqual; a tunable `through` lacks counts as differing), in `found`'s
// order. Where tunables are coupled, a value is reached by moving the
// others with it, each way the fewest moves allow (not the one the domain
// lists first, which would make the descent's path follow the domain's
// order). Settings without `name` are ignored.
std::vector<TunableValues> Line(const std::vector<TunableValues>& found,
                                const TunableValues& through,
                                const std::string& name);

// The dims a profile entry for `op`'s shape names: those of ShapeDims(op),
// in that order, that some entry of `covering` names (so the new entry is
// at least as specific and outranks it), that have no family default, or
// whose value is off the family default (not ValuesEqual). For a class
// irontune does not know there are no defaults: every dim is named.
// `covering` holds the fields (dims, or dims and tunables) of the profile
// entries that match the shape.
std::vector<v1::Field> NamedDims(
    const v1::Operator& op,
    const std::vector<std::vector<v1::Field>>& covering);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_TUNE_SEARCH_H_

#include "daemon/scheduler/requests.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <string>
#include <type_traits>

#include "absl/strings/match.h"
#include "common/defaults.h"
#include "common/recording.h"
#include "common/shape.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

v1::Operator Add() {
  v1::Operator op;
  op.set_class_name("ElementwiseAdd");
  v1::Param* size = op.add_params();
  size->set_name("size");
  size->mutable_value()->set_int_value(1024);
  v1::Tunable* tile = op.add_tunables();
  tile->set_name("tile_size");
  tile->mutable_value()->set_int_value(256);
  for (const char* name : {"a", "b", "c"}) {
    v1::Buffer* b = op.add_buffers();
    b->set_name(name);
    const bool out = std::string(name) == "c";
    b->set_role(out ? v1::BUFFER_ROLE_OUT : v1::BUFFER_ROLE_IN);
    b->set_dtype(v1::DTYPE_BF16);
    b->add_shape(1024);
    b->set_fills(!out);
    b->set_drains(out);
  }
  return op;
}

TEST_CASE("requests: a Measure's zero fields take the defaults") {
  v1::MeasureRequest request;
  *request.mutable_operator_() = Add();
  v1::Setting* s = request.add_settings();
  v1::Field* f = s->add_tunables();
  f->set_name("tile_size");
  f->mutable_value()->set_int_value(512);
  REQUIRE(ValidateMeasureRequest(request).ok());

  Platform strix;
  strix.full_elf = true;
  Platform phoenix;
  const MeasurePlan plan = MeasurePlanOf(request, strix);
  CHECK(plan.repeats == kDefaultRepeats);
  CHECK(plan.packaging == v1::PACKAGING_FULL_ELF);
  CHECK(MeasurePlanOf(request, phoenix).packaging ==
        v1::PACKAGING_XCLBIN_CHAIN);
  REQUIRE(plan.settings.size() == 2);
  CHECK(plan.settings[1].tunables(0).value().int_value() == 512);

  request.set_repeats(4);
  request.set_packaging(v1::PACKAGING_XCLBIN_CHAIN);
  CHECK(MeasurePlanOf(request, strix).repeats == 4);
  CHECK(MeasurePlanOf(request, strix).packaging == v1::PACKAGING_XCLBIN_CHAIN);
}

TEST_CASE("requests: repeats must be 0 or from 2 to the limit, in both kinds") {
  v1::MeasureRequest measure;
  *measure.mutable_operator_() = Add();
  measure.set_repeats(1);
  CHECK(absl::StrContains(ValidateMeasureRequest(measure).message(),
                          "repeats: must be 0 (9) or at least 2"));
  measure.set_repeats(kMaxRepeats + 1);
  CHECK(absl::IsInvalidArgument(ValidateMeasureRequest(measure)));

  v1::AutotuneRequest tune;
  CHECK(ValidateAutotuneRequest(tune).message() == "calls: missing");
  tune.mutable_calls()->set_format_version(v1::FORMAT_VERSION_1);
  *tune.mutable_calls()->add_operators() = Add();
  CHECK(absl::StartsWith(ValidateAutotuneRequest(tune).message(),
                         "calls.calls: none"));
  *tune.mutable_calls() = testing::AddCalls();
  REQUIRE(ValidateAutotuneRequest(tune).ok());
  tune.set_repeats(kMaxRepeats + 1);
  CHECK(absl::StrContains(ValidateAutotuneRequest(tune).message(),
                          "repeats: at most 65536"));
}

TEST_CASE("requests: an Autotune takes the daemon's kernel cycles file") {
  v1::AutotuneRequest request;
  request.set_seed(7);
  Platform strix;
  strix.full_elf = true;
  const AutotuneOptions options =
      AutotuneOptionsOf(request, strix, "/x/cycles.json");
  CHECK(options.cycles_path == "/x/cycles.json");
  CHECK(options.repeats == kDefaultRepeats);
  CHECK(options.seed == 7);
}

TEST_CASE("requests: an Autotune's packaging is the platform's unless asked") {
  v1::AutotuneRequest request;
  Platform strix;
  strix.full_elf = true;
  const Platform phoenix;
  CHECK(AutotuneOptionsOf(request, strix, "").packaging ==
        v1::PACKAGING_FULL_ELF);
  CHECK(AutotuneOptionsOf(request, phoenix, "").packaging ==
        v1::PACKAGING_XCLBIN_CHAIN);
  request.set_packaging(v1::PACKAGING_XCLBIN_CHAIN);
  CHECK(AutotuneOptionsOf(request, strix, "").packaging ==
        v1::PACKAGING_XCLBIN_CHAIN);
}

// The plan and options leave the boundary resolved: a zero field carries
// the default's value, a given one its own, and what the method reads is
// a ResolvedTiming, which a raw Timing does not convert to.
static_assert(std::is_same_v<decltype(MeasurePlan::timing), ResolvedTiming>);
static_assert(
    std::is_same_v<decltype(AutotuneOptions::timing), ResolvedTiming>);
static_assert(!std::is_convertible_v<v1::Timing, ResolvedTiming>);

v1::Timing PartTiming() {
  v1::Timing t;
  t.set_calls(7);  // rounds, settle and cutoff 0: the defaults
  return t;
}

void CheckResolved(const ResolvedTiming& t) {
  CHECK(t.rounds() == kDefaultRounds);
  CHECK(t.calls() == 7);
  CHECK(t.settle() == kDefaultSettle);
  CHECK(t.cutoff() == kDefaultCutoff);
}

TEST_CASE("requests: a zero Timing field is resolved once, at the boundary") {
  v1::MeasureRequest measure;
  *measure.mutable_operator_() = Add();
  *measure.mutable_timing() = PartTiming();
  REQUIRE(ValidateMeasureRequest(measure).ok());
  CheckResolved(MeasurePlanOf(measure, Platform()).timing);

  v1::AutotuneRequest tune;
  *tune.mutable_calls() = testing::AddCalls();
  *tune.mutable_timing() = PartTiming();
  REQUIRE(ValidateAutotuneRequest(tune).ok());
  const AutotuneOptions options = AutotuneOptionsOf(tune, Platform(), "");
  CheckResolved(options.timing);
  // What the method is handed carries no zero meaning "the default": its
  // Timing as a proto has every field set, and resolving that again is
  // itself.
  const v1::Timing out = options.timing.proto();
  CHECK(out.rounds() == kDefaultRounds);
  CHECK(out.settle() == kDefaultSettle);
  CheckResolved(ResolvedTiming(out));
}

TEST_CASE("ResolvedTiming: a 0 taken in tune is 1, never the default") {
  const ResolvedTiming t = ResolvedTiming().WithRounds(0).WithCalls(0);
  CHECK(t.rounds() == 1);
  CHECK(t.calls() == 1);
  v1::Timing given;
  given.set_rounds(3);
  given.set_settle(1);
  given.set_cutoff(-2);  // not positive: the default
  const ResolvedTiming r(given);
  CHECK(r.rounds() == 3);
  CHECK(r.calls() == kDefaultCalls);
  CHECK(r.settle() == 1);
  CHECK(r.cutoff() == kDefaultCutoff);
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

TEST_CASE("requests: a Timing out of range is refused, naming the field") {
  v1::MeasureRequest request;
  *request.mutable_operator_() = Add();
  REQUIRE(ValidateMeasureRequest(request).ok());
  struct Case {
    uint32_t rounds, calls, settle;
    double cutoff;
    const char* field;
  };
  for (const Case& c :
       {Case{0, 4294967295u, 0, 0, "timing.calls"},
        Case{kMaxRounds + 1, 0, 0, 0, "timing.rounds"},
        Case{3, 0, 4, 0, "timing.settle"}, Case{0, 0, 9, 0, "timing.settle"},
        Case{0, 0, 0, -1, "timing.cutoff"}, Case{0, 0, 0, 0.5, "timing.cutoff"},
        Case{0, 0, 0, std::nan(""), "timing.cutoff"},
        Case{0, 0, 0, HUGE_VAL, "timing.cutoff"}}) {
    v1::Timing* t = request.mutable_timing();
    t->set_rounds(c.rounds);
    t->set_calls(c.calls);
    t->set_settle(c.settle);
    t->set_cutoff(c.cutoff);
    const absl::Status s = ValidateMeasureRequest(request);
    INFO(c.field << ": " << s.ToString());
    CHECK(absl::IsInvalidArgument(s));
    CHECK(absl::StartsWith(s.message(), c.field));
  }
  request.mutable_timing()->set_rounds(3);
  request.mutable_timing()->set_calls(5);
  request.mutable_timing()->set_settle(3);
  request.mutable_timing()->set_cutoff(1);
  CHECK(ValidateMeasureRequest(request).ok());
}

TEST_CASE("requests: an undefined priority is refused") {
  v1::AutotuneRequest request;
  *request.mutable_calls() = testing::AddCalls();
  REQUIRE(ValidateAutotuneRequest(request).ok());
  request.set_priority(static_cast<v1::Priority>(77));
  const absl::Status s = ValidateAutotuneRequest(request);
  CHECK(absl::IsInvalidArgument(s));
  CHECK(s.message() == "priority: 77 is not a Priority");
}

TEST_CASE("requests: shapes to tune must be shapes the calls run") {
  v1::AutotuneRequest request;
  *request.mutable_calls() = testing::AddSiluCalls();
  const std::string add = ShapeKey(request.calls().operators(0));
  request.add_shapes(add);
  REQUIRE(ValidateAutotuneRequest(request).ok());
  request.add_shapes("GEMM M=1 K=1 N=1\n");
  const absl::Status s = ValidateAutotuneRequest(request);
  CHECK(absl::IsInvalidArgument(s));
  CHECK(absl::StartsWith(s.message(), "shapes[1]: \"GEMM M=1 K=1 N=1\\n\""));
  const Platform platform;
  request.mutable_shapes()->RemoveLast();
  CHECK(AutotuneOptionsOf(request, platform, "").only_shapes ==
        std::set<std::string>{add});
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

TEST_CASE("requests: a setting's value must be of its tunable's kind") {
  v1::MeasureRequest request;
  *request.mutable_operator_() = Add();
  v1::Field* f = request.add_settings()->add_tunables();
  f->set_name("tile_size");
  f->mutable_value()->set_string_value("512");
  const absl::Status s = ValidateMeasureRequest(request);
  CHECK(absl::IsInvalidArgument(s));
  CHECK(s.message() ==
        "settings[0].tunables[0].value: \"512\" is not of the kind "
        "\"tile_size\" was recorded with");
  f->mutable_value()->set_int_value(512);
  CHECK(ValidateMeasureRequest(request).ok());
}

TEST_CASE("requests: a job id must be there and printable") {
  CHECK(ValidateJobId("j-0123456789abcdef").ok());
  CHECK(ValidateJobId("").message() ==
        "job_id: empty; give the id a job was given");
  CHECK(absl::IsInvalidArgument(ValidateJobId(std::string(65, 'a'))));
  CHECK(absl::IsInvalidArgument(ValidateJobId(std::string("j-\0x", 4))));
  CHECK(absl::IsInvalidArgument(ValidateJobId("j 1")));
}

}  // namespace
}  // namespace irontune

namespace irontune {
namespace {

v1::AutotuneRequest Tune(v1::Calls calls) {
  v1::AutotuneRequest request;
  *request.mutable_calls() = std::move(calls);
  return request;
}

TEST_CASE("requests: an Autotune refuses a negative dimension, as Measure") {
  v1::Calls calls = testing::AddCalls();
  calls.mutable_operators(0)->mutable_params(0)->mutable_value()->set_int_value(
      -2048);
  const absl::Status s = ValidateAutotuneRequest(Tune(calls));
  CHECK(absl::IsInvalidArgument(s));
  CHECK(s.message() ==
        "operators[0].params[0].value: -2048; ElementwiseAdd's size is a "
        "dimension, at least 1");
  v1::MeasureRequest measure;
  *measure.mutable_operator_() = calls.operators(0);
  CHECK(absl::IsInvalidArgument(ValidateMeasureRequest(measure)));
}

TEST_CASE("requests: a recorded value of the wrong kind for its class") {
  v1::Calls calls = testing::AddCalls();
  calls.mutable_operators(0)
      ->mutable_tunables(0)
      ->mutable_value()
      ->set_string_value("512");
  calls.mutable_operators(0)->mutable_tunables(0)->clear_domain();
  const absl::Status s = ValidateAutotuneRequest(Tune(calls));
  CHECK(absl::IsInvalidArgument(s));
  CHECK(s.message() ==
        "operators[0].tunables[0].value: \"512\" is not an int, as "
        "ElementwiseAdd's tile_size is");
}

TEST_CASE("requests: a profile entry without its class is refused") {
  v1::AutotuneRequest request = Tune(testing::AddCalls());
  v1::ProfileEntry* e = request.mutable_profile()->add_entries();
  e->set_operator_class("GEMM");
  REQUIRE(ValidateAutotuneRequest(request).ok());
  request.mutable_profile()->add_entries();
  CHECK(ValidateAutotuneRequest(request).message() ==
        "profile.entries[1].operator_class: empty");
}

// IRON raises when the model makes an operator under equally specific
// entries that disagree; a profile sent over the wire skips the JSON loader,
// so the request's validation applies the rule.
TEST_CASE("requests: a profile whose ties a recorded operator meets") {
  v1::AutotuneRequest request = Tune(testing::AddCalls());
  auto add_entry = [&](int64_t tile_size) {
    v1::ProfileEntry* e = request.mutable_profile()->add_entries();
    e->set_operator_class("ElementwiseAdd");
    v1::Field* dim = e->add_dims();
    dim->set_name("size");
    dim->mutable_value()->set_int_value(2048);
    v1::Field* t = e->add_tunables();
    t->set_name("tile_size");
    t->mutable_value()->set_int_value(tile_size);
  };
  add_entry(256);
  add_entry(256);  // the same twice: no disagreement
  REQUIRE(ValidateAutotuneRequest(request).ok());
  add_entry(512);
  const absl::Status s = ValidateAutotuneRequest(request);
  CHECK(absl::IsInvalidArgument(s));
  CHECK(absl::StartsWith(s.message(),
                         "profile: ElementwiseAdd: equally specific profile "
                         "entries disagree on tile_size: entries[0] "));
  CHECK(absl::StrContains(s.message(), " and entries[2] "));
  CHECK(absl::StrContains(s.message(), "operators[0]"));
}

TEST_CASE("requests: a recording with no operators and no calls is refused") {
  v1::Calls calls;
  calls.set_format_version(v1::FORMAT_VERSION_1);
  const absl::Status s = ValidateRecording(calls);
  CHECK(absl::IsInvalidArgument(s));
  CHECK(absl::StartsWith(s.message(), "operators: none, and no calls"));
}

// An expression `depth` levels deep (a leaf is 1).
v1::Expression Deep(int depth) {
  v1::Expression e = testing::Const(1);
  for (int i = 1; i < depth; ++i) {
    e = testing::Bin(v1::Expression::OP_ADD, e, testing::Const(1));
  }
  return e;
}

TEST_CASE("requests: expressions are taken to the one depth limit") {
  v1::Calls calls = testing::SmallCalls();
  v1::Binding* b =
      calls.mutable_calls(0)->mutable_recording()->mutable_bindings(0);
  *b->mutable_expression() = Deep(32);
  CHECK(ValidateAutotuneRequest(Tune(calls)).ok());
  // What gRPC's parser (100 levels) makes of the deepest request.
  v1::AutotuneRequest parsed;
  REQUIRE(parsed.ParseFromString(Tune(calls).SerializeAsString()));
  *b->mutable_expression() = Deep(33);
  const absl::Status s = ValidateAutotuneRequest(Tune(calls));
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("deeper than the limit of 32"));
}

TEST_CASE("requests: min_gain is a share of the step, at least 0 and below 1") {
  v1::AutotuneRequest request;
  *request.mutable_calls() = testing::AddSiluCalls();
  REQUIRE(ValidateAutotuneRequest(request).ok());
  CHECK(AutotuneOptionsOf(request, Platform(), "").min_gain == kMinGain);
  for (double bad : {-0.001, 1.0, 2.5, std::nan(""), HUGE_VAL}) {
    request.set_min_gain(bad);
    const absl::Status s = ValidateAutotuneRequest(request);
    INFO(bad << ": " << s.ToString());
    CHECK(absl::IsInvalidArgument(s));
    CHECK(absl::StartsWith(s.message(), "min_gain"));
  }
  for (double good : {0.0, 0.005, 0.2}) {
    request.set_min_gain(good);
    CHECK(ValidateAutotuneRequest(request).ok());
    CHECK(AutotuneOptionsOf(request, Platform(), "").min_gain == good);
  }
}

TEST_CASE("requests: budget_seconds is a finite device time, 0 for none") {
  v1::AutotuneRequest request;
  *request.mutable_calls() = testing::AddSiluCalls();
  REQUIRE(ValidateAutotuneRequest(request).ok());
  CHECK(AutotuneOptionsOf(request, Platform(), "").budget_seconds == 0);
  for (double bad : {-1.0, -1e-9, std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    request.set_budget_seconds(bad);
    const absl::Status s = ValidateAutotuneRequest(request);
    INFO(bad << ": " << s.ToString());
    CHECK(absl::IsInvalidArgument(s));
    CHECK(absl::StartsWith(s.message(), "budget_seconds"));
  }
  for (double good : {0.0, 0.25, 90.0, 86400.0}) {
    request.set_budget_seconds(good);
    CHECK(ValidateAutotuneRequest(request).ok());
    CHECK(AutotuneOptionsOf(request, Platform(), "").budget_seconds == good);
  }
}

}  // namespace
}  // namespace irontune

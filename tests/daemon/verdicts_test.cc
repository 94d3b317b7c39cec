#include "daemon/tune/verdicts.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "daemon/base/sha256.h"
#include "daemon/ops/numeric.h"
#include "daemon/store/cache.h"
#include "tests/testing/counting_fakes.h"
#include "tests/testing/sim_fixtures.h"

namespace irontune {
namespace {

using testing::Gemm;
using testing::RandomBf16;

// A GEMM setting at `tile_k` with a bf16-sized gate (judge_test.cc's).
v1::Operator GemmAt(int64_t tile_k) {
  v1::Operator op = Gemm(256, 256, 256, 64, tile_k, 64, 1);
  op.mutable_tolerance()->mutable_close()->set_atol(0.125);
  op.mutable_tolerance()->mutable_close()->set_rtol(1.0 / 64);
  return op;
}

std::map<std::string, std::string> Inputs() {
  return {{"a", RandomBf16(256 * 256, 7)}, {"b", RandomBf16(256 * 256, 8)}};
}

// The reference's C, with `add` added to element `at` (none when at < 0).
std::string C(double add = 0, int at = -1) {
  absl::StatusOr<Reference> want =
      ReferenceOutputs(GemmAt(64), testing::Shared(Inputs()), {});
  REQUIRE(want.ok());
  std::string c = want->outputs.at("c");
  if (at >= 0) {
    const float v = testing::Bf16At(c, at) + static_cast<float>(add);
    const uint16_t bits = FloatToBf16(v);
    std::memcpy(c.data() + 2 * at, &bits, 2);
  }
  return c;
}

// One point of a GEMM's settings as Measure gives it: setting i (tile_k
// 64 >> i) wrote `written[i]`, the recorded setting's inputs kept; with
// `outputs` false, figures from the cache (digests, no outputs).
struct Point {
  MeasurePlan plan;
  MeasureOutcome outcome;
};
Point MakePoint(const std::vector<std::string>& written, bool outputs = true) {
  Point p;
  for (size_t i = 0; i < written.size(); ++i) {
    p.plan.settings.push_back(GemmAt(int64_t{64} >> i));
    p.outcome.measurements[static_cast<int>(i)].set_output(
        Sha256Hex(written[i]));
    if (!outputs) continue;
    p.outcome.outputs[static_cast<int>(i)].written = {{"c", written[i]}};
  }
  if (outputs) p.outcome.outputs[0].inputs = testing::Shared(Inputs());
  return p;
}

// The recorded setting's output; the same (not judged); within the gate
// twice; a miss of 1.0 at element 3 (refused).
std::vector<std::string> FiveOutputs() {
  return {C(), C(), C(0.1, 5), C(1.0, 3), C(0.1, 9)};
}

const std::vector<int> kOthers = {1, 2, 3, 4};

// Counts the references computed and the settings judged.
struct Counts {
  int references = 0;
  int judged = 0;
};
OutputJudge::Options CountingOptions(Counts& counts, Cache* cache = nullptr) {
  OutputJudge::Options options;
  options.platform.generation = "npu2";
  options.judge_id = "test/1";
  options.cache = cache;
  options.reference = testing::CountingReference(&counts.references);
  options.judge = testing::CountingJudge(&counts.judged);
  return options;
}

std::map<int, std::string> JudgeAll(OutputJudge& judge, Point p,
                                    const std::vector<int>& settings) {
  const MeasurePlan plan = p.plan;
  REQUIRE(judge.Start(plan, std::move(p.outcome), settings).ok());
  absl::StatusOr<std::map<int, std::string>> verdicts = judge.Finish();
  REQUIRE(verdicts.ok());
  return *verdicts;
}

TEST_CASE("OutputJudge: one reference for all of a point's settings",
          "[verdicts]") {
  Counts counts;
  OutputJudge judge(CountingOptions(counts));
  const std::map<int, std::string> verdicts =
      JudgeAll(judge, MakePoint(FiveOutputs()), kOthers);
  CHECK(counts.judged == 3);  // setting 1's output is the recorded one's
  CHECK(counts.references == 1);
  REQUIRE(verdicts.size() == 4);
  CHECK(verdicts.at(1).empty());
  CHECK(verdicts.at(2).empty());
  CHECK(verdicts.at(4).empty());
  // The verdict a judge computing its own reference gives, word for word.
  const Point p = MakePoint(FiveOutputs());
  const std::string alone =
      *Judge(p.plan.settings[0], p.plan.settings[3], testing::Shared(Inputs()),
             {{"c", C(1.0, 3)}}, {});
  CHECK(absl::StartsWith(alone, "c under the default's gate: "));
  CHECK(verdicts.at(3) == alone);

  // The same point measured again (a confirmation): nothing recomputed.
  CHECK(JudgeAll(judge, MakePoint(FiveOutputs()), kOthers) == verdicts);
  CHECK(counts.judged == 6);
  CHECK(counts.references == 1);

  // Other given inputs are another point: its own reference.
  Point given = MakePoint(FiveOutputs());
  given.plan.inputs = {{"a", Inputs().at("a")}};
  CHECK(JudgeAll(judge, std::move(given), kOthers) == verdicts);
  CHECK(counts.references == 2);
}

std::string TempPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             absl::StrCat("irontune_verdicts_test_", ::getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / name);
  return (dir / name).string();
}

TEST_CASE("OutputJudge: judgements are kept and a rerun judges nothing",
          "[verdicts]") {
  auto cache =
      Cache::Open(TempPath("kept.db"), "NPU Strix", PowerMode::kDefault);
  REQUIRE(cache.ok());
  Counts first;
  std::map<int, std::string> verdicts;
  {
    OutputJudge judge(CountingOptions(first, cache->get()));
    verdicts = JudgeAll(judge, MakePoint(FiveOutputs()), kOthers);
  }
  CHECK(first.judged == 3);
  Counts again;
  OutputJudge judge(CountingOptions(again, cache->get()));
  // Figures from the cache: no outputs, the judgements kept.
  CHECK(JudgeAll(judge, MakePoint(FiveOutputs(), false), kOthers) == verdicts);
  CHECK(again.judged == 0);
  CHECK(again.references == 0);
  // A figure from the cache with no judgement kept is refused, unjudged.
  std::vector<std::string> other = FiveOutputs();
  other[2] = C(0.1, 11);
  const std::map<int, std::string> unjudged =
      JudgeAll(judge, MakePoint(other, false), {2});
  CHECK(absl::StrContains(unjudged.at(2), "remeasure to judge it"));
  CHECK(again.judged == 0);
}

TEST_CASE("OutputJudge: a reference's error refuses and is computed once",
          "[verdicts]") {
  Counts counts;
  OutputJudge::Options options = CountingOptions(counts);
  options.reference = [&counts](
                          const v1::Operator&, const SharedInputs&,
                          const CallValues&) -> absl::StatusOr<Reference> {
    ++counts.references;
    return absl::UnimplementedError("no reference here");
  };
  OutputJudge judge(std::move(options));
  const std::map<int, std::string> verdicts =
      JudgeAll(judge, MakePoint(FiveOutputs()), kOthers);
  CHECK(counts.references == 1);
  CHECK(verdicts.at(1).empty());
  for (int i : {2, 3, 4}) {
    CHECK(verdicts.at(i) ==
          "only a bit-identical output is admitted (no reference here)");
  }
}

TEST_CASE("OutputJudge: a judge's failure reaches the caller at Finish",
          "[verdicts]") {
  OutputJudge::Options options;
  options.platform.generation = "npu2";
  options.judge =
      [](const v1::Operator&, const v1::Operator&, const SharedInputs&,
         const std::map<std::string, std::string>&, const CallValues&,
         const ReferenceLookup&) -> std::optional<std::string> {
    throw std::runtime_error("the judge broke");
  };
  OutputJudge judge(std::move(options));
  Point p = MakePoint(FiveOutputs());
  REQUIRE(judge.Start(p.plan, std::move(p.outcome), kOthers).ok());
  CHECK_THROWS_WITH(judge.Finish(), "the judge broke");
  // Finished: another Start is taken.
  Point q = MakePoint(FiveOutputs());
  CHECK(judge.Start(q.plan, std::move(q.outcome), {1}).ok());
  CHECK(judge.Finish()->at(1).empty());
}

}  // namespace
}  // namespace irontune

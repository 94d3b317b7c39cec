#include "daemon/edge/event_merge.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace irontune {
namespace {

v1::AutotuneEvent Log(const std::string& text, const std::string& job = "j") {
  v1::AutotuneEvent e;
  e.set_job_id(job);
  e.mutable_log()->set_text(text);
  return e;
}

v1::AutotuneEvent Trials(const std::string& shape, std::vector<double> deltas,
                         bool single = false) {
  v1::AutotuneEvent e;
  e.set_job_id("j");
  v1::TrialEvent* t = e.mutable_trial();
  t->set_shape(shape);
  for (double d : deltas) {
    v1::Trial* trial = single ? t->mutable_trial() : t->add_trials();
    trial->set_delta_us(d);
  }
  return e;
}

v1::AutotuneEvent Progress(uint32_t index) {
  v1::AutotuneEvent e;
  e.set_job_id("j");
  e.mutable_progress()->set_index(index);
  return e;
}

std::vector<double> Deltas(const v1::AutotuneEvent& e) {
  std::vector<double> out;
  for (const v1::Trial& t : e.trial().trials()) out.push_back(t.delta_us());
  return out;
}

TEST_CASE("event merge: runs of log lines become one, in order") {
  std::vector<v1::AutotuneEvent> out =
      MergeEvents({Log("a"), Log("b"), Progress(1), Log("c"), Log("d")});
  REQUIRE(out.size() == 3);
  CHECK(out[0].log().text() == "a\nb");
  CHECK(out[1].has_progress());
  CHECK(out[1].progress().index() == 1);
  CHECK(out[2].log().text() == "c\nd");
  CHECK(out[2].job_id() == "j");
}

TEST_CASE("event merge: trials merge within a shape, never across") {
  std::vector<v1::AutotuneEvent> out = MergeEvents(
      {Trials("GEMM a", {1, 2}), Trials("GEMM a", {3}, /*single=*/true),
       Trials("GEMM a", {4}), Trials("GEMV b", {5})});
  REQUIRE(out.size() == 2);
  CHECK(out[0].trial().shape() == "GEMM a");
  CHECK_FALSE(out[0].trial().has_trial());
  CHECK(Deltas(out[0]) == std::vector<double>{1, 2, 3, 4});
  CHECK(out[1].trial().shape() == "GEMV b");
  CHECK(Deltas(out[1]) == std::vector<double>{5});
}

TEST_CASE("event merge: a lone event passes as it came") {
  std::vector<v1::AutotuneEvent> out =
      MergeEvents({Trials("GEMM a", {7}, /*single=*/true), Log("x")});
  REQUIRE(out.size() == 2);
  // Nothing was merged into it, so its one trial stays where it was.
  CHECK(out[0].trial().has_trial());
  CHECK(out[0].trial().trial().delta_us() == 7);
  CHECK(out[1].log().text() == "x");
  CHECK(MergeEvents({}).empty());
}

TEST_CASE("event merge: events of different jobs are kept apart") {
  std::vector<v1::AutotuneEvent> out =
      MergeEvents({Log("a", "j1"), Log("b", "j2")});
  REQUIRE(out.size() == 2);
  CHECK(out[0].log().text() == "a");
  CHECK(out[1].log().text() == "b");
}

TEST_CASE("event merge: a merged message holds a bounded number of events") {
  std::vector<v1::AutotuneEvent> in;
  for (size_t i = 0; i < 2 * kMaxMergedEvents + 1; ++i) {
    in.push_back(Log(std::to_string(i)));
  }
  std::vector<v1::AutotuneEvent> out = MergeEvents(in);
  REQUIRE(out.size() == 3);
  // Every line is there once, in order.
  std::string all;
  for (const v1::AutotuneEvent& e : out) all += e.log().text() + "\n";
  std::string expected;
  for (size_t i = 0; i < in.size(); ++i) expected += std::to_string(i) + "\n";
  CHECK(all == expected);
}

}  // namespace
}  // namespace irontune

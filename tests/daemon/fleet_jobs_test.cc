#include "daemon/scheduler/fleet_jobs.h"

#include <catch2/catch.hpp>

#include "common/shape.h"
#include "daemon/scheduler/requests.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

v1::AutotuneRequest Small() {
  v1::AutotuneRequest request = testing::SmallAutotune(/*quick=*/true);
  request.set_client("alice");
  return request;
}

TEST_CASE("fleet jobs: one shard per shape, each naming its shape alone") {
  const v1::AutotuneRequest request = Small();
  auto job = FleetJobOf(request, "ci", "npu-strix", PowerMode::kPerformance);
  REQUIRE(job.ok());
  CHECK(job->owner == "ci");
  CHECK(job->platform == "npu-strix");
  CHECK(job->interactive);  // UNSPECIFIED is interactive
  CHECK(job->priority == 1);
  REQUIRE(job->shards.size() == 2);
  const std::string keys[] = {ShapeKey(request.calls().operators(0)),
                              ShapeKey(request.calls().operators(1))};
  for (size_t i = 0; i < 2; ++i) {
    CHECK(job->shards[i].shape_key == keys[i]);
    v1::AutotuneRequest task;
    REQUIRE(task.ParseFromString(job->shards[i].task));
    REQUIRE(task.shapes_size() == 1);
    CHECK(task.shapes(0) == keys[i]);
    CHECK(task.client().empty());
    CHECK(task.platform() == "npu-strix");
    CHECK(task.power_mode() == "performance");
    CHECK(task.calls().operators_size() == 2);  // the whole model
    CHECK(ValidateAutotuneRequest(task).ok());
  }
}

TEST_CASE("fleet jobs: identical submits share a digest, whoever sends them") {
  v1::AutotuneRequest a = Small();
  v1::AutotuneRequest b = Small();
  b.set_client("bob");
  b.set_priority(v1::PRIORITY_BATCH);
  b.set_detach(true);
  const auto mode = PowerMode::kPerformance;
  CHECK(FleetRequestDigest(a, "npu-strix", mode) ==
        FleetRequestDigest(b, "npu-strix", mode));
  CHECK(FleetRequestDigest(a, "npu-strix", mode) !=
        FleetRequestDigest(a, "npu-krackan", mode));
  CHECK(FleetRequestDigest(a, "npu-strix", mode) !=
        FleetRequestDigest(a, "npu-strix", PowerMode::kTurbo));
  b.mutable_timing()->set_rounds(4);
  CHECK(FleetRequestDigest(a, "npu-strix", mode) !=
        FleetRequestDigest(b, "npu-strix", mode));
  auto batch = FleetJobOf(b, "ci", "npu-strix", mode);
  REQUIRE(batch.ok());
  CHECK_FALSE(batch->interactive);
  CHECK(batch->priority == 0);
}

TEST_CASE("fleet jobs: a request naming shapes gets those shards only") {
  v1::AutotuneRequest request = Small();
  request.add_shapes(ShapeKey(request.calls().operators(1)));
  auto job = FleetJobOf(request, "ci", "npu-strix", PowerMode::kDefault);
  REQUIRE(job.ok());
  REQUIRE(job->shards.size() == 1);
  CHECK(job->shards[0].shape_key == request.shapes(0));
}

TEST_CASE("fleet jobs: a shard's decision is its shape's entry alone") {
  const v1::AutotuneRequest request = Small();
  auto job = FleetJobOf(request, "ci", "npu-strix", PowerMode::kDefault);
  REQUIRE(job.ok());
  v1::AutotuneRequest task;
  REQUIRE(task.ParseFromString(job->shards[1].task));
  const std::vector<ShapeGroup> groups = *GroupShapes(request.calls());
  v1::AutotuneResult result;
  v1::ProfileEntry* add = result.mutable_profile()->add_entries();
  add->set_operator_class(groups[0].class_name);
  v1::ProfileEntry* silu = result.mutable_profile()->add_entries();
  silu->set_operator_class(groups[1].class_name);
  for (const v1::Field& dim : groups[1].dims) *silu->add_dims() = dim;
  v1::Field* tile = silu->add_tunables();
  tile->set_name("tile_size");
  tile->mutable_value()->set_int_value(1024);
  for (const v1::Field& dim : groups[0].dims) *add->add_dims() = dim;
  auto decision = ShardDecision(task, result);
  REQUIRE(decision.has_value());
  v1::ProfileEntry entry;
  REQUIRE(entry.ParseFromString(*decision));
  CHECK(entry.operator_class() == groups[1].class_name);
  CHECK(entry.tunables_size() == 1);
  // No entry covering the shape: no decision.
  result.mutable_profile()->mutable_entries()->DeleteSubrange(1, 1);
  CHECK_FALSE(ShardDecision(task, result).has_value());
}

v1::Field IntField(const std::string& name, int64_t value) {
  v1::Field f;
  f.set_name(name);
  f.mutable_value()->set_int_value(value);
  return f;
}

v1::ProfileEntry MakeEntry(const std::string& cls, int64_t size, int64_t tile) {
  v1::ProfileEntry e;
  e.set_operator_class(cls);
  *e.add_dims() = IntField("size", size);
  *e.add_tunables() = IntField("tile_size", tile);
  return e;
}

TEST_CASE("fleet jobs: the shards' results make the job's, as one box's") {
  v1::AutotuneRequest request = Small();
  *request.mutable_profile()->add_entries() = MakeEntry("Add", 2048, 256);
  *request.mutable_profile()->add_entries() = MakeEntry("Other", 1, 1);

  v1::JobResult first;
  v1::ProfileDiff* d0 = first.mutable_autotune()->mutable_diff();
  v1::EntryChange* change = d0->add_changed();
  change->set_operator_class("Add");
  *change->add_dims() = IntField("size", 2048);
  *change->add_old_tunables() = IntField("tile_size", 256);
  *change->add_new_tunables() = IntField("tile_size", 512);
  d0->set_has_model_gain(true);
  d0->set_model_gain_us(2.0);
  d0->set_model_noise_us(0.3);
  first.mutable_autotune()->mutable_stats()->set_shapes(1);
  first.mutable_autotune()->mutable_stats()->set_settings_timed(5);

  v1::JobResult second;
  v1::ProfileDiff* d1 = second.mutable_autotune()->mutable_diff();
  *d1->add_added() = MakeEntry("SiLU", 8192, 1024);
  d1->add_added_gains()->set_has_gain(true);
  d1->set_has_model_gain(true);
  d1->set_model_gain_us(1.0);
  d1->set_model_noise_us(0.4);
  second.mutable_autotune()->mutable_stats()->set_shapes(1);
  second.mutable_autotune()->mutable_stats()->set_settings_timed(7);

  const v1::AutotuneResult result =
      AssembleResult(request, {{"add", first}, {"silu", second}}, "");
  const v1::Profile& p = result.profile();
  REQUIRE(p.entries_size() == 3);
  CHECK(p.entries(0).operator_class() == "Add");  // in place
  CHECK(p.entries(0).tunables(0).value().int_value() == 512);
  CHECK(p.entries(1).operator_class() == "Other");
  CHECK(p.entries(2).operator_class() == "SiLU");  // appended
  const v1::ProfileDiff& diff = result.diff();
  CHECK(diff.changed_size() == 1);
  CHECK(diff.added_size() == 1);
  CHECK(diff.added_gains_size() == 1);
  REQUIRE(diff.kept_size() == 1);
  CHECK(diff.kept(0).operator_class() == "Other");
  CHECK(diff.model_gain_us() == Approx(3.0));
  CHECK(diff.model_noise_us() == Approx(0.5));
  CHECK(result.stats().shapes() == 2);
  CHECK(result.stats().settings_timed() == 12);

  // A shard that did not finish leaves its shape untuned, saying why.
  const v1::AutotuneResult partial = AssembleResult(
      request, {{"add", first}, {"silu", std::nullopt}}, "failed on 3 boxes");
  REQUIRE(partial.diff().untuned_size() == 1);
  CHECK(partial.diff().untuned(0).shape() == "silu");
  CHECK(partial.diff().untuned(0).reason() == "failed on 3 boxes");
  CHECK(partial.profile().entries_size() == 2);
}

}  // namespace
}  // namespace irontune

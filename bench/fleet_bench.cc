// fleet_bench: a fleet on one machine. Real irontuned boxes (sim:npu1 and
// sim:npu2 on the virtual clock, at the performance power mode) and fronts
// share a throwaway PostgreSQL cluster (tests/testing/pg_cluster.h); this
// process queues jobs as a front does (FleetJobOf, FleetQueue::SubmitJob)
// or calls the fronts over gRPC, and reads what the boxes commit.
//
//   fleet_bench [routing|dedup|overlap|scale|hitpath|boxloss|outage|
//                priority|all]
//               [--jobs N] [--boxes B] [--outage S] [--without-lm-head]
//
// routing  2 npu1 + 2 npu2 boxes, N small jobs (default 40) alternating
//          between the platforms: the share of shards committed by a box
//          of the platform asked for, and figures in a wrong partition.
// dedup    one box; 20 identical submits at once, then the example model
//          (23 shapes) submitted again after it ended: jobs made, settings
//          timed the first time and the second.
// overlap  4 boxes; 5 models of 10 of the example's shapes each,
//          overlapping, submitted at once: settings timed against the
//          distinct figures stored.
// scale    the example model on 1 box, then on B boxes (default 4): device
//          seconds per box (the virtual clock's NPU time, summed over the
//          shards each committed), the longest box against the single box,
//          each box's share. On this machine the boxes share its cores, so
//          the wall time says nothing of a lab; the NPU time does. With
//          --without-lm-head, the example's other 22 shapes.
// hitpath  2 npu2 boxes busy with 8 copies of the example, 2 fronts: a
//          stored model's submit at 20/s for 10 s, alternating fronts:
//          p50/p99 from the call to its status; the fronts' and boxes' peak
//          RSS; the store's bytes per figure.
// boxloss  the example on 2 boxes (lease 10 s), one killed -9 once it holds
//          a shard and has committed figures: how long until the shard is
//          claimed again, what its second attempt timed and took from the
//          store, the killed box's rows before and after.
// outage   the example on 2 boxes with 2 fronts, the store stopped for S
//          seconds (default 60) once a shard is done: whether the job
//          completes, the figures before and after, and the fronts' answers
//          meanwhile (a ListJobs a second each).
// priority one box; 200 queued batch shards, then 10 interactive submits
//          one after another: how long each waits for its claim, against a
//          shard's average time.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/percentile.h"
#include "common/profile.h"
#include "common/recording.h"
#include "common/shape.h"
#include "daemon/fleet/fleet_queue.h"
#include "daemon/scheduler/fleet_jobs.h"
#include "grpcpp/grpcpp.h"
#include "irontune/v1/tuner.grpc.pb.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/pg_cluster.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

using e2e::DaemonProcess;

struct Fleet {
  testing::PgCluster* cluster = nullptr;
  std::string url;
  std::unique_ptr<FleetStore> store;
  std::unique_ptr<FleetQueue> queue;
  std::vector<std::unique_ptr<DaemonProcess>> boxes;
  std::vector<std::unique_ptr<DaemonProcess>> fronts;
};

// A fresh database (or the one `url` names) and this process's connection
// to it.
bool OpenFleet(testing::PgCluster& cluster, Fleet& fleet,
               const std::string& url = "") {
  fleet.cluster = &cluster;
  fleet.url = url.empty() ? cluster.SocketUrl(cluster.NewDatabase()) : url;
  auto store = FleetStore::Open(*ResolveFleetUrl(fleet.url, {}), "bench");
  if (!store.ok()) {
    std::printf("fleet store: %s\n", store.status().ToString().c_str());
    return false;
  }
  fleet.store = std::move(*store);
  fleet.queue = std::make_unique<FleetQueue>(*fleet.store);
  return true;
}

// Starts a box named "box SLUG N" on `device`, then `more` flags.
bool AddBox(Fleet& fleet, const std::string& device, const std::string& slug,
            const std::vector<std::string>& more = {}) {
  const std::string name =
      "box " + slug + " " + std::to_string(fleet.boxes.size());
  const std::string dir = e2e::TempDir("fleet-bench");
  const std::string server = "unix:" + dir + "/sock";
  std::vector<std::string> flags = {
      "--device",      device,    "--power-mode", "performance",
      "--fleet",       fleet.url, "--fleet-name", name,
      "--runtime-dir", dir,       "--build-jobs", "1"};
  flags.insert(flags.end(), more.begin(), more.end());
  auto box = std::make_unique<DaemonProcess>(
      name,
      e2e::SimDaemonArgv(IRONTUNE_IRONTUNED, dir + "/state", server, "virtual",
                         flags),
      dir, IRONTUNE_CLIENT, server);
  if (!box->Up(30)) {
    std::printf("%s did not come up: %s\n", name.c_str(), box->Log().c_str());
    return false;
  }
  fleet.boxes.push_back(std::move(box));
  return true;
}

// Waits up to `seconds` for every job of `ids` to end.
std::vector<JobView> AwaitAll(Fleet& fleet, const std::vector<int64_t>& ids,
                              double seconds) {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<JobView> views(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    while (std::chrono::steady_clock::now() < end) {
      absl::StatusOr<JobView> v = fleet.queue->GetJob(ids[i]);
      if (v.ok()) views[i] = *v;
      if (v.ok() && v->state != FleetJobState::kQueued &&
          v->state != FleetJobState::kRunning) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return views;
}

int64_t Count(Fleet& fleet, const std::string& sql) {
  auto rows = fleet.store->connection().Exec(sql);
  return rows.ok() ? rows->Int(0, 0).value_or(-1) : -1;
}

v1::AutotuneRequest Example() {
  v1::AutotuneRequest request;
  const std::string dir = std::string(IRONTUNE_SOURCE_DIR) + "/examples/";
  *request.mutable_calls() = *LoadRecording(dir + "llama-3.2-1b.rec");
  *request.mutable_profile() =
      Profile::Load(dir + "profiles/npu2.json")->proto();
  request.mutable_timing()->set_rounds(3);
  request.mutable_timing()->set_calls(5);
  return request;
}

// The job of `request` for `slug`, queued; its id (-1 on failure).
int64_t Submit(Fleet& fleet, const v1::AutotuneRequest& request,
               const std::string& slug) {
  auto job = FleetJobOf(request, "bench", slug, PowerMode::kPerformance);
  if (!job.ok()) return -1;
  auto ticket = fleet.queue->SubmitJob(*job);
  return ticket.ok() ? ticket->id : -1;
}

uint32_t SettingsTimed(const JobView& view) {
  uint32_t timed = 0;
  for (const std::string& bytes : view.results) {
    v1::JobResult r;
    if (r.ParseFromString(bytes))
      timed += r.autotune().stats().settings_timed();
  }
  return timed;
}

void Routing(testing::PgCluster& cluster, int jobs) {
  Fleet fleet;
  if (!OpenFleet(cluster, fleet)) return;
  for (int i = 0; i < 2; ++i) {
    if (!AddBox(fleet, "sim:npu1", "npu-phoenix") ||
        !AddBox(fleet, "sim:npu2", "npu-strix")) {
      return;
    }
  }
  std::vector<int64_t> ids;
  for (int i = 0; i < jobs; ++i) {
    v1::AutotuneRequest request = testing::SmallAutotune(/*quick=*/true);
    request.set_seed(static_cast<uint64_t>(i));  // distinct submits
    ids.push_back(Submit(fleet, request, i % 2 ? "npu-strix" : "npu-phoenix"));
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<JobView> views = AwaitAll(fleet, ids, 600);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  int done = 0;
  for (const JobView& v : views) done += v.state == FleetJobState::kDone;
  const int64_t shards =
      Count(fleet, "SELECT count(*) FROM irontune.shards WHERE state = 'done'");
  const int64_t routed = Count(
      fleet,
      "SELECT count(*) FROM irontune.shards s JOIN irontune.jobs j ON j.id = "
      "s.job_id WHERE s.state = 'done' AND s.completed_by LIKE 'box ' || "
      "j.platform || ' %'");
  const int64_t wrong = Count(
      fleet,
      "SELECT count(*) FROM irontune.figures f JOIN irontune.partitions p ON "
      "p.id = f.partition WHERE f.box NOT LIKE 'box ' || p.platform || ' %' "
      "OR p.power_mode <> 'performance'");
  std::printf(
      "routing: %d jobs (2 shards each) over 2 npu1 + 2 npu2 boxes: %d done "
      "in %.1f s wall\n  shards committed by a box of the platform asked "
      "for: %lld of %lld (%.1f%%, goal 100%%); figures in a wrong partition: "
      "%lld (goal 0)\n",
      jobs, done, wall, static_cast<long long>(routed),
      static_cast<long long>(shards),
      shards > 0
          ? 100.0 * static_cast<double>(routed) / static_cast<double>(shards)
          : 0.0,
      static_cast<long long>(wrong));
}

void Dedup(testing::PgCluster& cluster) {
  Fleet fleet;
  if (!OpenFleet(cluster, fleet) || !AddBox(fleet, "sim:npu2", "npu-strix")) {
    return;
  }
  const v1::AutotuneRequest example = Example();
  std::vector<int64_t> ids(20);
  std::vector<std::thread> senders;
  for (int i = 0; i < 20; ++i) {
    senders.emplace_back([&, i] {
      auto store = FleetStore::Open(*ResolveFleetUrl(fleet.url, {}), "front");
      if (!store.ok()) return;
      FleetQueue queue(**store);
      v1::AutotuneRequest request = example;
      request.set_client("sender " + std::to_string(i));
      auto job =
          FleetJobOf(request, "bench", "npu-strix", PowerMode::kPerformance);
      auto ticket = job.ok() ? queue.SubmitJob(*job)
                             : absl::StatusOr<JobTicket>(job.status());
      ids[i] = ticket.ok() ? ticket->id : -1;
    });
  }
  for (std::thread& t : senders) t.join();
  std::map<int64_t, int> distinct;
  for (int64_t id : ids) ++distinct[id];
  const std::vector<JobView> first = AwaitAll(fleet, {ids[0]}, 1800);
  const int64_t again = Submit(fleet, example, "npu-strix");
  const std::vector<JobView> second = AwaitAll(fleet, {again}, 1800);
  std::printf(
      "dedup: 20 identical submits of the example at once made %zu job(s) "
      "(goal 1); its 23 shards timed %u settings; the same model submitted "
      "again after it ended (a new job) timed %u (goal 0)\n",
      distinct.size(), SettingsTimed(first[0]), SettingsTimed(second[0]));
}

// The example's request: whole, or without its lm head (the GEMV of
// M=128256, five sixths of its NPU time) so that its time spreads over its
// other 22 shapes.
v1::AutotuneRequest ExampleShapes(bool lm_head) {
  v1::AutotuneRequest request = Example();
  if (lm_head) return request;
  const std::vector<ShapeGroup> groups = *GroupShapes(request.calls());
  for (const ShapeGroup& group : groups) {
    if (group.key.find("M=128256") == std::string::npos) {
      request.add_shapes(group.key);
    }
  }
  return request;
}

// The example on `boxes` fresh boxes: device seconds by box.
std::map<std::string, double> ExampleOn(testing::PgCluster& cluster, int boxes,
                                        bool lm_head, double* wall) {
  Fleet fleet;
  std::map<std::string, double> by_box;
  if (!OpenFleet(cluster, fleet)) return by_box;
  for (int i = 0; i < boxes; ++i) {
    if (!AddBox(fleet, "sim:npu2", "npu-strix")) return by_box;
  }
  const auto start = std::chrono::steady_clock::now();
  const int64_t id = Submit(fleet, ExampleShapes(lm_head), "npu-strix");
  const JobView view = AwaitAll(fleet, {id}, 3600)[0];
  *wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (size_t i = 0; i < view.results.size(); ++i) {
    v1::JobResult r;
    if (!r.ParseFromString(view.results[i])) continue;
    by_box[view.completed_by[i]] += r.autotune().stats().device_seconds();
  }
  return by_box;
}

void Scale(testing::PgCluster& cluster, int boxes, bool lm_head) {
  double wall_one = 0, wall_many = 0;
  const std::map<std::string, double> one =
      ExampleOn(cluster, 1, lm_head, &wall_one);
  const std::map<std::string, double> many =
      ExampleOn(cluster, boxes, lm_head, &wall_many);
  double total = 0, longest = 0, many_total = 0;
  for (const auto& [box, s] : one) total += s;
  for (const auto& [box, s] : many) {
    many_total += s;
    longest = std::max(longest, s);
  }
  std::printf(
      "scale: the example (%s, --rounds 3 --calls 5) on 1 box: %.1f "
      "s of NPU time (%.1f s wall); on %d boxes: %.1f s of NPU time in all, "
      "the longest box %.1f s: %.2fx faster (%.1f s wall, the boxes "
      "sharing this machine's cores)\n",
      lm_head ? "23 shapes" : "without its lm head: 22 shapes", total, wall_one,
      boxes, many_total, longest, longest > 0 ? total / longest : 0.0,
      wall_many);
  for (const auto& [box, s] : many) {
    std::printf(
        "  %-24s %6.1f s of NPU time (%.0f%% of the job's, %.2f of the "
        "longest box's)\n",
        box.c_str(), s, many_total > 0 ? 100 * s / many_total : 0.0,
        longest > 0 ? s / longest : 0.0);
  }
}

// Five models that share shapes, submitted at once to 4 boxes: every
// (key, setting) timed once, however many jobs ask for it.
void Overlap(testing::PgCluster& cluster) {
  Fleet fleet;
  if (!OpenFleet(cluster, fleet)) return;
  for (int i = 0; i < 4; ++i) {
    if (!AddBox(fleet, "sim:npu2", "npu-strix")) return;
  }
  const v1::AutotuneRequest whole = ExampleShapes(/*lm_head=*/false);
  std::vector<int64_t> ids;
  for (int m = 0; m < 5; ++m) {  // shapes [3m, 3m + 10) of the 22
    v1::AutotuneRequest model = whole;
    model.clear_shapes();
    for (int i = 3 * m; i < 3 * m + 10 && i < whole.shapes_size(); ++i) {
      model.add_shapes(whole.shapes(i));
    }
    ids.push_back(Submit(fleet, model, "npu-strix"));
  }
  uint32_t timed = 0;
  for (const JobView& view : AwaitAll(fleet, ids, 3600)) {
    timed += SettingsTimed(view);
  }
  const int64_t figures = Count(fleet, "SELECT count(*) FROM irontune.figures");
  std::printf(
      "dedup, overlapping: 5 models of 10 of the example's shapes each, "
      "overlapping by 7, on 4 boxes at once: %u settings timed, %lld "
      "distinct figures stored: %lld timed more than once (goal 0)\n",
      timed, static_cast<long long>(figures),
      static_cast<long long>(timed) - static_cast<long long>(figures));
}

// Starts a front of `fleet` (npu2 mapped to Strix) on a unix socket.
bool AddFront(Fleet& fleet) {
  const std::string dir = e2e::TempDir("fleet-bench-front");
  const std::string server = "unix:" + dir + "/sock";
  auto front = std::make_unique<DaemonProcess>(
      "front",
      std::vector<std::string>{IRONTUNE_IRONTUNED, "--role", "front", "--fleet",
                               fleet.url, "--fleet-platform", "npu2=strix",
                               "--listen", server, "--log-level", "warn"},
      dir, IRONTUNE_CLIENT, server);
  if (!front->Up(30)) {
    std::printf("a front did not come up: %s\n", front->Log().c_str());
    return false;
  }
  fleet.fronts.push_back(std::move(front));
  return true;
}

std::unique_ptr<v1::Tuner::Stub> StubOf(const DaemonProcess& process) {
  return v1::Tuner::NewStub(grpc::CreateChannel(
      process.server(), grpc::InsecureChannelCredentials()));
}

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

// One Autotune through `stub`, read to its end: its status; `*ms` the
// wall time from the call to its status.
grpc::Status Autotune(v1::Tuner::Stub& stub, const v1::AutotuneRequest& request,
                      double* ms, std::string* profile = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(120));
  auto reader = stub.Autotune(&context, request);
  v1::AutotuneEvent event;
  while (reader->Read(&event)) {
    if (event.has_result() && profile != nullptr) {
      *profile = event.result().profile().SerializeAsString();
    }
  }
  grpc::Status status = reader->Finish();
  *ms = MsSince(start);
  return status;
}

// A small model's request as a client sends it to a front.
v1::AutotuneRequest SmallForFront(uint64_t seed) {
  v1::AutotuneRequest request = testing::SmallAutotune(/*quick=*/true);
  request.set_platform("npu2");
  request.set_power_mode("performance");
  request.set_seed(seed);
  return request;
}

// Peak resident memory (VmHWM) of `processes`, in MiB.
std::string PeakRss(const std::vector<std::unique_ptr<DaemonProcess>>& all) {
  std::string out;
  for (const auto& p : all) {
    const long kib = e2e::ProcStatusKib(p->process().pid(), "VmHWM");
    out += (out.empty() ? "" : ", ") + std::to_string(kib / 1024) + " MiB";
  }
  return out;
}

void HitPath(testing::PgCluster& cluster, int rate, double seconds) {
  Fleet fleet;
  if (!OpenFleet(cluster, fleet)) return;
  for (int i = 0; i < 2; ++i) {
    if (!AddBox(fleet, "sim:npu2", "npu-strix") || !AddFront(fleet)) return;
  }
  const v1::AutotuneRequest stored = SmallForFront(0);
  double ms = 0;
  grpc::Status first = Autotune(*StubOf(*fleet.fronts[0]), stored, &ms);
  if (!first.ok()) {
    std::printf("hit path: the first submit failed: %s\n",
                first.error_message().c_str());
    return;
  }
  // The boxes busy meanwhile: the example queued behind, several times
  // (distinct seeds, so distinct jobs).
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    v1::AutotuneRequest example = Example();
    example.set_seed(seed);
    Submit(fleet, example, "npu-strix");
  }
  const int calls = static_cast<int>(rate * seconds);
  std::vector<std::unique_ptr<v1::Tuner::Stub>> stubs;
  for (const auto& front : fleet.fronts) stubs.push_back(StubOf(*front));
  std::vector<double> latency(calls, -1);
  std::vector<std::string> profiles(calls);
  std::vector<std::thread> senders;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    std::this_thread::sleep_until(
        start + std::chrono::microseconds(1'000'000LL * i / rate));
    senders.emplace_back([&, i] {
      double took = 0;
      if (Autotune(*stubs[i % stubs.size()], stored, &took, &profiles[i])
              .ok()) {
        latency[i] = took;
      }
    });
  }
  for (std::thread& t : senders) t.join();
  const int64_t busy = Count(
      fleet, "SELECT count(*) FROM irontune.shards WHERE state = 'leased'");
  const int64_t waiting = Count(
      fleet, "SELECT count(*) FROM irontune.shards WHERE state = 'queued'");
  std::vector<double> ok;
  for (double l : latency) {
    if (l >= 0) ok.push_back(l);
  }
  const std::set<std::string> distinct(profiles.begin(), profiles.end());
  std::printf(
      "hit path: %d submits of a stored model at %d/s over 2 fronts, the "
      "2 boxes busy with the example (at the end %lld shards leased, %lld "
      "waiting): %zu answered; p50 %.1f ms (goal <= 30), p99 %.1f ms (goal "
      "<= 150); %zu distinct profile(s) among the answers (goal 1)\n",
      calls, rate, static_cast<long long>(busy),
      static_cast<long long>(waiting), ok.size(), Percentile(ok, 50),
      Percentile(ok, 99), distinct.size());
  std::printf("memory: peak RSS of the fronts %s; of the boxes %s\n",
              PeakRss(fleet.fronts).c_str(), PeakRss(fleet.boxes).c_str());
  const int64_t figures = Count(fleet, "SELECT count(*) FROM irontune.figures");
  const int64_t bytes =
      Count(fleet, "SELECT pg_total_relation_size('irontune.figures')");
  std::printf(
      "  the store: %lld figures in %lld bytes with their indexes (%.0f "
      "bytes a figure)\n",
      static_cast<long long>(figures), static_cast<long long>(bytes),
      figures > 0 ? static_cast<double>(bytes) / static_cast<double>(figures)
                  : 0.0);
}

// Waits up to `seconds` for `sql` (one integer) to be positive; the wait
// in seconds, or -1 when it never was.
double AwaitPositive(Fleet& fleet, const std::string& sql, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (MsSince(start) < seconds * 1000) {
    if (Count(fleet, sql) > 0) return MsSince(start) / 1000;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

void BoxLoss(testing::PgCluster& cluster, int lease_s) {
  Fleet fleet;
  if (!OpenFleet(cluster, fleet)) return;
  const std::vector<std::string> lease = {"--fleet-lease",
                                          std::to_string(lease_s)};
  for (int i = 0; i < 2; ++i) {
    if (!AddBox(fleet, "sim:npu2", "npu-strix", lease)) return;
  }
  // The example's lm head alone: one long shard, so the other box is idle
  // when the lease expires and the kill lands mid-shard.
  v1::AutotuneRequest request = Example();
  const std::vector<ShapeGroup> groups = *GroupShapes(request.calls());
  for (const ShapeGroup& group : groups) {
    if (group.key.find("M=128256") != std::string::npos) {
      request.add_shapes(group.key);
    }
  }
  const int64_t id = Submit(fleet, request, "npu-strix");
  // Killed once it holds the shard and has committed figures of it.
  const char* const kHolder =
      "SELECT count(*) FROM irontune.shards s WHERE s.lease_owner IS NOT "
      "NULL AND EXISTS (SELECT 1 FROM irontune.figures f WHERE f.box = "
      "s.lease_owner)";
  if (AwaitPositive(fleet, kHolder, 600) < 0) {
    std::printf("box loss: no box held the shard with figures committed\n");
    return;
  }
  std::string victim;
  if (auto rows = fleet.store->connection().Exec(
          "SELECT lease_owner FROM irontune.shards WHERE lease_owner IS NOT "
          "NULL");
      rows.ok() && rows->rows() == 1) {
    victim = std::string(rows->Text(0, 0));
  }
  const size_t index = victim == "box npu-strix 1" ? 1 : 0;
  const int64_t shard =
      Count(fleet, "SELECT shard FROM irontune.shards WHERE lease_owner = '" +
                       victim + "'");
  fleet.boxes[index]->process().Signal(SIGKILL);
  const int64_t kept =
      Count(fleet, "SELECT count(*) FROM irontune.figures WHERE box = '" +
                       victim + "'");
  const double resumed =
      AwaitPositive(fleet,
                    "SELECT count(*) FROM irontune.shards WHERE shard = " +
                        std::to_string(shard) + " AND attempts >= 2",
                    600);
  const JobView view = AwaitAll(fleet, {id}, 3600)[0];
  v1::JobResult redo;
  redo.ParseFromString(view.results.at(static_cast<size_t>(shard)));
  const int64_t after =
      Count(fleet, "SELECT count(*) FROM irontune.figures WHERE box = '" +
                       victim + "'");
  std::printf(
      "box loss: the example's lm head on 2 boxes (--fleet-lease %d), the "
      "one timing it killed -9 "
      "mid-shard: its shard claimed again %.1f s after (goal <= lease + 5 "
      "s); the second attempt timed %u settings and took %u from the "
      "store; the job %s; rows the killed box committed: %lld before, %lld "
      "after (lost: %lld, goal 0)\n",
      lease_s, resumed, redo.autotune().stats().settings_timed(),
      redo.autotune().stats().cache_hits(),
      std::string(FleetJobStateName(view.state)).c_str(),
      static_cast<long long>(kept), static_cast<long long>(after),
      static_cast<long long>(kept - after));
}

// Every second of an outage, a call to each front: the slowest answer and
// how many were UNAVAILABLE.
void ProbeFronts(Fleet& fleet, double seconds, double* slowest_ms,
                 int* unavailable, int* calls) {
  const auto start = std::chrono::steady_clock::now();
  while (MsSince(start) < seconds * 1000) {
    for (const auto& front : fleet.fronts) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(10));
      v1::ListJobsRequest request;
      v1::ListJobsResponse response;
      const auto t = std::chrono::steady_clock::now();
      grpc::Status s = StubOf(*front)->ListJobs(&context, request, &response);
      *slowest_ms = std::max(*slowest_ms, MsSince(t));
      *unavailable += s.error_code() == grpc::StatusCode::UNAVAILABLE;
      ++*calls;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

void Outage(testing::PgCluster& cluster, double seconds) {
  Fleet fleet;
  if (!OpenFleet(cluster, fleet)) return;
  for (int i = 0; i < 2; ++i) {
    if (!AddBox(fleet, "sim:npu2", "npu-strix") || !AddFront(fleet)) return;
  }
  const int64_t id = Submit(fleet, Example(), "npu-strix");
  // Stopped once a shard is done and figures are in the store.
  AwaitPositive(fleet,
                "SELECT count(*) FROM irontune.shards WHERE state = 'done' "
                "AND EXISTS (SELECT 1 FROM irontune.figures)",
                600);
  const int64_t before = Count(fleet, "SELECT count(*) FROM irontune.figures");
  fleet.store.reset();
  if (!cluster.Stop()) return;
  double slowest = 0;
  int unavailable = 0, calls = 0;
  ProbeFronts(fleet, seconds, &slowest, &unavailable, &calls);
  if (!cluster.Start() || !OpenFleet(cluster, fleet, fleet.url)) return;
  const JobView view = AwaitAll(fleet, {id}, 3600)[0];
  const int64_t after = Count(fleet, "SELECT count(*) FROM irontune.figures");
  uint32_t timed = 0;
  for (const std::string& bytes : view.results) {
    v1::JobResult r;
    if (r.ParseFromString(bytes))
      timed += r.autotune().stats().settings_timed();
  }
  std::printf(
      "outage: the store stopped for %.0f s during the example on 2 boxes: "
      "the job %s; figures in the store %lld before, %lld after; the "
      "shards' settings timed %u (a figure timed twice is stored once); "
      "fronts: %d of %d calls UNAVAILABLE, the slowest answered in %.0f ms "
      "(goal <= 1000)\n",
      seconds, std::string(FleetJobStateName(view.state)).c_str(),
      static_cast<long long>(before), static_cast<long long>(after), timed,
      unavailable, calls, slowest);
}

// The quick request of the small model's add alone: one shard.
v1::AutotuneRequest OneShard(uint64_t seed, v1::Priority priority) {
  v1::AutotuneRequest request = testing::SmallAutotune(/*quick=*/true);
  request.set_seed(seed);
  request.set_priority(priority);
  request.add_shapes(ShapeKey(request.calls().operators(0)));
  return request;
}

void Priority(testing::PgCluster& cluster, int batch) {
  Fleet fleet;
  if (!OpenFleet(cluster, fleet)) return;
  if (!AddBox(fleet, "sim:npu2", "npu-strix", {"--sim-build-seconds", "0"})) {
    return;
  }
  for (int i = 0; i < batch; ++i) {
    Submit(fleet, OneShard(static_cast<uint64_t>(i), v1::PRIORITY_BATCH),
           "npu-strix");
  }
  std::vector<double> waits;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    const int64_t id = Submit(
        fleet, OneShard(100000 + i, v1::PRIORITY_INTERACTIVE), "npu-strix");
    waits.push_back(AwaitPositive(
        fleet,
        "SELECT count(*) FROM irontune.shards WHERE state <> 'queued' AND "
        "job_id = " +
            std::to_string(id),
        600));
  }
  const double elapsed = MsSince(start) / 1000;
  const int64_t done =
      Count(fleet, "SELECT count(*) FROM irontune.shards WHERE state = 'done'");
  std::printf(
      "priority: 10 interactive submits behind %d queued batch shards: "
      "claimed after p50 %.2f s, p95 %.2f s; a shard took %.2f s on "
      "average meanwhile (%lld done in %.1f s; goal: p95 within one "
      "shard's time)\n",
      batch, Percentile(waits, 50), Percentile(waits, 95),
      done > 0 ? elapsed / static_cast<double>(done) : 0.0,
      static_cast<long long>(done), elapsed);
}

int Main(int argc, char** argv) {
  std::string what = argc > 1 && argv[1][0] != '-' ? argv[1] : "all";
  int jobs = 40, boxes = 4;
  double outage = 60;
  bool lm_head = true;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--jobs") jobs = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--boxes") boxes = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--outage") outage = std::atof(argv[i + 1]);
  }
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--without-lm-head") lm_head = false;
  }
  testing::PgCluster cluster;
  if (!cluster.available()) {
    std::printf("fleet_bench: %s\n", cluster.why_unavailable().c_str());
    return 1;
  }
  if (what == "routing" || what == "all") Routing(cluster, jobs);
  if (what == "dedup" || what == "all") Dedup(cluster);
  if (what == "overlap" || what == "all") Overlap(cluster);
  if (what == "scale" || what == "all") Scale(cluster, boxes, lm_head);
  if (what == "hitpath" || what == "all") HitPath(cluster, 20, 10);
  if (what == "boxloss" || what == "all") BoxLoss(cluster, 10);
  if (what == "outage" || what == "all") Outage(cluster, outage);
  if (what == "priority" || what == "all") Priority(cluster, 200);
  return 0;
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) { return irontune::Main(argc, argv); }

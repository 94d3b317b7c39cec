// End to end, what a CI job relies on: a profile tuned on one run of the
// simulated NPU passes `submit --check --remeasure` on another (another sim
// seed, another input seed, every figure timed again). The real irontuned
// and irontune-client as subprocesses over a real unix socket; bounded
// waits, no assertion on time.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "google/protobuf/text_format.h"
#include "tests/testing/process.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune::e2e {
namespace {

using e2e::Process;
using e2e::Result;

const std::string kIrontuned = IRONTUNE_IRONTUNED;
const std::string kIrontuneClient = IRONTUNE_CLIENT;

// irontuned on `dir` with the simulated NPU seeded `sim_seed` (virtual
// clock), stopped with SIGTERM.
class SeededDaemon {
 public:
  SeededDaemon(const std::string& dir, int sim_seed)
      : dir_(dir), socket_("unix:" + dir + "/sock") {
    process_ = std::make_unique<Process>(
        "irontuned",
        std::vector<std::string>{kIrontuned, "--state-dir", dir, "--listen",
                                 socket_, "--sim-clock", "virtual",
                                 "--sim-seed", std::to_string(sim_seed)},
        dir);
    REQUIRE(process_->started());
    for (int i = 0; i < 200; ++i) {
      if (Client({"--timeout", "1", "status"}, 10).code == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL("irontuned did not come up: " << process_->Stderr());
  }
  ~SeededDaemon() {
    if (process_ != nullptr && process_->started()) {
      process_->Signal(SIGTERM);
      process_->Wait(15);
    }
  }

  Result Client(std::vector<std::string> args, double seconds = 300) const {
    args.insert(args.begin(), {kIrontuneClient, "--server", socket_});
    return e2e::Run(args, dir_, seconds);
  }

 private:
  std::string dir_;
  std::string socket_;
  std::unique_ptr<Process> process_;
};

// testing::AddSiluCalls as dir/model.txtpb: an ElementwiseAdd whose
// tile_size choices tie, and a SiLU.
std::string WriteModel(const std::string& dir) {
  const std::string path = dir + "/model.txtpb";
  std::string text;
  google::protobuf::TextFormat::PrintToString(testing::AddSiluCalls(), &text);
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("e2e: a tuned profile passes --check --remeasure on another seed") {
  const std::string dir = e2e::TempDir("decisions");
  const std::string model = WriteModel(dir);
  const std::string profile = dir + "/profile.json";
  const std::vector<std::string> timing = {"--rounds", "8", "--calls", "10"};
  {
    SeededDaemon daemon(dir, 1);
    std::vector<std::string> args = {"submit", model, "--profile", profile,
                                     "--write"};
    args.insert(args.end(), timing.begin(), timing.end());
    Result tuned = daemon.Client(args);
    INFO(tuned.err);
    REQUIRE(tuned.code == 0);
  }
  const std::string written = e2e::ReadFile(profile);
  REQUIRE(!written.empty());
  {
    SeededDaemon daemon(dir, 2);
    std::vector<std::string> args = {"submit", model,     "--profile",
                                     profile,  "--check", "--remeasure",
                                     "--seed", "7"};
    args.insert(args.end(), timing.begin(), timing.end());
    Result check = daemon.Client(args);
    INFO(check.out << check.err);
    CHECK(check.code == 0);
    // Nothing changed, so nothing is gained against the submitted profile;
    // the per-recording figure is labelled as such.
    CHECK_THAT(check.out, Catch::Contains("no changes"));
    CHECK_THAT(check.out,
               Catch::Contains("model: 0.00 ± 0.00 µs faster per call than "
                               "the submitted profile"));
    CHECK_THAT(check.out, Catch::Contains("per recording:"));
  }
  CHECK(e2e::ReadFile(profile) == written);
}

}  // namespace
}  // namespace irontune::e2e

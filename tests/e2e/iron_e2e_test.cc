// End to end, IRON's formats through the real irontuned and
// irontune-client: a submit given a profile in IRON's format writes a
// profile IRON's load rules accept, in IRON's order; IRON's cost files
// (a costs/ tree and a CostTable, IRON-shaped fixtures under
// tests/e2e/testdata/iron-costs) import with counts the client prints.
// Waits are bounds, never assertions on time.

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/families.h"
#include "common/profile.h"
#include "google/protobuf/text_format.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/process.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune::e2e {
namespace {

const std::string kIronDaemon = IRONTUNE_IRONTUNED;
const std::string kIronClient = IRONTUNE_CLIENT;
const std::string kIronSource = IRONTUNE_SOURCE_DIR;

// irontuned on a fresh state directory `dir` over a unix socket, on the
// sim, up.
std::unique_ptr<DaemonProcess> StartDaemon(const std::string& dir) {
  const std::string socket = "unix:" + dir + "/sock";
  auto daemon = std::make_unique<DaemonProcess>(
      "irontuned", SimDaemonArgv(kIronDaemon, dir, socket), dir, kIronClient,
      socket);
  REQUIRE(daemon->Up());
  return daemon;
}

// A profile in IRON's format, written from IRON's class definitions: a
// GEMM, a GEMV and an RMSNorm the recording does not call (kept as they
// are) and a class irontune does not know (kept verbatim).
constexpr char kIronProfile[] =
    "{\"entries\": [\n"
    "  {\"operator\": \"GEMM\", \"M\": 512, \"K\": 512, \"N\": 512, "
    "\"tile_m\": 64, \"tile_n\": 64},\n"
    "  {\"operator\": \"GEMV\", \"M\": 2048, \"K\": 8192, "
    "\"tile_size_input\": 1},\n"
    "  {\"operator\": \"FusedNewThing\", \"rows\": 4, \"flavour\": \"x\", "
    "\"chunk\": 2},\n"
    "  {\"operator\": \"RMSNorm\", \"rows\": 256, \"tile_size\": 2048, "
    "\"weighted\": true, \"num_aie_columns\": 8}\n"
    "]}\n";

bool SameIdentity(const v1::ProfileEntry& a, const v1::ProfileEntry& b) {
  if (a.operator_class() != b.operator_class()) return false;
  if (a.dims_size() != b.dims_size()) return false;
  for (int i = 0; i < a.dims_size(); ++i) {
    if (a.dims(i).name() != b.dims(i).name()) return false;
    if (a.dims(i).value().SerializeAsString() !=
        b.dims(i).value().SerializeAsString()) {
      return false;
    }
  }
  return true;
}

TEST_CASE("e2e: a submit with an IRON profile writes one IRON loads, in order",
          "[e2e][iron]") {
  const std::string dir = TempDir("iron-profile");
  const std::string path = dir + "/npu2.json";
  std::ofstream(path) << kIronProfile;
  absl::StatusOr<Profile> before = Profile::FromJson(kIronProfile);
  REQUIRE(before.ok());
  // The recording: an ElementwiseAdd of three tile sizes and a SiLU call.
  // The whole example is refused by admission's default --job-memory (its
  // estimate is 15 GiB), and its prompt GEMMs take minutes on the sim.
  const std::string recording = dir + "/small.txtpb";
  std::string text;
  google::protobuf::TextFormat::PrintToString(
      testing::OneCall(
          "small", {testing::Add2048({256, 512, 1024}), testing::Silu8192()},
          {{"p", "q", "r"}, {"s", "t"}}),
      &text);
  std::ofstream(recording) << text;
  auto daemon = StartDaemon(dir);
  Result r = daemon->Client({"submit", recording, "--profile", path, "--write",
                             "--rounds", "3", "--calls", "5"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const std::string written = ReadFile(path);
  INFO(written);
  // IRON's load rules: no undeclared or derived field, a tunable in every
  // entry, no conflicting pair (Profile::FromJson applies them).
  absl::StatusOr<Profile> after = Profile::FromJson(written);
  REQUIRE(after.ok());
  for (const v1::ProfileEntry& entry : after->proto().entries()) {
    CHECK(IronEntryCheck(entry).empty());
    if (FindFamily(entry.operator_class()) != nullptr) {
      CHECK(entry.tunables_size() > 0);
    }
  }
  // Order kept: the given entries stay where they were; new ones follow.
  REQUIRE(after->size() > before->size());
  for (int i = 0; i < before->size(); ++i) {
    CHECK(SameIdentity(before->proto().entries(i), after->proto().entries(i)));
  }
  // The unknown class is kept verbatim, the GEMM the example does not call
  // unchanged.
  CHECK_THAT(written, Catch::Contains("  {\"operator\": \"FusedNewThing\", "
                                      "\"rows\": 4, \"flavour\": \"x\", "
                                      "\"chunk\": 2},\n"));
  CHECK_THAT(written,
             Catch::StartsWith("{\"entries\": [\n  {\"operator\": \"GEMM\", "
                               "\"M\": 512, \"K\": 512, \"N\": 512, "
                               "\"tile_m\": 64, \"tile_n\": 64},\n"));
  // Saved as IRON saves: loading and saving it again gives the same bytes.
  CHECK(after->ToJson() == written);
}

TEST_CASE("e2e: IRON's cost files import, with counts and reasons",
          "[e2e][iron]") {
  const std::string dir = TempDir("iron-costs");
  const std::string fixtures = kIronSource + "/tests/e2e/testdata/iron-costs";
  auto daemon = StartDaemon(dir);
  Result tree = daemon->Client({"cache", "import", fixtures + "/costs"}, 60);
  INFO(tree.out << tree.err);
  REQUIRE(tree.code == 0);
  CHECK_THAT(tree.out, Catch::StartsWith("imported 2 IRON figures from 8 "
                                         "files in " +
                                         fixtures + "/costs"));
  CHECK_THAT(tree.out, Catch::Contains("; skipped 6\n"));
  CHECK_THAT(tree.out, Catch::Contains("an IRON Calibration"));
  CHECK_THAT(tree.out, Catch::Contains("an IRON Accuracy"));
  CHECK_THAT(tree.out, Catch::Contains("not a .json file"));
  CHECK_THAT(tree.out, Catch::Contains("not-a-key.json: its name is not"));
  CHECK_THAT(tree.out, Catch::Contains("power mode \"Turbo\""));

  const std::string table = fixtures + "/tables/llama-decode-npu2.json";
  Result one = daemon->Client({"cache", "import", table}, 60);
  INFO(one.out << one.err);
  REQUIRE(one.code == 0);
  CHECK_THAT(one.out, Catch::StartsWith("imported 3 IRON figures from 1 file"));
  CHECK_THAT(one.out, Catch::Contains("; skipped 5\n"));
  CHECK_THAT(one.out, Catch::Contains("[speedup] not a StepCost's field"));
  CHECK_THAT(one.out, Catch::Contains("calibrations[GEMV_M2048"));
  CHECK_THAT(one.out, Catch::Contains("packs[RMSNorm_rows1"));

  // The figures are in the cache: stats count them, an export lists them.
  Result again = daemon->Client({"cache", "import", table}, 60);
  REQUIRE(again.code == 0);
  CHECK_THAT(again.out, Catch::StartsWith("imported 0 IRON figures"));
  CHECK_THAT(again.out, Catch::Contains("already present, kept"));
  Result exported = daemon->Client({"cache", "export"}, 60);
  REQUIRE(exported.code == 0);
  CHECK_THAT(exported.out,
             Catch::Contains("fused/GEMV_M2048_K8192_num_aie_columns8"));
  CHECK_THAT(exported.out, Catch::Contains("0a1b2c3d4e5f60718293a4b5c6d7e8f9"));
}

}  // namespace
}  // namespace irontune::e2e

// irontuned and --device xrt:N: built without XRT, and built against the
// test double of XRT (irontuned-fake-xrt), as real subprocesses.
#include <string>

#include "catch2/catch.hpp"
#include "tests/testing/process.h"

namespace irontune {
namespace {

const std::string kData = IRONTUNE_SOURCE_DIR "/tests/xrt/testdata/";

e2e::Result RunDaemon(const std::string& binary,
                      const std::vector<std::string>& flags,
                      const std::vector<std::string>& env = {}) {
  const std::string dir = e2e::TempDir("xrt-daemon");
  std::vector<std::string> argv = {binary, "--state-dir", dir + "/state",
                                   "--listen", "unix:" + dir + "/s.sock"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return e2e::Run(argv, dir, 60, env);
}

TEST_CASE("an irontuned without XRT says so and names its simulated NPUs",
          "[xrt][daemon]") {
#if IRONTUNE_BUILT_WITH_XRT
  SUCCEED("this irontuned was built with XRT");
#else
  const e2e::Result r = RunDaemon(IRONTUNE_IRONTUNED, {"--device", "xrt:0"});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("XRT was not found when this irontuned "
                                    "was built"));
  CHECK_THAT(r.err, Catch::Contains("docs/npu-box.md"));
  CHECK_THAT(r.err, Catch::Contains("sim:npu2, sim:npu1"));
#endif
}

TEST_CASE(
    "irontuned with the XRT backend opens xrt:0 and asks for a "
    "builder",
    "[xrt][daemon]") {
  const e2e::Result r =
      RunDaemon(IRONTUNE_IRONTUNED_FAKE_XRT,
                {"--device", "xrt:0", "--xrt-smi", IRONTUNE_FAKE_XRT_SMI});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("xrt:0: NPU Strix (npu2, power mode "
                                    "default)"));
  CHECK_THAT(r.err, Catch::Contains("--device xrt:0 needs --builder-command"));
}

TEST_CASE("irontuned refuses a --builder-env it never passes, flag or key",
          "[xrt][daemon]") {
  const std::vector<std::string> device = {
      "--device",          "xrt:0",
      "--xrt-smi",         IRONTUNE_FAKE_XRT_SMI,
      "--builder-command", IRONTUNE_SOURCE_DIR "/tests/fakes/fake-builder"};
  std::vector<std::string> flags = device;
  flags.insert(flags.end(), {"--builder-env", "XILINX_XRT", "--builder-env",
                             "NOTIFY_SOCKET"});
  e2e::Result r = RunDaemon(IRONTUNE_IRONTUNED_FAKE_XRT, flags);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot start: INVALID_ARGUMENT: "
                                    "--builder-env \"NOTIFY_SOCKET\": "
                                    "irontuned never passes NOTIFY_SOCKET"));
  const std::string dir = e2e::TempDir("xrt-daemon-env");
  const std::string config = dir + "/irontuned.conf";
  e2e::Run(
      {"/bin/sh", "-c",
       "echo 'builder-env = [\"PYTHONPATH\", \"IRONTUNE_TOKEN\"]' > " + config},
      dir);
  flags = device;
  flags.insert(flags.end(), {"--config", config});
  r = RunDaemon(IRONTUNE_IRONTUNED_FAKE_XRT, flags);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("--builder-env \"IRONTUNE_TOKEN\": "
                                    "irontuned never passes"));
}

TEST_CASE(
    "irontuned with the XRT backend reports a missing NPU, a bad "
    "spec and a refused power mode",
    "[xrt][daemon]") {
  const std::string dir = e2e::TempDir("xrt-daemon-script");
  e2e::Run({"/bin/sh", "-c",
            "echo '{\"no_device\": true}' > " + dir + "/script.json"},
           dir);
  e2e::Result r =
      RunDaemon(IRONTUNE_IRONTUNED_FAKE_XRT,
                {"--device", "xrt:0", "--xrt-smi", IRONTUNE_FAKE_XRT_SMI},
                {"IRONTUNE_FAKE_XRT_SCRIPT=" + dir + "/script.json"});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot open NPU 0"));

  r = RunDaemon(IRONTUNE_IRONTUNED_FAKE_XRT, {"--device", "xrt:x"});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("a real NPU is xrt:N"));

  r = RunDaemon(IRONTUNE_IRONTUNED_FAKE_XRT,
                {"--device", "xrt:0", "--xrt-smi", IRONTUNE_FAKE_XRT_SMI,
                 "--power-mode", "turbo"},
                {"IRONTUNE_FAKE_XRT_SMI_PARTITIONS=" + kData +
                 "aie_partitions_two_holders.json"});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("turbo is refused while hardware "
                                    "contexts are active (held by pid 777, "
                                    "4242, 5151)"));

  r = RunDaemon(IRONTUNE_IRONTUNED_FAKE_XRT,
                {"--device", "xrt:0", "--power-mode", "warp"});
  CHECK(r.code == 2);
}

}  // namespace
}  // namespace irontune

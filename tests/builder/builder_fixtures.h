// What the builder tests share: the fake build command, a GEMM request and
// the scripting of the fake through its environment variables.
#ifndef IRONTUNE_TESTS_BUILDER_BUILDER_FIXTURES_H_
#define IRONTUNE_TESTS_BUILDER_BUILDER_FIXTURES_H_

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>

#include "daemon/npu/builder.h"
#include "tests/testing/operator_fixtures.h"
#include "tests/testing/process.h"

namespace irontune::testing {

inline std::string FakeBuilderPath() {
  return std::string(IRONTUNE_SOURCE_DIR) + "/tests/fakes/fake-builder";
}

// A GEMM with one per-call value, for npu2.
inline BuildRequest GemmRequest(
    int64_t tile_m = 64, v1::Packaging packaging = v1::PACKAGING_XCLBIN_CHAIN,
    int steps = 1) {
  BuildRequest r;
  r.op = IronGemm(64, 64, 128, tile_m, 32, 32, 4);
  v1::CallValue* v = r.op.add_values();
  v->set_name("seq_len");
  v->set_symbol("seq_len");
  r.platform.name = "NPU Strix";
  r.platform.generation = "npu2";
  r.platform.columns = 8;
  r.platform.full_elf = true;
  r.packaging = packaging;
  r.steps = steps;
  return r;
}

// Whether process `pid` has ended: it is gone, or a zombie waiting for its
// new parent to reap it.
inline bool EndedNow(int pid) {
  if (::kill(pid, 0) != 0) return true;
  const std::string stat =
      e2e::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
}

// Whether process `pid` ends within a bounded wait: a SIGKILL sent to its
// group is delivered asynchronously, so it may still be running the moment
// the kill returns.
inline bool Gone(int pid) {
  for (int i = 0; i < 200; ++i) {
    if (EndedNow(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

// Sets (or, with "", clears) IRONTUNE_FAKE_BUILDER_<name> for the fake.
inline void ScriptFake(const std::string& name, const std::string& value) {
  const std::string var = "IRONTUNE_FAKE_BUILDER_" + name;
  if (value.empty()) {
    unsetenv(var.c_str());
  } else {
    setenv(var.c_str(), value.c_str(), 1);
  }
}

// Clears every script variable on construction and destruction.
struct FakeScript {
  FakeScript() { Clear(); }
  ~FakeScript() { Clear(); }
  static void Clear() {
    for (const char* n : {"MODE", "REFUSE", "SLEEP", "LOG", "VERSION", "WRONG",
                          "ELF_VALUES", "VALUE_KIND", "KERNEL", "FIT_CHECK"})
      ScriptFake(n, "");
  }
};

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_BUILDER_BUILDER_FIXTURES_H_

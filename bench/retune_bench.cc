// The CI job of docs/ci.md, measured as CI runs it: the example recording
// tuned from its committed profile on a fresh irontuned (a new state dir,
// nothing cached), then tuned again from the profile that wrote on another
// fresh irontuned, under another sim and input seed, with `submit --check`.
// The real irontuned and irontune-client as subprocesses, the simulated
// NPU on its virtual clock, builds costed as scripts/demo costs them.
// Prints figures; never fails on time.
//
//   retune_bench [--pairs N] [--timing demo|default|both] [--first-seed S]
//                [--irontuned PATH] [--client PATH]
//
// Per pair: whether the re-tune left the profile as it was (strict: the
// rule of `--check` before --check-min-gain), whether `--check` at its
// default --check-min-gain passed (its exit code), and every entry that
// moved, with its gain per step and weighted over the model's calls (as a
// share of the model's time per pass). Then the pass rates and the
// entries that moved most often. --timing demo is the demo's
// `--rounds 3 --calls 5`, default IRON's 8 rounds of 50 calls.
// --irontuned and --client run other builds (an older client has no
// --check-min-gain: its --check is the strict rule, and the gated column
// says "-").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/process.h"

namespace irontune {
namespace {

using e2e::DaemonProcess;
using e2e::Result;
using nlohmann::json;

const std::string kExample =
    std::string(IRONTUNE_SOURCE_DIR) + "/examples/llama-3.2-1b.rec";
const std::string kExampleProfile =
    std::string(IRONTUNE_SOURCE_DIR) + "/examples/profiles/npu2.json";

struct Config {
  int pairs = 20;
  bool demo = true;
  bool full = false;  // IRON's default Timing
  int first_seed = 101;
  std::string irontuned = IRONTUNE_IRONTUNED;
  std::string client = IRONTUNE_CLIENT;
};

// One entry the re-tune moved.
struct Moved {
  std::string text;  // "~ NAME  old → new  +g ± n µs a step, ..."
  std::string name;  // "ElementwiseAdd size=2048"
};

struct Pair {
  bool ok = false;  // both tunes finished
  std::string error;
  bool strict_pass = false;
  int check_code = -1;
  bool gated_known = false;  // the client weighed the entries
  bool gated_pass = false;
  double model_us = 0;
  std::vector<Moved> moved;
  double first_s = 0, second_s = 0;          // wall
  double first_npu_s = 0, second_npu_s = 0;  // the NPU's time
};

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

// Runs `submit` of the example on a fresh irontuned seeded `seed` (sim and
// inputs), with `timing` and `flags`; the client's result.
Result TuneOnce(const Config& config, const std::string& dir, int seed,
                const std::vector<std::string>& timing,
                const std::vector<std::string>& flags) {
  const std::string state = dir + "/state-" + std::to_string(seed);
  std::filesystem::create_directories(state);
  const std::string server = "unix:" + state + "/sock";
  DaemonProcess daemon(
      "irontuned",
      e2e::SimDaemonArgv(
          config.irontuned, state, server, "virtual",
          {"--sim-seed", std::to_string(seed), "--sim-build-seconds", "0.02"}),
      state, config.client, server);
  if (!daemon.process().started() || !daemon.Up(30)) {
    return {-1, "", "irontuned did not come up: " + daemon.Log()};
  }
  std::vector<std::string> args = {"submit", kExample, "--seed",
                                   std::to_string(seed)};
  args.insert(args.end(), timing.begin(), timing.end());
  args.insert(args.end(), flags.begin(), flags.end());
  Result r = daemon.Client(args, 6 * 3600);
  daemon.Stop();
  return r;
}

// A Value in the protobuf JSON mapping ({"int_value": "64"}) as text.
std::string ValueText(const json& value) {
  if (!value.is_object() || value.empty()) return value.dump();
  const json& v = value.begin().value();
  return v.is_string() && value.begin().key() != "string_value"
             ? v.get<std::string>()
             : v.dump();
}

std::string FieldsChange(const json& before, const json& after) {
  std::vector<std::string> parts;
  for (const json& a : after) {
    std::string old = "-";
    for (const json& b : before) {
      if (b["name"] == a["name"]) old = ValueText(b["value"]);
    }
    if (old != ValueText(a["value"])) {
      parts.push_back(absl::StrCat(a["name"].get<std::string>(), " ", old,
                                   " → ", ValueText(a["value"])));
    }
  }
  return absl::StrJoin(parts, ", ");
}

std::string EntryNameOf(const json& entry) {
  std::string out = entry["operator_class"].get<std::string>();
  for (const json& d : entry["dims"]) {
    absl::StrAppend(&out, " ", d["name"].get<std::string>(), "=",
                    ValueText(d["value"]));
  }
  return out;
}

// "+g ± n µs a step[, +G ± N µs a pass (P% of the model)]".
std::string GainText(const json& g, double model_us) {
  std::string out =
      g.value("has_gain", false)
          ? absl::StrFormat("%+.2f ± %.2f µs a step", g.value("gain_us", 0.0),
                            g.value("noise_us", 0.0))
          : "gain unknown";
  if (g.value("has_weighted_gain", false)) {
    const double w = g.value("weighted_gain_us", 0.0);
    absl::StrAppendFormat(&out, ", %+.2f ± %.2f µs a pass", w,
                          g.value("weighted_noise_us", 0.0));
    if (model_us > 0) {
      absl::StrAppendFormat(&out, " (%.4f%% of the model)", 100 * w / model_us);
    }
  }
  return out;
}

// The entries the re-tune's diff lists as moved.
std::vector<Moved> MovedEntries(const json& diff, double model_us) {
  std::vector<Moved> out;
  for (const json& c : diff.value("changed", json::array())) {
    const std::string name = EntryNameOf(c);
    out.push_back(
        {absl::StrCat("~ ", name, "  ",
                      FieldsChange(c["old_tunables"], c["new_tunables"]), "  ",
                      GainText(c, model_us)),
         name});
  }
  const json added = diff.value("added", json::array());
  const json gains = diff.value("added_gains", json::array());
  for (size_t i = 0; i < added.size(); ++i) {
    const std::string name = EntryNameOf(added[i]);
    out.push_back({absl::StrCat("+ ", name, "  ",
                                i < gains.size() ? GainText(gains[i], model_us)
                                                 : "gain unknown"),
                   name});
  }
  for (const json& r : diff.value("removed", json::array())) {
    out.push_back({"- " + EntryNameOf(r), EntryNameOf(r)});
  }
  return out;
}

Pair RunPair(const Config& config, const std::vector<std::string>& timing,
             int seed) {
  Pair pair;
  const std::string dir = e2e::TempDir("retune_bench");
  const std::string profile = dir + "/npu2.json";
  std::filesystem::copy_file(kExampleProfile, profile);
  auto t0 = std::chrono::steady_clock::now();
  Result first = TuneOnce(config, dir, seed, timing,
                          {"--profile", profile, "--write", "--json"});
  pair.first_s = Since(t0);
  t0 = std::chrono::steady_clock::now();
  Result second = first.code != 0
                      ? first
                      : TuneOnce(config, dir, seed + 1, timing,
                                 {"--profile", profile, "--check", "--json"});
  pair.second_s = Since(t0);
  std::filesystem::remove_all(dir);
  if (first.code != 0 || (second.code != 0 && second.code != 3)) {
    pair.error = first.code != 0 ? first.err : second.err;
    return pair;
  }
  const json doc = json::parse(second.out, nullptr, false);
  const json first_doc = json::parse(first.out, nullptr, false);
  if (doc.is_discarded() || first_doc.is_discarded()) {
    const Result& bad = first_doc.is_discarded() ? first : second;
    pair.error = absl::StrCat(first_doc.is_discarded() ? "the tune"
                                                       : "the "
                                                         "re-tune",
                              " printed no JSON: ", bad.out.substr(0, 200),
                              bad.err.substr(0, 200));
    return pair;
  }
  pair.first_npu_s = first_doc["stats"].value("device_seconds", 0.0);
  pair.second_npu_s = doc["stats"].value("device_seconds", 0.0);
  pair.ok = true;
  pair.check_code = second.code;
  pair.strict_pass = !doc.value("changed", true);
  pair.model_us = doc["diff"].value("model_time_us", 0.0);
  if (doc.contains("check") && doc["check"].value("weighed", false)) {
    pair.gated_known = true;
    pair.gated_pass = second.code == 0;
  }
  pair.moved = MovedEntries(doc["diff"], pair.model_us);
  return pair;
}

void PrintPair(int k, int seed, const Pair& p) {
  if (!p.ok) {
    std::printf("pair %2d  seeds %d/%d  ERROR %s\n", k, seed, seed + 1,
                p.error.substr(0, 300).c_str());
    return;
  }
  std::printf(
      "pair %2d  seeds %d/%d  strict %s  --check %s  (exit %d; tunes %.0f s "
      "and %.0f s wall, %.0f s and %.0f s on the NPU)\n",
      k, seed, seed + 1, p.strict_pass ? "pass" : "FAIL",
      !p.gated_known ? "-   "
      : p.gated_pass ? "pass"
                     : "FAIL",
      p.check_code, p.first_s, p.second_s, p.first_npu_s, p.second_npu_s);
  for (const Moved& m : p.moved) std::printf("    %s\n", m.text.c_str());
  std::fflush(stdout);
}

void RunTiming(const Config& config, const std::string& label,
               const std::vector<std::string>& timing) {
  std::printf("\n%s (%s): %d pairs\n", label.c_str(),
              timing.empty() ? "IRON's default Timing"
                             : absl::StrJoin(timing, " ").c_str(),
              config.pairs);
  int done = 0, strict = 0, gated = 0, gated_known = 0;
  double model_us = 0;
  std::map<std::string, int> moved_by_entry;
  std::vector<double> seconds, npu;
  for (int k = 1; k <= config.pairs; ++k) {
    const int seed = config.first_seed + 2 * (k - 1);
    const Pair p = RunPair(config, timing, seed);
    PrintPair(k, seed, p);
    if (!p.ok) continue;
    ++done;
    strict += p.strict_pass;
    gated_known += p.gated_known;
    gated += p.gated_known && p.gated_pass;
    model_us = std::max(model_us, p.model_us);
    seconds.push_back(p.first_s);
    seconds.push_back(p.second_s);
    npu.push_back(p.first_npu_s);
    npu.push_back(p.second_npu_s);
    for (const Moved& m : p.moved) ++moved_by_entry[m.name];
  }
  std::sort(seconds.begin(), seconds.end());
  std::sort(npu.begin(), npu.end());
  std::printf(
      "%s: %d of %d pairs ran; strict (the profile unchanged) %d/%d "
      "(%.0f%%)",
      label.c_str(), done, config.pairs, strict, done,
      done ? 100.0 * strict / done : 0.0);
  if (gated_known > 0) {
    std::printf("; --check at the default --check-min-gain %d/%d (%.0f%%)",
                gated, gated_known, 100.0 * gated / gated_known);
  }
  std::printf("\n");
  if (model_us > 0)
    std::printf("  the model: %.2f ms a pass\n", model_us / 1e3);
  if (!seconds.empty()) {
    std::printf(
        "  per tune: wall median %.0f s, longest %.0f s; NPU median %.0f s, "
        "longest %.0f s\n",
        seconds[seconds.size() / 2], seconds.back(), npu[npu.size() / 2],
        npu.back());
  }
  for (const auto& [name, n] : moved_by_entry) {
    std::printf("  moved in %2d pairs: %s\n", n, name.c_str());
  }
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--pairs" && more) {
      config.pairs = std::atoi(argv[++i]);
    } else if (a == "--first-seed" && more) {
      config.first_seed = std::atoi(argv[++i]);
    } else if (a == "--timing" && more) {
      const std::string t = argv[++i];
      config.demo = t == "demo" || t == "both";
      config.full = t == "default" || t == "both";
    } else if (a == "--irontuned" && more) {
      config.irontuned = argv[++i];
    } else if (a == "--client" && more) {
      config.client = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: retune_bench [--pairs N] [--timing "
                   "demo|default|both] [--first-seed S] [--irontuned PATH] "
                   "[--client PATH]\n");
      return 2;
    }
  }
  std::printf("retune_bench: %s, %s\n", config.irontuned.c_str(),
              config.client.c_str());
  if (config.demo) {
    RunTiming(config, "demo", {"--rounds", "3", "--calls", "5"});
  }
  if (config.full) RunTiming(config, "default", {});
  return 0;
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) { return irontune::Main(argc, argv); }

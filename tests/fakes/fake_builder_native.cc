// fake-builder-native: tests/fakes/fake-builder's "good" builds, compiled.
// It speaks the same builder protocol (docs/builder-protocol.md) and writes
// the same fake XRT design files (tests/fakes/xrt/README.md), so a test
// that builds a whole model's settings (the example recording: about a
// thousand designs, each built twice) does not start a python3 per build.
//
// Scripted by IRONTUNE_FAKE_BUILDER_REFUSE, _WRONG and _ELF_VALUES as the
// python fake is; every other build is good. `--version` prints
// "fake-builder-native 1".
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace {

using nlohmann::json;

std::string Env(const std::string& name, const std::string& fallback = "") {
  const char* v = std::getenv(("IRONTUNE_FAKE_BUILDER_" + name).c_str());
  return v != nullptr ? v : fallback;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A tunable's value as python's str() writes it, lowercased.
std::string Text(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_string()) return Lower(v.get<std::string>());
  return Lower(v.dump());
}

// The rule "name=value" of IRONTUNE_FAKE_BUILDER_<variable> that the
// request's tunables match.
std::optional<std::string> Scripted(const std::string& variable,
                                    const json& request) {
  const json& tunables = request["operator"]["tunables"];
  std::stringstream rules(Env(variable));
  std::string rule;
  while (std::getline(rules, rule, ',')) {
    const size_t eq = rule.find('=');
    if (rule.empty() || eq == std::string::npos) continue;
    const std::string name = rule.substr(0, eq);
    if (tunables.contains(name) &&
        Text(tunables[name]) == Lower(rule.substr(eq + 1))) {
      return rule;
    }
  }
  return std::nullopt;
}

double NBytes(const json& buf) {
  static const std::map<std::string, double> kSize = {
      {"bf16", 2}, {"f16", 2}, {"f32", 4}, {"i8", 1},  {"u8", 1},
      {"i16", 2},  {"u16", 2}, {"i32", 4}, {"u32", 4}, {"i64", 8}};
  double n = 1;
  for (const json& d : buf["shape"]) n *= d.get<double>();
  const auto it = kSize.find(buf["dtype"].get<std::string>());
  return n * (it == kSize.end() ? 1 : it->second);
}

double Efficiency(const json& tunables) {
  double eff = 1;
  for (const auto& [name, v] : tunables.items()) {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) continue;
    eff *= 1 / (1 + 0.15 * std::abs(std::log2(v.get<double>()) - 6));
  }
  return eff;
}

double RunUs(const json& request) {
  const json& op = request["operator"];
  const json& params = op["params"];
  double moved = 0;
  for (const json& b : op["buffers"]) moved += NBytes(b);
  double macs = moved;
  if (params.contains("M") && params.contains("K") && params.contains("N") &&
      params["M"].is_number_integer() && params["K"].is_number_integer() &&
      params["N"].is_number_integer()) {
    macs = params["M"].get<double>() * params["K"].get<double>() *
           params["N"].get<double>();
  }
  const bool npu1 = request["device"]["generation"] == "npu1";
  const double bandwidth = npu1 ? 40e3 : 60e3;
  const double rate = npu1 ? 4e6 : 25e6;
  const double one =
      std::max(moved / bandwidth, macs / rate) / Efficiency(op["tunables"]);
  return std::round((4 + one * request["steps"].get<double>()) * 1000) / 1000;
}

json Buffers(const json& request) {
  const json& bufs = request["operator"]["buffers"];
  const int steps =
      request["distinct"].get<bool>() ? request["steps"].get<int>() : 1;
  std::map<std::string, int> count;
  for (const json& b : bufs) ++count[b["name"].get<std::string>()];
  json out = json::array();
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < bufs.size(); ++i) {
      const std::string name = bufs[i]["name"];
      const bool unique = !name.empty() && count[name] == 1;
      out.push_back({{"name", "s" + std::to_string(s) + "." +
                                  (unique ? name : std::to_string(i))},
                     {"step", s},
                     {"op_buffer", i},
                     {"nbytes", static_cast<uint64_t>(NBytes(bufs[i]))},
                     {"fills", bufs[i]["fills"]},
                     {"drains", bufs[i]["drains"]}});
    }
  }
  return out;
}

std::string Io(const json& b) {
  const bool fills = b["fills"].get<bool>();
  const bool drains = b["drains"].get<bool>();
  if (fills && drains) return "inout";
  return fills ? "in" : drains ? "out" : "none";
}

json Symbols(const json& request, size_t nbuffers, bool elf) {
  std::set<std::string> names;
  for (const json& v : request["operator"]["values"]) names.insert(v["symbol"]);
  json table = json::array();
  int i = 0;
  for (const std::string& s : names) {
    if (!elf) {
      table.push_back({{"name", s}, {"insts_word", 16 + i}});
    } else if (Env("ELF_VALUES", "scratchpad") == "arg") {
      table.push_back({{"name", s}, {"arg", nbuffers + i}});
    } else {
      table.push_back({{"name", s}, {"scratchpad_word", 1 + i}});
    }
    ++i;
  }
  return table;
}

json Build(const json& request) {
  const std::string dir = request["output_dir"];
  const std::string recipe = request["recipe_hash"];
  const bool elf = request["packaging"] == "full_elf";
  const json buffers = Buffers(request);
  const json symbols = Symbols(request, buffers.size(), elf);
  json io = json::array();
  for (const json& b : request["operator"]["buffers"]) io.push_back(Io(b));
  json design = {{"fake_xrt", 1},
                 {"uuid", recipe.substr(0, 32)},
                 {"kernel", elf ? "main:sequence" : "MLIR_AIE"},
                 {"run_us", RunUs(request)},
                 {"io", io},
                 {"wrong_output", Scripted("WRONG", request).has_value()}};
  if (elf && Env("ELF_VALUES", "scratchpad") != "arg" && !symbols.empty()) {
    design["scratchpad_words"] = 8 + symbols.size();
  }
  json files;
  if (elf) {
    files = {{"elf", "design.elf"}};
    std::ofstream(dir + "/design.elf") << design.dump();
  } else {
    files = {{"xclbin", "design.xclbin"},
             {"kernel", "MLIR_AIE"},
             {"insts", "insts.bin"}};
    std::ofstream(dir + "/design.xclbin") << design.dump();
    std::string insts(1024, '\0');
    for (size_t i = 0; i < insts.size(); ++i) insts[i] = static_cast<char>(i);
    std::ofstream(dir + "/insts.bin", std::ios::binary) << insts;
  }
  return {{"protocol", 1},
          {"status", "built"},
          {"reason", ""},
          {"recipe_hash", recipe},
          {"artifact_hash", std::string(recipe.rbegin(), recipe.rend())},
          {"packaging", request["packaging"]},
          {"files", files},
          {"buffers", buffers},
          {"symbols", symbols}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::cout << "fake-builder-native 1\n";
    return 0;
  }
  try {
    const json request = json::parse(std::cin);
    json reply;
    if (const auto rule = Scripted("REFUSE", request)) {
      reply = {{"protocol", 1},
               {"status", "refused"},
               {"reason", "fake: " + *rule + " does not fit in L1"}};
    } else {
      reply = Build(request);
    }
    std::cout << reply.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fake-builder-native: " << e.what() << "\n";
    return 1;
  }
}

// fake-builder-native: tests/fakes/fake-builder's "good" builds, compiled.
// It speaks the same builder protocol (docs/builder-protocol.md) and writes
// the same fake XRT design files (tests/fakes/xrt/README.md), so a test
// that builds a whole model's settings (the example recording: about a
// thousand designs, each built twice) does not start a python3 per build.
//
// Scripted by IRONTUNE_FAKE_BUILDER_REFUSE, _WRONG, _ELF_VALUES,
// _VALUE_KIND and _KERNEL as the python fake is; every other build is good.
// `--version` prints "fake-builder-native 1".
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

json Symbols(const json& request, bool elf) {
  std::set<std::string> names;
  for (const json& v : request["operator"]["values"]) names.insert(v["symbol"]);
  json table = json::array();
  int i = 0;
  for (const std::string& s : names) {
    if (!elf) {
      table.push_back({{"name", s}, {"insts_word", 16 + i}});
    } else if (Env("ELF_VALUES", "scratchpad") == "arg") {
      table.push_back({{"name", s}, {"arg", 3 + i}});
    } else {
      table.push_back({{"name", s},
                       {"scratchpad_word", 1 + i},
                       {"kind", Env("VALUE_KIND", "core")}});
    }
    ++i;
  }
  return table;
}

const char* const kArenas[] = {"input", "output", "scratch"};

// IRON's fused layout (the python fake's layout()): each buffer at the next
// 4-byte aligned offset of its arena; sets each buffer's arena and offset.
json Layout(json& buffers) {
  uint64_t size[3] = {0, 0, 0};
  for (json& b : buffers) {
    const int a = b["drains"].get<bool>() ? 1 : b["fills"].get<bool>() ? 0 : 2;
    b["arena"] = kArenas[a];
    b["offset"] = size[a];
    size[a] += (b["nbytes"].get<uint64_t>() + 3) / 4 * 4;
  }
  json arenas = json::array();
  for (int a = 0; a < 3; ++a)
    arenas.push_back({{"name", kArenas[a]}, {"nbytes", size[a]}});
  return arenas;
}

// The fake design files (tests/fakes/xrt/README.md): an xclbin is
// "xclbin2\0" then JSON; an ELF a 64-byte ELF32 header (OS/ABI 69) then JSON.
std::string DesignFile(const json& design, bool elf) {
  std::string header;
  if (elf) {
    header.assign(64, '\0');
    header.replace(0, 8,
                   std::string("\x7f"
                               "ELF\x01\x01\x01\x45",
                               8));
  } else {
    header.assign("xclbin2", 8);
  }
  return header + design.dump();
}

json Design(const json& request, json& buffers, const json& symbols, bool elf,
            json* arenas) {
  const std::string recipe = request["recipe_hash"];
  json design = {
      {"uuid", recipe.substr(0, 32)},
      {"kernel", elf ? "main:sequence" : "f" + recipe.substr(0, 8) + "_op0"},
      {"run_us", RunUs(request)},
      {"wrong_output", Scripted("WRONG", request).has_value()}};
  const json& ops = request["operator"]["buffers"];
  if (elf) {
    *arenas = Layout(buffers);
    json views = json::array();
    for (const json& b : buffers) {
      const std::string a = b["arena"];
      views.push_back({{"arena", a == "input"    ? 0
                                 : a == "output" ? 1
                                                 : 2},
                       {"offset", b["offset"]},
                       {"nbytes", b["nbytes"]},
                       {"io", Io(ops[b["op_buffer"].get<size_t>()])}});
    }
    design["args"] = arenas->size();
    design["views"] = views;
  } else {
    json io = json::array();
    for (const json& b : ops) io.push_back(Io(b));
    design["io"] = io;
  }
  bool scratchpad = false;
  for (const json& s : symbols) scratchpad |= s.contains("scratchpad_word");
  if (scratchpad) design["scratchpad_words"] = 8 + symbols.size();
  return design;
}

json Build(const json& request) {
  const std::string dir = request["output_dir"];
  const std::string recipe = request["recipe_hash"];
  const bool elf = request["packaging"] == "full_elf";
  json buffers = Buffers(request);
  const json symbols = Symbols(request, elf);
  json arenas;
  const json design = Design(request, buffers, symbols, elf, &arenas);
  json files;
  if (elf) {
    files = {{"elf", "design.elf"}};
    std::ofstream(dir + "/design.elf", std::ios::binary)
        << DesignFile(design, true);
  } else {
    files = {{"xclbin", "design.xclbin"}, {"insts", "insts.bin"}};
    if (Env("KERNEL") != "omit") files["kernel"] = design["kernel"];
    std::ofstream(dir + "/design.xclbin", std::ios::binary)
        << DesignFile(design, false);
    std::string insts(1024, '\0');
    for (size_t i = 0; i < insts.size(); ++i) insts[i] = static_cast<char>(i);
    std::ofstream(dir + "/insts.bin", std::ios::binary) << insts;
  }
  json reply = {{"protocol", 1},
                {"status", "built"},
                {"reason", ""},
                {"recipe_hash", recipe},
                {"artifact_hash", std::string(recipe.rbegin(), recipe.rend())},
                {"packaging", request["packaging"]},
                {"files", files},
                {"buffers", buffers},
                {"symbols", symbols}};
  if (elf) reply["arenas"] = arenas;
  return reply;
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

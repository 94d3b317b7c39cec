#include "daemon/tune/kernel_cycles.h"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

std::optional<int64_t> IntParam(const v1::Operator& op, std::string_view name) {
  for (const v1::Param& p : op.params()) {
    if (p.name() == name && p.value().has_int_value()) {
      return p.value().int_value();
    }
  }
  return std::nullopt;
}

std::optional<int64_t> IntTunable(const v1::Operator& op,
                                  std::string_view name) {
  for (const v1::Tunable& t : op.tunables()) {
    if (t.name() == name && t.value().has_int_value()) {
      return t.value().int_value();
    }
  }
  return std::nullopt;
}

// REQUIRES: a > 0, b > 0 (no overflow).
int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

// "line L, column C" of byte offset `byte` (from 1, as nlohmann counts) of
// `text`.
std::string Where(std::string_view text, size_t byte) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return absl::StrCat("line ", line, ", column ", column);
}

// `text` as JSON; InvalidArgument naming where it stops being JSON.
absl::StatusOr<nlohmann::json> ParseJson(std::string_view text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("not JSON at ", Where(text, e.byte)));
  }
}

}  // namespace

absl::StatusOr<KernelCycles> ParseKernelCycles(std::string_view text) {
  absl::StatusOr<nlohmann::json> parsed = ParseJson(text);
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& doc = *parsed;
  if (!doc.is_object()) {
    return absl::InvalidArgumentError("the top level is not an object");
  }
  auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_number_integer() ||
      schema->get<int64_t>() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "schema: ", schema == doc.end() ? "missing" : schema->dump(),
        ", not 1"));
  }
  const nlohmann::json empty = nlohmann::json::object();
  auto builds_it = doc.find("builds");
  auto rows_it = doc.find("rows");
  const nlohmann::json& builds = builds_it == doc.end() ? empty : *builds_it;
  const nlohmann::json& rows = rows_it == doc.end() ? empty : *rows_it;
  if (!builds.is_object() || !rows.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        builds.is_object() ? "rows" : "builds", ": not an object of cases"));
  }
  KernelCycles out;
  for (const auto& [name, key] : builds.items()) {
    if (!key.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("builds.", name, ": not a string"));
    }
    auto row = rows.find(name);
    if (row == rows.end() || !row->is_object()) continue;
    auto cycles = row->find("cycles");
    if (cycles == row->end()) continue;
    const nlohmann::json* value =
        cycles->is_object() && cycles->contains("value") ? &(*cycles)["value"]
                                                         : nullptr;
    if (value == nullptr || !value->is_number_integer() ||
        value->get<int64_t>() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("rows.", name, ".cycles.value: not a positive integer"));
    }
    out.insert_or_assign(key.get<std::string>(), value->get<int64_t>());
  }
  return out;
}

KernelCycles LoadKernelCycles(
    const std::string& path,
    const std::function<void(const std::string&)>& log) {
  auto fail = [&](const std::string& why) {
    const std::string line = absl::StrCat(
        "no kernel cycles from ", path, ": ", why,
        "; every setting is timed (docs/search.md, \"Bound skipping\")");
    spdlog::warn("tune: {}", line);
    if (log) log(line);
    return KernelCycles();
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<KernelCycles> cycles = ParseKernelCycles(text.str());
  if (!cycles.ok()) return fail(std::string(cycles.status().message()));
  return *std::move(cycles);
}

std::optional<std::string> GemmRecipeKey(const v1::Operator& op,
                                         std::string_view generation) {
  if (op.class_name() != "GEMM") return std::nullopt;
  const auto m = IntTunable(op, "tile_m");
  const auto k = IntTunable(op, "tile_k");
  const auto n = IntTunable(op, "tile_n");
  if (!m || !k || !n) return std::nullopt;
  return absl::StrCat("matmul_bf16_", *m, "x", *k, "x", *n, "_",
                      std::string(generation));
}

std::optional<int64_t> GemmMatmulCalls(const v1::Operator& op,
                                       const CallValues& values, int columns) {
  std::optional<int64_t> m = IntParam(op, "M");
  for (const v1::CallValue& v : op.values()) {
    auto it = values.find(v.name());
    if (v.bounds() == "M" && it != values.end()) m = it->second;
  }
  const auto k = IntParam(op, "K");
  const auto n = IntParam(op, "N");
  const auto tm = IntTunable(op, "tile_m");
  const auto tk = IntTunable(op, "tile_k");
  const auto tn = IntTunable(op, "tile_n");
  const int64_t cols = IntTunable(op, "num_aie_columns").value_or(columns);
  if (!m || !k || !n || !tm || !tk || !tn) return std::nullopt;
  if (*m <= 0 || *k <= 0 || *n <= 0 || *tm <= 0 || *tk <= 0 || *tn <= 0 ||
      cols <= 0) {
    return std::nullopt;
  }
  // Hostile params may overflow the product: nullopt then.
  // ceil(a / (b c)) == ceil(ceil(a / b) / c) for positive integers.
  __int128 calls =
      static_cast<__int128>(CeilDiv(CeilDiv(*m, *tm), kGemmCoreRows)) *
      CeilDiv(CeilDiv(*n, *tn), cols);
  if (calls > INT64_MAX) return std::nullopt;
  calls *= CeilDiv(*k, *tk);
  if (calls > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(calls);
}

std::optional<double> LeastUs(const v1::Operator& op, const CallValues& values,
                              const KernelCycles& cycles,
                              std::string_view generation, int columns,
                              double core_mhz) {
  if (core_mhz <= 0) return std::nullopt;
  const std::optional<std::string> key = GemmRecipeKey(op, generation);
  if (!key) return std::nullopt;
  auto per_call = cycles.find(*key);
  if (per_call == cycles.end()) return std::nullopt;
  const std::optional<int64_t> calls = GemmMatmulCalls(op, values, columns);
  if (!calls) return std::nullopt;
  return static_cast<double>(*calls) * static_cast<double>(per_call->second) /
         (core_mhz * kClockHeadroom);
}

}  // namespace irontune

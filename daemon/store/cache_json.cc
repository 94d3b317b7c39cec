#include "daemon/store/cache_json.h"

#include <google/protobuf/util/json_util.h>

#include <array>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace irontune {
namespace {

using nlohmann::json;

// Debian's Abseil has its own string_view type, not std::string_view.
absl::string_view AsAbsl(std::string_view s) { return {s.data(), s.size()}; }

constexpr std::array<std::string_view, 8> kIronFields = {
    "t_step_us", "round_us", "output",           "run",
    "pmode",     "calls",    "default_round_us", "measured"};

absl::Status ReadRounds(const json& j, std::string_view name,
                        google::protobuf::RepeatedField<double>* out) {
  const json& rounds = j.at(std::string(name));
  if (!rounds.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(AsAbsl(name), ": not a list"));
  }
  for (const json& round : rounds) {
    if (!round.is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat(AsAbsl(name), ": holds a non-number"));
    }
    out->Add(round.get<double>());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadString(const json& j, std::string_view name) {
  const json& value = j.at(std::string(name));
  if (!value.is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(AsAbsl(name), ": not a string"));
  }
  return value.get<std::string>();
}

// One export line. Bytes that are not UTF-8 are replaced rather than
// thrown on.
std::string DumpLine(const json& line) {
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<v1::Measurement> ParseIronCost(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("not JSON");
  if (!j.is_object()) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  for (std::string_view field : kIronFields) {
    if (!j.contains(std::string(field))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "no field ", AsAbsl(field), " (not an IRON Measurement)"));
    }
  }
  if (j.size() != kIronFields.size()) {
    for (const auto& [name, value] : j.items()) {
      bool known = false;
      for (std::string_view field : kIronFields) known |= field == name;
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat("field ", name, " is not an IRON Measurement's"));
      }
    }
  }

  v1::Measurement m;
  const json& t_step = j.at("t_step_us");
  if (!t_step.is_number()) {
    return absl::InvalidArgumentError("t_step_us: not a number");
  }
  m.set_t_step_us(t_step.get<double>());
  absl::Status status = ReadRounds(j, "round_us", m.mutable_round_us());
  if (!status.ok()) return status;
  status = ReadRounds(j, "default_round_us", m.mutable_default_round_us());
  if (!status.ok()) return status;
  const json& calls = j.at("calls");
  if (!calls.is_number_unsigned() ||
      calls.get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError("calls: not a count");
  }
  m.set_calls(calls.get<uint32_t>());
  for (auto [name, setter] :
       {std::pair<std::string_view,
                  void (v1::Measurement::*)(const std::string&)>{
            "output", &v1::Measurement::set_output},
        {"run", &v1::Measurement::set_run},
        {"pmode", &v1::Measurement::set_power_mode},
        {"measured", &v1::Measurement::set_measured}}) {
    absl::StatusOr<std::string> value = ReadString(j, name);
    if (!value.ok()) return value.status();
    (m.*setter)(*value);
  }
  return m;
}

std::string MeasurementToJson(const v1::Measurement& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  // Printing a valid message does not fail.
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

absl::StatusOr<v1::Measurement> MeasurementFromJson(std::string_view json) {
  v1::Measurement m;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &m, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a Measurement: ", status.ToString()));
  }
  return m;
}

std::string FigureLine(std::string_view kind, std::string_view platform,
                       std::string_view power_mode, std::string_view key,
                       std::optional<int64_t> row_schema,
                       const v1::Measurement& m, const FigureTiming& timing) {
  json line = {{"kind", kind},
               {"platform", platform},
               {"power_mode", power_mode},
               {"key", key}};
  if (timing.known()) {
    line["timing"] = {{"rounds", timing.rounds}, {"calls", timing.calls}};
  }
  if (row_schema.has_value()) line["row_schema"] = *row_schema;
  line["measurement"] = json::parse(MeasurementToJson(m), nullptr,
                                    /*allow_exceptions=*/false);
  return DumpLine(line);
}

std::string VerdictLine(std::string_view platform, std::string_view recipe_hash,
                        std::string_view environment, int64_t row_schema,
                        std::string_view verdict) {
  json line = {{"kind", "verdict"},          {"platform", platform},
               {"recipe_hash", recipe_hash}, {"environment", environment},
               {"row_schema", row_schema},   {"verdict", verdict}};
  return DumpLine(line);
}

absl::StatusOr<ImportLine> ImportLine::Parse(std::string_view text,
                                             int number) {
  auto j = std::make_unique<json>(json::parse(text.begin(), text.end(), nullptr,
                                              /*allow_exceptions=*/false));
  if (j->is_discarded() || !j->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", number, ": not a JSON object"));
  }
  return ImportLine(std::move(j), number);
}

ImportLine::ImportLine(std::unique_ptr<json> json, int number)
    : json_(std::move(json)), number_(number) {}
ImportLine::ImportLine(ImportLine&& other) noexcept = default;
ImportLine& ImportLine::operator=(ImportLine&& other) noexcept = default;
ImportLine::~ImportLine() = default;

absl::StatusOr<std::string> ImportLine::String(const char* name) const {
  auto it = json_->find(name);
  if (it == json_->end() || !it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "line ", number_, ": ", name, ": missing or not a string"));
  }
  return it->get<std::string>();
}

absl::StatusOr<int64_t> ImportLine::Int(const char* name) const {
  auto it = json_->find(name);
  if (it == json_->end() || !it->is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "line ", number_, ": ", name, ": missing or not an integer"));
  }
  return it->get<int64_t>();
}

absl::StatusOr<v1::Measurement> ImportLine::Measurement() const {
  auto it = json_->find("measurement");
  if (it == json_->end() || !it->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "line ", number_, ": measurement: missing or not an object"));
  }
  absl::StatusOr<v1::Measurement> m = MeasurementFromJson(it->dump());
  if (!m.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", number_, ": ", m.status().message()));
  }
  return m;
}

absl::StatusOr<FigureTiming> ImportLine::Timing() const {
  auto it = json_->find("timing");
  if (it == json_->end()) return FigureTiming{};
  const std::string where = absl::StrCat("line ", number_, ": timing");
  if (!it->is_object() || it->size() != 2 || !it->contains("rounds") ||
      !it->contains("calls")) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": not an object of rounds and calls"));
  }
  FigureTiming timing;
  for (auto [name, part] :
       {std::pair<const char*, uint32_t*>{"rounds", &timing.rounds},
        {"calls", &timing.calls}}) {
    const json& value = it->at(name);
    if (!value.is_number_unsigned() ||
        value.get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".", name, ": not a count"));
    }
    *part = value.get<uint32_t>();
  }
  return timing;
}

}  // namespace irontune

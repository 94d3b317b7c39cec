#include "client/inspect.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/shape.h"
#include "common/value.h"
#include "common/value_json.h"

namespace irontune {
namespace {

std::string DimsText(const std::vector<v1::Field>& dims) {
  return absl::StrJoin(dims, " ", [](std::string* out, const v1::Field& f) {
    absl::StrAppend(out, f.name(), "=", ValueToString(f.value()));
  });
}

template <typename Map>
std::string ValuesText(const Map& values) {
  std::map<std::string, int64_t> sorted(values.begin(), values.end());
  return absl::StrJoin(sorted, " ", absl::PairFormatter("="));
}

}  // namespace

std::string InspectText(const v1::Calls& calls) {
  std::string out = absl::StrFormat("format %d, %d operators, %d calls\n\n",
                                    calls.format_version(),
                                    calls.operators_size(), calls.calls_size());
  absl::StrAppend(&out, "calls:\n");
  for (int i = 0; i < calls.calls_size(); ++i) {
    const v1::Timed& call = calls.calls(i);
    absl::StrAppendFormat(
        &out, "  [%d] %s: %d steps, %d buffers, values {%s}", i,
        call.recording().name(), call.recording().steps_size(),
        call.recording().buffers_size(), ValuesText(call.values()));
    if (call.points_size() > 0) {
      absl::StrAppendFormat(&out, ", %d points", call.points_size());
    }
    if (call.contents_size() > 0) {
      absl::StrAppendFormat(&out, ", %d given buffers", call.contents_size());
    }
    absl::StrAppend(&out, "\n");
  }
  std::vector<ShapeSummary> shapes = SummarizeShapes(calls);
  absl::StrAppendFormat(&out, "\nshapes (%d):\n", shapes.size());
  int64_t total = 0;
  for (const ShapeSummary& s : shapes) {
    absl::StrAppendFormat(&out, "  %s %s  (%d steps, %d designs)\n",
                          s.class_name, DimsText(s.dims), s.steps,
                          s.operators.size());
    for (const TunableSummary& t : s.tunables) {
      absl::StrAppendFormat(&out, "    %-20s recorded %-8s domain %d%s\n",
                            t.name, ValueToString(t.recorded), t.domain_size,
                            t.pinned ? "  (pinned)" : "");
    }
    if (s.tunables.empty()) {
      absl::StrAppend(&out, "    no tunables\n");
    } else {
      absl::StrAppendFormat(&out, "    setting space %d\n", s.space);
    }
    total = total > INT64_MAX - s.space ? INT64_MAX : total + s.space;
  }
  absl::StrAppendFormat(&out,
                        "\n%d settings over %d shapes, before constraints\n",
                        total, shapes.size());
  return out;
}

std::string InspectJson(const v1::Calls& calls) {
  nlohmann::json doc;
  doc["format_version"] = calls.format_version();
  doc["operators"] = calls.operators_size();
  nlohmann::json jcalls = nlohmann::json::array();
  for (const v1::Timed& call : calls.calls()) {
    nlohmann::json c;
    c["recording"] = call.recording().name();
    c["steps"] = call.recording().steps_size();
    c["buffers"] = call.recording().buffers_size();
    c["values"] = nlohmann::json::object();
    for (const auto& [name, value] : call.values()) c["values"][name] = value;
    c["points"] = call.points_size();
    c["contents"] = call.contents_size();
    jcalls.push_back(std::move(c));
  }
  doc["calls"] = std::move(jcalls);
  nlohmann::json jshapes = nlohmann::json::array();
  for (const ShapeSummary& s : SummarizeShapes(calls)) {
    nlohmann::json js;
    js["class"] = s.class_name;
    js["key"] = s.key;
    js["dims"] = nlohmann::json::object();
    for (const v1::Field& f : s.dims)
      js["dims"][f.name()] = ValueJson(f.value());
    js["operators"] = s.operators;
    js["steps"] = s.steps;
    nlohmann::json jt = nlohmann::json::array();
    for (const TunableSummary& t : s.tunables) {
      jt.push_back({{"name", t.name},
                    {"recorded", ValueJson(t.recorded)},
                    {"domain_size", t.domain_size},
                    {"pinned", t.pinned}});
    }
    js["tunables"] = std::move(jt);
    js["space"] = s.space;
    jshapes.push_back(std::move(js));
  }
  doc["shapes"] = std::move(jshapes);
  return doc.dump(2) + "\n";
}

}  // namespace irontune

#include "client/measure_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/job_flags.h"
#include "client/remote.h"
#include "client/render.h"
#include "client/rpc.h"
#include "common/profile.h"
#include "common/recording.h"
#include "common/shape.h"

namespace irontune {
namespace {

absl::StatusOr<v1::Value> ParseAs(const v1::Value& recorded,
                                  const std::string& name,
                                  const std::string& text) {
  v1::Value out;
  int64_t int_value = 0;
  double double_value = 0;
  switch (recorded.kind_case()) {
    case v1::Value::kIntValue:
      if (!absl::SimpleAtoi(text, &int_value)) break;
      out.set_int_value(int_value);
      return out;
    case v1::Value::kBoolValue:
      if (text != "true" && text != "false") break;
      out.set_bool_value(text == "true");
      return out;
    case v1::Value::kDoubleValue:
      if (!absl::SimpleAtod(text, &double_value)) break;
      out.set_double_value(double_value);
      return out;
    default:
      out.set_string_value(text);
      return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(name, "=", text, ": expected a value like the recorded ",
                   recorded.ShortDebugString()));
}

// What a Measure stream told: its job id and result. Its other events are
// shown on `err` as they arrive.
struct MeasureStream {
  explicit MeasureStream(std::ostream& err) : err(err) {}

  std::ostream& err;
  std::string job_id;
  std::optional<v1::MeasureResult> result;

  bool OnEvent(const v1::MeasureEvent& e) {
    if (!e.job_id().empty()) job_id = e.job_id();
    switch (e.event_case()) {
      case v1::MeasureEvent::kQueued:
        err << "job " << job_id << " queued, " << e.queued().position()
            << " ahead\n";
        break;
      case v1::MeasureEvent::kStarted:
        err << "job " << job_id << " started\n";
        break;
      case v1::MeasureEvent::kLog:
        err << e.log().text() << "\n";
        break;
      case v1::MeasureEvent::kResult:
        result = e.result();
        break;
      default:
        break;
    }
    return true;
  }
};

struct MeasureCommand {
  static constexpr char kName[] = "measure";
  std::string model;
  int op = -1;
  std::string shape;
  std::vector<std::string> settings;
  std::vector<std::string> values;
  bool json = false;
  JobFlags job;

  void Bind(CLI::App& cmd) {
    AddModelArg(cmd, &model);
    cmd.add_option("--op", op, "the operator's index in the recording");
    cmd.add_option("--shape", shape,
                   "the first operator of this shape, as `inspect` prints it");
    cmd.add_option("--setting", settings,
                   "name=value[,name=value...]: a setting to time; tunables "
                   "not named keep their recorded values (repeatable)");
    cmd.add_option("--value", values,
                   "name=integer: a per-call value by the operator's "
                   "CallValue name (repeatable)");
    AddJsonFlag(cmd, &json, "print the MeasureResult as JSON");
    AddJobFlags(cmd, &job);
  }

  int Run(const CommandContext& ctx) const {
    if ((op >= 0) == !shape.empty()) {
      return UsageError(ctx.io.err,
                        "measure needs exactly one of --op and --shape");
    }
    absl::StatusOr<v1::Calls> calls = LoadRecording(model);
    if (!calls.ok()) return Fail(ctx.io.err, calls.status());
    absl::StatusOr<v1::Operator> selected = SelectOperator(*calls, op, shape);
    if (!selected.ok()) return Fail(ctx.io.err, selected.status());
    absl::StatusOr<v1::MeasureRequest> request =
        MakeRequest(*selected, ctx.env);
    if (!request.ok()) return Fail(ctx.io.err, request.status());

    const Daemon daemon(ctx, kMeasureTimeoutS);
    MeasureStream stream(ctx.io.err);
    absl::Status s = daemon.tuner().Measure(
        *request, daemon.timeout_s(),
        [&](const v1::MeasureEvent& e) { return stream.OnEvent(e); });
    if (!s.ok()) return daemon.FailJob(s, stream.job_id);
    if (!stream.result.has_value()) {
      return Fail(ctx.io.err, absl::InternalError(absl::StrCat(
                                  "irontuned ended job ", stream.job_id,
                                  " without a result")));
    }
    if (json) {
      ctx.io.out << MessageJson(*stream.result) << "\n";
    } else {
      ctx.io.out << ShapeKey(*selected) << "\n"
                 << RenderMeasureResult(*stream.result);
    }
    return kExitOk;
  }

  // The request timing `settings` of `selected` with `values`.
  absl::StatusOr<v1::MeasureRequest> MakeRequest(
      const v1::Operator& selected, const ClientEnvironment& env) const {
    v1::MeasureRequest request;
    *request.mutable_operator_() = selected;
    for (const std::string& text : settings) {
      absl::StatusOr<v1::Setting> setting = ParseSetting(selected, text);
      if (!setting.ok()) return setting.status();
      *request.add_settings() = *std::move(setting);
    }
    if (absl::Status s = ParseCallValues(values, request.mutable_values());
        !s.ok()) {
      return s;
    }
    ApplyJobFlags(job, env, &request);
    return request;
  }
};

}  // namespace

absl::StatusOr<v1::Operator> SelectOperator(const v1::Calls& calls, int op,
                                            const std::string& shape) {
  if (op >= 0) {
    if (op >= calls.operators_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--op ", op, ": the recording has ",
                       calls.operators_size(), " operators"));
    }
    return calls.operators(op);
  }
  std::vector<std::string> words =
      absl::StrSplit(shape, ' ', absl::SkipWhitespace());
  for (const v1::Operator& o : calls.operators()) {
    if (words.empty() || o.class_name() != words[0]) continue;
    const std::vector<v1::Field> dims = ShapeDims(o);
    bool all = true;
    for (size_t i = 1; i < words.size() && all; ++i) {
      std::pair<std::string, std::string> kv = absl::StrSplit(words[i], '=');
      all = std::any_of(dims.begin(), dims.end(), [&](const v1::Field& d) {
        return d.name() == kv.first &&
               (ValueToString(d.value()) == kv.second ||
                (d.value().has_string_value() &&
                 d.value().string_value() == kv.second));
      });
    }
    if (all) return o;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--shape '", shape,
      "': no operator of that shape; `irontune-client inspect` lists them"));
}

absl::StatusOr<v1::Setting> ParseSetting(const v1::Operator& op,
                                         const std::string& text) {
  v1::Setting setting;
  for (const v1::Tunable& t : op.tunables()) {
    v1::Field* f = setting.add_tunables();
    f->set_name(t.name());
    *f->mutable_value() = t.value();
  }
  std::set<std::string> seen;
  for (absl::string_view part :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    std::pair<std::string, std::string> kv = absl::StrSplit(part, '=');
    if (part.find('=') == absl::string_view::npos || kv.first.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--setting '", text, "': expected name=value[,name=value...]"));
    }
    if (!seen.insert(kv.first).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--setting '", text, "': ", kv.first, " given twice"));
    }
    v1::Field* field = nullptr;
    for (v1::Field& f : *setting.mutable_tunables()) {
      if (f.name() == kv.first) field = &f;
    }
    if (field == nullptr) {
      std::string names;
      for (const v1::Tunable& t : op.tunables()) {
        absl::StrAppend(&names, names.empty() ? "" : ", ", t.name());
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "--setting '", text, "': ", op.class_name(), " has no tunable ",
          kv.first, " (it has: ", names.empty() ? "none" : names, ")"));
    }
    absl::StatusOr<v1::Value> v = ParseAs(field->value(), kv.first, kv.second);
    if (!v.ok()) return v.status();
    *field->mutable_value() = *std::move(v);
  }
  return setting;
}

absl::Status ParseCallValues(
    const std::vector<std::string>& texts,
    google::protobuf::Map<std::string, int64_t>* values) {
  for (const std::string& text : texts) {
    size_t eq = text.find('=');
    int64_t v;
    if (eq == std::string::npos || eq == 0 ||
        !absl::SimpleAtoi(absl::string_view(text).substr(eq + 1), &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--value '", text, "': expected name=integer"));
    }
    (*values)[text.substr(0, eq)] = v;
  }
  return absl::OkStatus();
}

void AddMeasureCommand(CLI::App& app, const CommandContext& ctx) {
  AddCommands<MeasureCommand>(app, ctx);
}

}  // namespace irontune

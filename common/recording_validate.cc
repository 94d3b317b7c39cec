// ValidateRecording: the cross-references and bounds of a parsed recording.
// The rules are listed in docs/recording-format.md ("Validation"); this file
// checks them in the order written there and stops at the first problem.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/expression.h"
#include "common/families.h"
#include "common/op_access.h"
#include "common/recording.h"
#include "common/status_macros.h"
#include "common/value.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace irontune {
namespace {

using NameSet = absl::flat_hash_set<absl::string_view>;
// Graph buffer sizes by name.
using Graph = absl::flat_hash_map<absl::string_view, uint64_t>;

constexpr double kWeightSumTolerance = 1e-6;
// The deepest expression taken whatever the limits say (a leaf is 1). An
// expression level nests two messages (Expression, Binary), the first four
// below an AutotuneRequest, and gRPC's parser takes at most 100 levels, so
// no depth above 48 could reach irontuned; the client and the daemon both
// stop at 32, leaving room.
constexpr int kWireExpressionDepth = 32;
// Names quoted in errors are cut to this many bytes.
constexpr size_t kMaxQuotedName = 80;

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

std::string Quote(absl::string_view name) {
  if (name.size() <= kMaxQuotedName) {
    return absl::StrCat("\"", absl::CEscape(name), "\"");
  }
  return absl::StrCat("\"", absl::CEscape(name.substr(0, kMaxQuotedName)),
                      "...\"");
}

bool IsSet(const v1::Value& value) {
  return value.kind_case() != v1::Value::KIND_NOT_SET;
}

absl::Status CheckCount(int count, int limit, absl::string_view path,
                        absl::string_view what) {
  if (count > limit) {
    return Invalid(path, ": ", count, " ", what, " exceed the limit of ",
                   limit);
  }
  return absl::OkStatus();
}

// Adds names(i) for i in [0, n) to `seen`, failing on an empty or repeated
// one; `path(i)` names the field.
template <typename NameFn, typename PathFn>
absl::Status CollectNames(int n, NameFn name, PathFn path, NameSet* seen) {
  for (int i = 0; i < n; ++i) {
    absl::string_view s = name(i);
    if (s.empty()) return Invalid(path(i), ": empty");
    if (!seen->insert(s).second) {
      return Invalid(path(i), ": duplicate ", Quote(s));
    }
  }
  return absl::OkStatus();
}

// Collects the names of `list` (whose elements have name()) as CollectNames
// does; `p` is the list's path.
template <typename T>
absl::Status CollectFieldNames(
    const google::protobuf::RepeatedPtrField<T>& list, const std::string& p,
    NameSet* seen) {
  return CollectNames(
      list.size(), [&](int j) -> const std::string& { return list[j].name(); },
      [&](int j) { return absl::StrCat(p, "[", j, "].name"); }, seen);
}

std::string FormatValues(const CallValues& values) {
  return absl::StrCat("{",
                      absl::StrJoin(values, ", ",
                                    [](std::string* out, const auto& entry) {
                                      absl::StrAppend(out, entry.first, "=",
                                                      entry.second);
                                    }),
                      "}");
}

// Checks that the keys of `values` are exactly `names`; missing ones first,
// then unknown ones, each in sorted order so the first error is stable.
absl::Status CheckValueKeys(
    const google::protobuf::Map<std::string, int64_t>& values,
    const google::protobuf::RepeatedPtrField<std::string>& names,
    const NameSet& name_set, absl::string_view path) {
  for (const std::string& name : names) {
    if (values.count(name) == 0)
      return Invalid(path, ": missing ", Quote(name));
  }
  if (static_cast<size_t>(values.size()) == name_set.size()) {
    return absl::OkStatus();
  }
  std::vector<absl::string_view> unknown;
  for (const auto& [key, value] : values) {
    if (!name_set.contains(key)) unknown.push_back(key);
  }
  if (unknown.empty()) return absl::OkStatus();  // addresses left out
  std::sort(unknown.begin(), unknown.end());
  return Invalid(path, ": unknown ", Quote(unknown.front()));
}

// Whether `s` is well-formed UTF-8 (no overlongs, surrogates or code
// points past U+10FFFF), as the binary parser demands of string fields.
bool IsUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    uint8_t c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int n;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      n = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= static_cast<size_t>(n)) return false;
    for (int k = 1; k <= n; ++k) {
      uint8_t d = static_cast<uint8_t>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[n] || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

// Checks every string field of `message` is UTF-8. Expressions are not
// entered: their names must match Recording.values, checked here, and
// their depth is not yet bounded.
absl::Status CheckStrings(const google::protobuf::Message& message,
                          const std::string& p) {
  namespace pb = google::protobuf;
  const pb::Reflection* reflection = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    std::string fp =
        p.empty() ? field->name() : absl::StrCat(p, ".", field->name());
    if (field->type() == pb::FieldDescriptor::TYPE_STRING) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          std::string scratch;
          if (!IsUtf8(reflection->GetRepeatedStringReference(message, field, i,
                                                             &scratch))) {
            return Invalid(fp, "[", i, "]: not valid UTF-8");
          }
        }
      } else {
        std::string scratch;
        if (!IsUtf8(reflection->GetStringReference(message, field, &scratch))) {
          return Invalid(fp, ": not valid UTF-8");
        }
      }
    } else if (field->type() == pb::FieldDescriptor::TYPE_MESSAGE &&
               field->message_type() != v1::Expression::descriptor()) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          RETURN_IF_ERROR(
              CheckStrings(reflection->GetRepeatedMessage(message, field, i),
                           absl::StrCat(fp, "[", i, "]")));
        }
      } else {
        RETURN_IF_ERROR(
            CheckStrings(reflection->GetMessage(message, field), fp));
      }
    }
  }
  return absl::OkStatus();
}

const char* KindName(v1::Value::KindCase kind) {
  switch (kind) {
    case v1::Value::kIntValue:
      return "an int";
    case v1::Value::kBoolValue:
      return "a bool";
    case v1::Value::kStringValue:
      return "a string";
    case v1::Value::kDoubleValue:
      return "a double";
    default:
      return "unset";
  }
}

// The kind a known family declares for its tunable `name` (that of its
// domain's values on either generation); KIND_NOT_SET when it has none.
v1::Value::KindCase DeclaredTunableKind(const Family& family,
                                        const std::string& name) {
  for (const char* generation : {"npu2", "npu1"}) {
    const std::vector<v1::Value> domain =
        FamilyDomain(family, name, generation);
    if (!domain.empty()) return domain.front().kind_case();
  }
  return v1::Value::KIND_NOT_SET;
}

// A known class's dims hold the kind of their default (an int where there
// is none: such dims are extents, at least 1; an int with a default is at
// least 0) and its tunables the kind of
// their domain's values, so a setting is never timed under a value of
// another kind.
absl::Status CheckDeclaredKinds(const v1::Operator& op, const std::string& p) {
  const Family* family = FindFamily(op.class_name());
  if (family == nullptr) return absl::OkStatus();
  for (int j = 0; j < op.params_size(); ++j) {
    const v1::Param& f = op.params(j);
    auto dim = std::find_if(family->dims.begin(), family->dims.end(),
                            [&](const Dim& d) { return d.name == f.name(); });
    if (dim == family->dims.end()) continue;
    const v1::Value::KindCase want =
        dim->default_value.kind_case() == v1::Value::KIND_NOT_SET
            ? v1::Value::kIntValue
            : dim->default_value.kind_case();
    if (f.value().kind_case() != want) {
      return Invalid(p, ".params[", j, "].value: ", ValueToString(f.value()),
                     " is not ", KindName(want), ", as ", family->class_name,
                     "'s ", f.name(), " is");
    }
    // An extent (no default) is at least 1; an int param with a default
    // (RoPE's method_type 0) at least 0, its own rules checked at build.
    const bool extent =
        dim->default_value.kind_case() == v1::Value::KIND_NOT_SET;
    if (want == v1::Value::kIntValue &&
        f.value().int_value() < (extent ? 1 : 0)) {
      return Invalid(p, ".params[", j, "].value: ", f.value().int_value(), "; ",
                     family->class_name, "'s ", f.name(),
                     extent ? " is a dimension, at least 1" : " is at least 0");
    }
  }
  for (int j = 0; j < op.tunables_size(); ++j) {
    const v1::Tunable& t = op.tunables(j);
    const v1::Value::KindCase want = DeclaredTunableKind(*family, t.name());
    if (want == v1::Value::KIND_NOT_SET) continue;
    if (t.value().kind_case() != want) {
      return Invalid(p, ".tunables[", j, "].value: ", ValueToString(t.value()),
                     " is not ", KindName(want), ", as ", family->class_name,
                     "'s ", t.name(), " is");
    }
  }
  return absl::OkStatus();
}

CallValues ToCallValues(
    const google::protobuf::Map<std::string, int64_t>& values) {
  return CallValues(values.begin(), values.end());
}

// What later checks need of a valid operator.
struct OperatorFacts {
  std::vector<uint64_t> buffer_bytes;  // per operator buffer
  NameSet call_values;                 // CallValue names
};

class Validator {
 public:
  Validator(const v1::Calls& calls, const RecordingLimits& limits)
      : calls_(calls), limits_(Clamped(limits)) {}

  absl::Status Run() {
    RETURN_IF_ERROR(CheckFormat());
    if (calls_.operators_size() == 0 && calls_.calls_size() == 0) {
      return Invalid(
          "operators: none, and no calls; a recording holds the "
          "operators its calls run");
    }
    RETURN_IF_ERROR(CheckCount(calls_.operators_size(), limits_.max_operators,
                               "operators", "operators"));
    RETURN_IF_ERROR(
        CheckCount(calls_.calls_size(), limits_.max_calls, "calls", "calls"));
    RETURN_IF_ERROR(CheckStrings(calls_, ""));
    ops_.resize(calls_.operators_size());
    for (int i = 0; i < calls_.operators_size(); ++i) {
      RETURN_IF_ERROR(CheckOperator(i));
    }
    for (int c = 0; c < calls_.calls_size(); ++c) {
      RETURN_IF_ERROR(CheckCall(c));
    }
    return absl::OkStatus();
  }

 private:
  // The version, and for format 2 the counts: a file cut between two of its
  // top-level fields parses, but holds fewer operators or calls than its
  // writer counted, or (cut before its last field) no counts at all.
  absl::Status CheckFormat() const {
    const uint32_t version = calls_.format_version();
    if (version == v1::FORMAT_VERSION_UNSPECIFIED) {
      return Invalid("format_version: missing (this build reads 1 and 2)");
    }
    if (version != v1::FORMAT_VERSION_1 && version != v1::FORMAT_VERSION_2) {
      return Invalid("format_version: ", version,
                     " is not supported (this build reads 1 and 2)");
    }
    if (version == v1::FORMAT_VERSION_1) {
      if (!calls_.has_counts()) return absl::OkStatus();
      return Invalid(
          "counts: set in a format 1 recording (counts are format "
          "2's; write format_version: 2)");
    }
    if (!calls_.has_counts()) {
      return Invalid(
          "counts: missing; the recording is cut short (copied half-way?), "
          "or a hand-made format 2 file without counts (give counts, or "
          "write format_version: 1)");
    }
    return CheckCounts();
  }

  absl::Status CheckCounts() const {
    const struct {
      const char* what;
      uint64_t said;
      int held;
    } counted[] = {
        {"operators", calls_.counts().operators(), calls_.operators_size()},
        {"calls", calls_.counts().calls(), calls_.calls_size()},
    };
    for (const auto& c : counted) {
      if (c.said == static_cast<uint64_t>(c.held)) continue;
      return Invalid("counts.", c.what, ": the file says ", c.said, " ", c.what,
                     " and holds ", c.held,
                     static_cast<uint64_t>(c.held) < c.said
                         ? "; it is cut short (copied half-way?)"
                         : "; counts do not match the file");
    }
    return absl::OkStatus();
  }

  absl::Status CheckOperator(int i) {
    const v1::Operator& op = calls_.operators(i);
    const std::string p = absl::StrCat("operators[", i, "]");
    if (op.class_name().empty()) return Invalid(p, ".class_name: empty");
    NameSet params;
    RETURN_IF_ERROR(CheckParams(op, p, &params));
    RETURN_IF_ERROR(CheckTunables(op, p));
    RETURN_IF_ERROR(CheckDeclaredKinds(op, p));
    RETURN_IF_ERROR(CheckBuffers(op, params, p, &ops_[i].buffer_bytes));
    RETURN_IF_ERROR(CheckCallValues(op, params, p, &ops_[i].call_values));
    return CheckTolerance(op.tolerance(), p);
  }

  // Checks the params' count, names and values; collects their names.
  absl::Status CheckParams(const v1::Operator& op, const std::string& p,
                           NameSet* params) {
    RETURN_IF_ERROR(CheckCount(op.params_size(), limits_.max_params,
                               p + ".params", "params"));
    RETURN_IF_ERROR(CollectFieldNames(op.params(), p + ".params", params));
    for (int j = 0; j < op.params_size(); ++j) {
      if (!IsSet(op.params(j).value())) {
        return Invalid(p, ".params[", j, "].value: unset");
      }
    }
    return absl::OkStatus();
  }

  // Checks the tunables and the pinned names, which must name tunables.
  absl::Status CheckTunables(const v1::Operator& op, const std::string& p) {
    RETURN_IF_ERROR(CheckCount(op.tunables_size(), limits_.max_tunables,
                               p + ".tunables", "tunables"));
    NameSet tunables;
    RETURN_IF_ERROR(
        CollectFieldNames(op.tunables(), p + ".tunables", &tunables));
    for (int j = 0; j < op.tunables_size(); ++j) {
      RETURN_IF_ERROR(
          CheckTunable(op.tunables(j), absl::StrCat(p, ".tunables[", j, "]")));
    }
    NameSet pinned;
    for (int j = 0; j < op.pinned_size(); ++j) {
      const std::string& name = op.pinned(j);
      if (!tunables.contains(name)) {
        return Invalid(p, ".pinned[", j, "]: no tunable ", Quote(name));
      }
      if (!pinned.insert(name).second) {
        return Invalid(p, ".pinned[", j, "]: duplicate ", Quote(name));
      }
    }
    return absl::OkStatus();
  }

  // Checks the buffers; appends each one's size in bytes to `bytes`.
  absl::Status CheckBuffers(const v1::Operator& op, const NameSet& params,
                            const std::string& p,
                            std::vector<uint64_t>* bytes) {
    NameSet buffers;
    RETURN_IF_ERROR(CollectFieldNames(op.buffers(), p + ".buffers", &buffers));
    bytes->reserve(op.buffers_size());
    for (int j = 0; j < op.buffers_size(); ++j) {
      ASSIGN_OR_RETURN(uint64_t size,
                       CheckBuffer(op.buffers(j), params,
                                   absl::StrCat(p, ".buffers[", j, "]")));
      bytes->push_back(size);
    }
    return absl::OkStatus();
  }

  // Checks the per-call values; collects their names into `names`.
  absl::Status CheckCallValues(const v1::Operator& op, const NameSet& params,
                               const std::string& p, NameSet* names) {
    RETURN_IF_ERROR(CollectFieldNames(op.values(), p + ".values", names));
    for (int j = 0; j < op.values_size(); ++j) {
      const v1::CallValue& value = op.values(j);
      if (value.symbol().empty()) {
        return Invalid(p, ".values[", j, "].symbol: empty");
      }
      if (!value.bounds().empty() && !params.contains(value.bounds())) {
        return Invalid(p, ".values[", j, "].bounds: no param ",
                       Quote(value.bounds()));
      }
    }
    return absl::OkStatus();
  }

  static absl::Status CheckTolerance(const v1::Tolerance& tolerance,
                                     const std::string& p) {
    const double frac = tolerance.max_mismatch_frac();
    if (!(frac >= 0 && frac < 1)) {
      return Invalid(p, ".tolerance.max_mismatch_frac: must be in [0, 1), not ",
                     frac);
    }
    if (tolerance.has_bf16_ulps()) {
      const v1::Tolerance::Bf16Ulps& ulps = tolerance.bf16_ulps();
      if (ulps.ulps() < 0) {
        return Invalid(p, ".tolerance.bf16_ulps.ulps: must be >= 0, not ",
                       ulps.ulps());
      }
      if (!std::isfinite(ulps.atol()) || ulps.atol() < 0) {
        return Invalid(p,
                       ".tolerance.bf16_ulps.atol: must be finite and >= 0, "
                       "not ",
                       ulps.atol());
      }
    }
    if (!tolerance.has_close()) return absl::OkStatus();
    const v1::Tolerance::Close& close = tolerance.close();
    for (auto [name, x] : {std::pair<const char*, double>{"atol", close.atol()},
                           {"rtol", close.rtol()}}) {
      if (!std::isfinite(x) || x < 0) {
        return Invalid(p, ".tolerance.close.", name,
                       ": must be finite and >= 0, not ", x);
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckTunable(const v1::Tunable& tunable, const std::string& p) {
    if (!IsSet(tunable.value())) return Invalid(p, ".value: unset");
    RETURN_IF_ERROR(CheckCount(tunable.domain_size(), limits_.max_domain,
                               p + ".domain", "values"));
    bool found = tunable.domain_size() == 0;
    for (int k = 0; k < tunable.domain_size(); ++k) {
      if (!IsSet(tunable.domain(k))) {
        return Invalid(p, ".domain[", k, "]: unset");
      }
      found = found || ValuesEqual(tunable.domain(k), tunable.value());
    }
    if (!found) {
      return Invalid(p, ".value: ", tunable.value().ShortDebugString(),
                     " is not in its domain");
    }
    return absl::OkStatus();
  }

  // Returns the buffer's size in bytes.
  absl::StatusOr<uint64_t> CheckBuffer(const v1::Buffer& buffer,
                                       const NameSet& params,
                                       const std::string& p) {
    if (buffer.role() == v1::BUFFER_ROLE_UNSPECIFIED) {
      return Invalid(p, ".role: unspecified");
    }
    if (!v1::BufferRole_IsValid(buffer.role())) {
      return Invalid(p, ".role: unknown ", static_cast<int>(buffer.role()));
    }
    if (buffer.dtype() == v1::DTYPE_UNSPECIFIED) {
      return Invalid(p, ".dtype: unspecified");
    }
    uint64_t bytes = DTypeSize(buffer.dtype());
    if (bytes == 0) {
      return Invalid(p, ".dtype: unknown ", static_cast<int>(buffer.dtype()));
    }
    if (buffer.shape_size() == 0) return Invalid(p, ".shape: empty");
    if (buffer.shape_size() > limits_.max_rank) {
      return Invalid(p, ".shape: rank ", buffer.shape_size(),
                     " exceeds the limit of ", limits_.max_rank);
    }
    for (int d = 0; d < buffer.shape_size(); ++d) {
      uint64_t extent = buffer.shape(d);
      if (extent == 0) return Invalid(p, ".shape[", d, "]: 0, must be > 0");
      if (__builtin_mul_overflow(bytes, extent, &bytes) ||
          bytes > limits_.max_buffer_bytes) {
        return Invalid(p, ".shape: the buffer's bytes exceed the limit of ",
                       limits_.max_buffer_bytes);
      }
    }
    for (int k = 0; k < buffer.extents_size(); ++k) {
      const v1::ExtentAxis& axis = buffer.extents(k);
      if (!params.contains(axis.extent())) {
        return Invalid(p, ".extents[", k, "].extent: no param ",
                       Quote(axis.extent()));
      }
      if (axis.axis() >= static_cast<uint32_t>(buffer.shape_size())) {
        return Invalid(p, ".extents[", k, "].axis: ", axis.axis(),
                       " is out of range for rank ", buffer.shape_size());
      }
    }
    return bytes;
  }

  // Checks the node kinds, operators and value names of `expr` (whose depth
  // is already bounded) and counts its nodes into `nodes`. `trail` is the
  // path below the expression, for errors.
  absl::Status CheckExpression(const v1::Expression& expr, const NameSet& names,
                               const std::string& p, std::string* trail,
                               uint64_t* nodes) {
    ++*nodes;
    switch (expr.node_case()) {
      case v1::Expression::kConstant:
        return absl::OkStatus();
      case v1::Expression::kValue:
        if (!names.contains(expr.value())) {
          return Invalid(p, *trail, ".value: no recording value ",
                         Quote(expr.value()));
        }
        return absl::OkStatus();
      case v1::Expression::kBinary: {
        const v1::Expression::Binary& binary = expr.binary();
        if (binary.op() == v1::Expression::OP_UNSPECIFIED) {
          return Invalid(p, *trail, ".binary.op: unspecified");
        }
        if (!v1::Expression::Op_IsValid(binary.op())) {
          return Invalid(p, *trail, ".binary.op: unknown ",
                         static_cast<int>(binary.op()));
        }
        size_t size = trail->size();
        trail->append(".binary.lhs");
        RETURN_IF_ERROR(CheckExpression(binary.lhs(), names, p, trail, nodes));
        trail->resize(size);
        trail->append(".binary.rhs");
        RETURN_IF_ERROR(CheckExpression(binary.rhs(), names, p, trail, nodes));
        trail->resize(size);
        return absl::OkStatus();
      }
      case v1::Expression::NODE_NOT_SET:
        break;
    }
    return Invalid(p, *trail, ": node unset");
  }

  absl::Status CheckCall(int c) {
    const v1::Timed& call = calls_.calls(c);
    const v1::Recording& rec = call.recording();
    const std::string cp = absl::StrCat("calls[", c, "]");
    const std::string p = cp + ".recording";

    NameSet values;
    RETURN_IF_ERROR(CollectNames(
        rec.values_size(),
        [&](int k) -> const std::string& { return rec.values(k); },
        [&](int k) { return absl::StrCat(p, ".values[", k, "]"); }, &values));
    // Table addresses the graph fills in: bindings may read them, and a call
    // may give them; one not given reads 0 (IRON's op_values).
    RETURN_IF_ERROR(CollectNames(
        rec.addresses_size(),
        [&](int k) -> const std::string& { return rec.addresses(k); },
        [&](int k) { return absl::StrCat(p, ".addresses[", k, "]"); },
        &values));
    Graph graph;
    RETURN_IF_ERROR(CheckGraphBuffers(rec, p, &graph));
    std::vector<bool> runs(calls_.operators_size(), false);
    RETURN_IF_ERROR(CheckSteps(rec, graph, p, &runs));
    RETURN_IF_ERROR(CheckEnds(rec, graph, p));
    uint64_t nodes = 0;
    RETURN_IF_ERROR(CheckBindings(rec, values, runs, p, &nodes));
    RETURN_IF_ERROR(
        CheckValueKeys(call.values(), rec.values(), values, cp + ".values"));
    RETURN_IF_ERROR(CheckContents(call, graph, cp));
    RETURN_IF_ERROR(CheckPoints(call, values, cp));
    return EvaluateBindings(c, nodes);
  }

  // Checks the graph buffers' names and sizes; fills `graph`.
  absl::Status CheckGraphBuffers(const v1::Recording& rec, const std::string& p,
                                 Graph* graph) {
    RETURN_IF_ERROR(CheckCount(rec.buffers_size(), limits_.max_buffers,
                               p + ".buffers", "buffers"));
    graph->reserve(rec.buffers_size());
    for (int k = 0; k < rec.buffers_size(); ++k) {
      const v1::GraphBuffer& buffer = rec.buffers(k);
      const std::string bp = absl::StrCat(p, ".buffers[", k, "]");
      if (buffer.name().empty()) return Invalid(bp, ".name: empty");
      if (!graph->emplace(buffer.name(), buffer.nbytes()).second) {
        return Invalid(bp, ".name: duplicate ", Quote(buffer.name()));
      }
      if (buffer.nbytes() > limits_.max_buffer_bytes) {
        return Invalid(bp, ".nbytes: ", buffer.nbytes(),
                       " exceeds the limit of ", limits_.max_buffer_bytes);
      }
    }
    return absl::OkStatus();
  }

  // Checks the steps; marks in `runs` the operators they run.
  absl::Status CheckSteps(const v1::Recording& rec, const Graph& graph,
                          const std::string& p, std::vector<bool>* runs) {
    RETURN_IF_ERROR(
        CheckCount(rec.steps_size(), limits_.max_steps, p + ".steps", "steps"));
    for (int s = 0; s < rec.steps_size(); ++s) {
      RETURN_IF_ERROR(
          CheckStep(rec.steps(s), graph, absl::StrCat(p, ".steps[", s, "]")));
      (*runs)[rec.steps(s).op()] = true;
    }
    return absl::OkStatus();
  }

  // Checks that the inputs and outputs name distinct graph buffers.
  static absl::Status CheckEnds(const v1::Recording& rec, const Graph& graph,
                                const std::string& p) {
    for (auto [field, list] : {std::pair{".inputs", &rec.inputs()},
                               std::pair{".outputs", &rec.outputs()}}) {
      NameSet seen;
      for (int k = 0; k < list->size(); ++k) {
        const std::string& name = list->Get(k);
        if (!graph.contains(name)) {
          return Invalid(p, field, "[", k, "]: no graph buffer ", Quote(name));
        }
        if (!seen.insert(name).second) {
          return Invalid(p, field, "[", k, "]: duplicate ", Quote(name));
        }
      }
    }
    return absl::OkStatus();
  }

  // Checks the bindings (operators that run, values they have, each bound
  // once, expressions well-formed); counts expression nodes into `nodes`.
  absl::Status CheckBindings(const v1::Recording& rec, const NameSet& values,
                             const std::vector<bool>& runs,
                             const std::string& p, uint64_t* nodes) {
    absl::flat_hash_set<std::pair<uint32_t, absl::string_view>> bound;
    for (int b = 0; b < rec.bindings_size(); ++b) {
      const v1::Binding& binding = rec.bindings(b);
      const std::string bp = absl::StrCat(p, ".bindings[", b, "]");
      if (binding.op() >= static_cast<uint32_t>(calls_.operators_size())) {
        return Invalid(bp, ".op: no operator ", binding.op());
      }
      if (!runs[binding.op()]) {
        return Invalid(bp, ".op: operator ", binding.op(),
                       " runs in no step of this recording");
      }
      if (!ops_[binding.op()].call_values.contains(binding.member())) {
        return Invalid(bp, ".member: operator ", binding.op(), " has no value ",
                       Quote(binding.member()));
      }
      if (!bound.emplace(binding.op(), binding.member()).second) {
        return Invalid(bp, ": operator ", binding.op(), "'s value ",
                       Quote(binding.member()), " is already bound");
      }
      const std::string ep = bp + ".expression";
      int depth =
          ExpressionDepth(binding.expression(), limits_.max_expression_depth);
      if (depth > limits_.max_expression_depth) {
        return Invalid(ep, ": deeper than the limit of ",
                       limits_.max_expression_depth);
      }
      std::string trail;
      RETURN_IF_ERROR(
          CheckExpression(binding.expression(), values, ep, &trail, nodes));
    }
    return absl::OkStatus();
  }

  // Checks the given buffer contents: each fills a graph buffer once, whole,
  // and all of them stay under the limit.
  absl::Status CheckContents(const v1::Timed& call, const Graph& graph,
                             const std::string& cp) {
    NameSet filled;
    uint64_t content_bytes = 0;
    for (int k = 0; k < call.contents_size(); ++k) {
      const v1::Content& content = call.contents(k);
      const std::string kp = absl::StrCat(cp, ".contents[", k, "]");
      auto it = graph.find(content.buffer());
      if (it == graph.end()) {
        return Invalid(kp, ".buffer: no graph buffer ",
                       Quote(content.buffer()));
      }
      if (!filled.insert(content.buffer()).second) {
        return Invalid(kp, ".buffer: duplicate ", Quote(content.buffer()));
      }
      if (content.data().size() != it->second) {
        return Invalid(kp, ".data: ", content.data().size(),
                       " bytes for graph buffer ", Quote(content.buffer()),
                       " of ", it->second);
      }
      if (__builtin_add_overflow(content_bytes, content.data().size(),
                                 &content_bytes) ||
          content_bytes > limits_.max_content_bytes) {
        return Invalid(cp, ".contents: more than the limit of ",
                       limits_.max_content_bytes, " bytes");
      }
    }
    return absl::OkStatus();
  }

  // Checks the points: weights finite, positive and summing to 1, values
  // keyed as the recording's.
  absl::Status CheckPoints(const v1::Timed& call, const NameSet& values,
                           const std::string& cp) {
    const v1::Recording& rec = call.recording();
    RETURN_IF_ERROR(CheckCount(call.points_size(), limits_.max_points,
                               cp + ".points", "points"));
    double weights = 0;
    for (int k = 0; k < call.points_size(); ++k) {
      const v1::Point& point = call.points(k);
      const std::string pp = absl::StrCat(cp, ".points[", k, "]");
      if (!std::isfinite(point.weight()) || point.weight() <= 0) {
        return Invalid(pp, ".weight: must be finite and > 0, not ",
                       point.weight());
      }
      weights += point.weight();
      RETURN_IF_ERROR(
          CheckValueKeys(point.values(), rec.values(), values, pp + ".values"));
    }
    if (call.points_size() > 0 &&
        !(std::fabs(weights - 1) <= kWeightSumTolerance)) {
      return Invalid(cp, ".points: weights sum to ", weights, ", not 1");
    }
    return absl::OkStatus();
  }

  absl::Status CheckStep(const v1::Step& step, const Graph& graph,
                         const std::string& p) {
    if (step.op() >= static_cast<uint32_t>(calls_.operators_size())) {
      return Invalid(p, ".op: no operator ", step.op());
    }
    const v1::Operator& op = calls_.operators(step.op());
    const std::vector<uint64_t>& sizes = ops_[step.op()].buffer_bytes;
    if (step.refs_size() != op.buffers_size()) {
      return Invalid(p, ".refs: ", step.refs_size(), " refs for operator ",
                     step.op(), "'s ", op.buffers_size(), " buffers");
    }
    for (int r = 0; r < step.refs_size(); ++r) {
      const v1::BufferRef& ref = step.refs(r);
      const std::string rp = absl::StrCat(p, ".refs[", r, "]");
      auto it = graph.find(ref.buffer());
      if (it == graph.end()) {
        return Invalid(rp, ".buffer: no graph buffer ", Quote(ref.buffer()));
      }
      uint64_t size = sizes[r];
      if (ref.length() != 0 && ref.length() != size) {
        return Invalid(rp, ".length: ", ref.length(), " differs from the ",
                       size, " bytes of operators[", step.op(), "].buffers[", r,
                       "]");
      }
      uint64_t nbytes = it->second;
      if (ref.offset() > nbytes || size > nbytes - ref.offset()) {
        return Invalid(rp, ".offset: ", size, " bytes at offset ", ref.offset(),
                       " do not fit graph buffer ", Quote(ref.buffer()), " of ",
                       nbytes);
      }
    }
    return absl::OkStatus();
  }

  // Evaluates every binding of call `c` (which holds `nodes` expression
  // nodes) at the call's values and at each point's.
  absl::Status EvaluateBindings(int c, uint64_t nodes) {
    const v1::Timed& call = calls_.calls(c);
    const v1::Recording& rec = call.recording();
    uint64_t work = 0;
    if (__builtin_mul_overflow(nodes, uint64_t{1} + call.points_size(),
                               &work) ||
        __builtin_add_overflow(work_, work, &work_) ||
        work_ > limits_.max_expression_work) {
      return Invalid("calls[", c,
                     "].recording.bindings: evaluating the expressions takes "
                     "more than the limit of ",
                     limits_.max_expression_work, " node evaluations");
    }
    if (rec.bindings_size() == 0) return absl::OkStatus();
    std::vector<std::pair<CallValues, std::string>> sets;
    sets.reserve(1 + call.points_size());
    sets.emplace_back(WithAddresses(rec, ToCallValues(call.values())), "");
    for (int k = 0; k < call.points_size(); ++k) {
      sets.emplace_back(
          WithAddresses(rec, ToCallValues(call.points(k).values())),
          absl::StrCat(" of points[", k, "]"));
    }
    for (int b = 0; b < rec.bindings_size(); ++b) {
      for (const auto& [values, where] : sets) {
        absl::StatusOr<int64_t> result = EvaluateExpression(
            rec.bindings(b).expression(), values, limits_.max_expression_depth);
        if (!result.ok()) {
          return Invalid("calls[", c, "].recording.bindings[", b,
                         "].expression: ", result.status().message(),
                         " at values ", FormatValues(values), where);
        }
      }
    }
    return absl::OkStatus();
  }

  const v1::Calls& calls_;
  static RecordingLimits Clamped(RecordingLimits limits) {
    limits.max_expression_depth =
        std::min(limits.max_expression_depth, kWireExpressionDepth);
    return limits;
  }

  const RecordingLimits limits_;
  std::vector<OperatorFacts> ops_;  // per operator, once checked
  uint64_t work_ = 0;               // expression node evaluations so far
};

}  // namespace

absl::Status ValidateRecording(const v1::Calls& calls,
                               const RecordingLimits& limits) {
  return Validator(calls, limits).Run();
}

}  // namespace irontune

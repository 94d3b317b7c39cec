#include "common/design.h"

#include <algorithm>

#include "common/families.h"
#include "common/value.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace irontune {

v1::Operator DesignOf(const v1::Operator& op) {
  v1::Operator out = op;
  for (v1::Tunable& t : *out.mutable_tunables()) t.clear_domain();
  out.clear_pinned();
  out.clear_tolerance();
  return out;
}

std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

std::string DesignBytes(const v1::Operator& op) {
  return DeterministicBytes(DesignOf(op));
}

namespace {

bool IsColumnCount(const std::string& name) {
  return name == "num_aie_columns" || name == "columns";
}

bool Unset(const v1::Value& v) {
  return v.kind_case() == v1::Value::KIND_NOT_SET;
}

// The most columns in [1, columns] at which `op` builds with tunable
// `index` at that count; 1 when none does.
int64_t ResolveColumns(v1::Operator op, int index, std::string_view generation,
                       int columns) {
  for (int64_t c = columns; c > 1; --c) {
    *op.mutable_tunables(index)->mutable_value() = IntValue(c);
    if (ConstraintViolation(op, generation, columns).empty()) return c;
  }
  return 1;
}

}  // namespace

v1::Operator ResolvedDesign(const v1::Operator& op, std::string_view generation,
                            int columns) {
  const Family* family = FindFamily(op.class_name());
  if (family == nullptr) return DesignOf(op);
  v1::Operator out = op;
  for (const TunableSpec& spec : family->tunable_specs) {
    for (v1::Tunable& t : *out.mutable_tunables()) {
      if (t.name() != spec.name || !Unset(t.value())) continue;
      if (!Unset(spec.default_value)) *t.mutable_value() = spec.default_value;
    }
  }
  for (int i = 0; i < out.tunables_size() && columns > 0; ++i) {
    const v1::Tunable& t = out.tunables(i);
    if (!Unset(t.value()) || !IsColumnCount(t.name())) continue;
    const int64_t c = ResolveColumns(out, i, generation, columns);
    *out.mutable_tunables(i)->mutable_value() = IntValue(c);
  }
  auto& params = *out.mutable_params();
  params.erase(std::remove_if(params.begin(), params.end(),
                              [&](const v1::Param& p) {
                                return IsDerived(*family, p.name());
                              }),
               params.end());
  return DesignOf(out);
}

std::string ResolvedDesignBytes(const v1::Operator& op,
                                std::string_view generation, int columns) {
  return DeterministicBytes(ResolvedDesign(op, generation, columns));
}

}  // namespace irontune

#include "common/design.h"

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

}  // namespace irontune

#include "daemon/sim/design.h"

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/recording.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace irontune::sim {
namespace {

constexpr int kMaxSteps = 1 << 16;

std::string_view PackagingWord(v1::Packaging packaging) {
  switch (packaging) {
    case v1::PACKAGING_FULL_ELF:
      return "full_elf";
    case v1::PACKAGING_XCLBIN_CHAIN:
      return "xclbin_chain";
    default:
      return "unspecified";
  }
}

// Splits the next "\n"-terminated line off `rest`.
std::optional<std::string_view> NextLine(std::string_view& rest) {
  size_t end = rest.find('\n');
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view line = rest.substr(0, end);
  rest.remove_prefix(end + 1);
  return line;
}

// Reads "key value" from the next line.
absl::StatusOr<std::string_view> Field(std::string_view& rest,
                                       std::string_view key) {
  std::optional<std::string_view> line = NextLine(rest);
  if (!line ||
      !absl::StartsWith(AsAbsl(*line), absl::StrCat(AsAbsl(key), " "))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sim design payload: expected the \"", AsAbsl(key), "\" line"));
  }
  return line->substr(key.size() + 1);
}

absl::StatusOr<int64_t> IntField(std::string_view& rest, std::string_view key,
                                 int64_t lo, int64_t hi) {
  absl::StatusOr<std::string_view> text = Field(rest, key);
  if (!text.ok()) return text.status();
  int64_t value = 0;
  if (!absl::SimpleAtoi(AsAbsl(*text), &value) || value < lo || value > hi) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sim design payload: bad ", AsAbsl(key), " \"", AsAbsl(*text), "\""));
  }
  return value;
}

const v1::Value* FindValue(
    const google::protobuf::RepeatedPtrField<v1::Param>& params,
    std::string_view name) {
  for (const v1::Param& p : params) {
    if (p.name() == name) return &p.value();
  }
  return nullptr;
}

std::optional<int64_t> AsInt(const v1::Value* v) {
  if (v == nullptr) return std::nullopt;
  switch (v->kind_case()) {
    case v1::Value::kIntValue:
      return v->int_value();
    case v1::Value::kBoolValue:
      return v->bool_value() ? 1 : 0;
    default:
      return std::nullopt;
  }
}

}  // namespace

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

std::string EncodeSimDesign(const SimDesign& design) {
  std::string op = DeterministicBytes(design.op);
  return absl::StrCat(AsAbsl(kDesignMagic), "\n", "generation ",
                      design.generation, "\n", "packaging ",
                      AsAbsl(PackagingWord(design.packaging)), "\n", "steps ",
                      design.steps, "\n", "distinct ", design.distinct ? 1 : 0,
                      "\n", "operator ", op.size(), "\n", op);
}

absl::StatusOr<SimDesign> DecodeSimDesign(std::string_view payload) {
  std::string_view rest = payload;
  std::optional<std::string_view> magic = NextLine(rest);
  if (!magic || *magic != kDesignMagic) {
    return absl::InvalidArgumentError(
        "not a sim design payload (built by another builder?)");
  }
  SimDesign design;
  absl::StatusOr<std::string_view> generation = Field(rest, "generation");
  if (!generation.ok()) return generation.status();
  design.generation = std::string(*generation);
  absl::StatusOr<std::string_view> packaging = Field(rest, "packaging");
  if (!packaging.ok()) return packaging.status();
  if (*packaging == "full_elf") {
    design.packaging = v1::PACKAGING_FULL_ELF;
  } else if (*packaging == "xclbin_chain") {
    design.packaging = v1::PACKAGING_XCLBIN_CHAIN;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "sim design payload: bad packaging \"", AsAbsl(*packaging), "\""));
  }
  absl::StatusOr<int64_t> steps = IntField(rest, "steps", 1, kMaxSteps);
  if (!steps.ok()) return steps.status();
  design.steps = static_cast<int>(*steps);
  absl::StatusOr<int64_t> distinct = IntField(rest, "distinct", 0, 1);
  if (!distinct.ok()) return distinct.status();
  design.distinct = *distinct == 1;
  absl::StatusOr<int64_t> nbytes =
      IntField(rest, "operator", 0, static_cast<int64_t>(rest.size()));
  if (!nbytes.ok()) return nbytes.status();
  if (static_cast<size_t>(*nbytes) != rest.size()) {
    return absl::InvalidArgumentError(
        "sim design payload: operator length disagrees with the payload");
  }
  if (!design.op.ParseFromArray(rest.data(), static_cast<int>(rest.size()))) {
    return absl::InvalidArgumentError(
        "sim design payload: the operator does not parse");
  }
  return design;
}

int DTypeBytes(v1::DType dtype) { return static_cast<int>(DTypeSize(dtype)); }

std::optional<uint64_t> BufferBytes(const v1::Buffer& buffer) {
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t bytes = static_cast<uint64_t>(DTypeBytes(buffer.dtype()));
  for (uint64_t extent : buffer.shape()) {
    if (extent != 0 && bytes > kLimit / extent) return std::nullopt;
    bytes *= extent;
  }
  return bytes;
}

int64_t OpView::Param(std::string_view name, int64_t fallback) const {
  return AsInt(FindValue(op_.params(), name)).value_or(fallback);
}

bool OpView::HasParam(std::string_view name) const {
  return FindValue(op_.params(), name) != nullptr;
}

std::string OpView::StringParam(std::string_view name,
                                std::string_view fallback) const {
  const v1::Value* v = FindValue(op_.params(), name);
  if (v == nullptr || v->kind_case() != v1::Value::kStringValue) {
    return std::string(fallback);
  }
  return v->string_value();
}

int64_t OpView::Tunable(std::string_view name, int64_t fallback) const {
  for (const v1::Tunable& t : op_.tunables()) {
    if (t.name() == name) return AsInt(&t.value()).value_or(fallback);
  }
  return fallback;
}

bool OpView::HasTunable(std::string_view name) const {
  return std::any_of(op_.tunables().begin(), op_.tunables().end(),
                     [&](const v1::Tunable& t) { return t.name() == name; });
}

int64_t OpView::Extent(std::string_view name, int64_t fallback) const {
  int64_t extent = Param(name, fallback);
  for (const v1::CallValue& cv : op_.values()) {
    if (cv.bounds() != name) continue;
    auto it = values_.find(cv.symbol());
    if (it == values_.end()) continue;
    extent = std::clamp<int64_t>(it->second, 1, std::max<int64_t>(extent, 1));
  }
  return extent;
}

}  // namespace irontune::sim

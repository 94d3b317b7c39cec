#include "daemon/sim/design.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/design.h"
#include "common/op_access.h"
#include "common/recording.h"

namespace irontune::sim {
namespace {

constexpr int kMaxSteps = 1 << 16;

// The payload's word for each packaging.
constexpr std::pair<v1::Packaging, std::string_view> kPackagingWords[] = {
    {v1::PACKAGING_FULL_ELF, "full_elf"},
    {v1::PACKAGING_XCLBIN_CHAIN, "xclbin_chain"},
};

std::string_view PackagingWord(v1::Packaging packaging) {
  for (const auto& [p, word] : kPackagingWords) {
    if (p == packaging) return word;
  }
  return "unspecified";
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

}  // namespace

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
  auto known = std::find_if(
      std::begin(kPackagingWords), std::end(kPackagingWords),
      [&](const auto& entry) { return entry.second == *packaging; });
  if (known == std::end(kPackagingWords)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sim design payload: bad packaging \"", AsAbsl(*packaging), "\""));
  }
  design.packaging = known->first;
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
  return IntParam(op_, name).value_or(fallback);
}

bool OpView::HasParam(std::string_view name) const {
  return FindParam(op_, name) != nullptr;
}

std::string OpView::StringParam(std::string_view name,
                                std::string_view fallback) const {
  const v1::Value* v = FindParam(op_, name);
  if (v == nullptr || v->kind_case() != v1::Value::kStringValue) {
    return std::string(fallback);
  }
  return v->string_value();
}

int64_t OpView::Tunable(std::string_view name, int64_t fallback) const {
  return IntTunable(op_, name).value_or(fallback);
}

bool OpView::HasTunable(std::string_view name) const {
  return irontune::HasTunable(op_, name);
}

int64_t OpView::Extent(std::string_view name, int64_t fallback) const {
  return BoundExtentBySymbol(op_, values_, name, fallback);
}

}  // namespace irontune::sim

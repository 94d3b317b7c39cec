// Parsing, encoding, loading and saving recordings. The rules a parsed
// recording must follow live in recording_validate.cc.
#include "common/recording.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"

namespace irontune {
namespace {

namespace pb = google::protobuf;

// Message nesting the parsers allow. An expression level costs two (the
// Expression and its Binary), and the path to a binding's expression four
// more, so this admits expressions somewhat deeper than the default
// RecordingLimits::max_expression_depth; validation then reports them by
// path. Well within what the parsers' recursion can take.
constexpr int kMessageNestingLimit = 160;

// Keeps the first error the text format parser reports.
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column,
                const std::string& message) override {
    if (!error_.empty()) return;
    // The parser counts from 0; people count from 1.
    error_ =
        absl::StrCat("line ", line + 1, " column ", column + 1, ": ", message);
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}

  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

absl::Status ParseBinary(std::string_view bytes, v1::Calls* calls) {
  pb::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                 static_cast<int>(bytes.size()));
  input.SetRecursionLimit(kMessageNestingLimit);
  input.SetTotalBytesLimit(static_cast<int>(bytes.size()));
  if (!calls->ParseFromCodedStream(&input) || !input.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(
        "binary: not a valid irontune.v1.Calls encoding (malformed, truncated "
        "or nested too deeply)");
  }
  return absl::OkStatus();
}

absl::Status ParseText(std::string_view bytes, v1::Calls* calls) {
  pb::io::ArrayInputStream input(bytes.data(), static_cast<int>(bytes.size()));
  FirstErrorCollector errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.SetRecursionLimit(kMessageNestingLimit);
  parser.AllowUnknownField(false);
  parser.AllowUnknownExtension(false);
  if (!parser.Parse(&input, calls)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "text format: ",
        errors.error().empty() ? "cannot be parsed" : errors.error()));
  }
  return absl::OkStatus();
}

absl::Status ParseJson(std::string_view bytes, v1::Calls* calls) {
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  pb::util::Status status = pb::util::JsonStringToMessage(
      pb::StringPiece(bytes.data(), bytes.size()), calls, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "json: ",
        absl::string_view(status.message().data(), status.message().size())));
  }
  return absl::OkStatus();
}

absl::Status PrefixPath(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(path, ": ", status.message()));
}

absl::Status ErrnoError(const std::string& path, absl::string_view what,
                        int error) {
  return absl::Status(absl::ErrnoToStatusCode(error),
                      absl::StrCat(path, ": ", what, ": ", strerror(error)));
}

// Reads the whole of `path`, refusing files over `max_bytes` before reading.
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     uint64_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, "cannot open", errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int error = errno;
    close(fd);
    return ErrnoError(path, "cannot stat", error);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a file"));
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", size, " bytes exceed the limit of ", max_bytes));
  }
  std::string data;
  data.resize(size);
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = read(fd, data.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close(fd);
      return ErrnoError(path, "cannot read", error);
    }
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<uint64_t>(n);
  }
  close(fd);
  data.resize(done);
  return data;
}

absl::Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "write");
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Each element type's size in bytes and its name.
struct DTypeInfo {
  v1::DType dtype;
  uint64_t size;
  std::string_view name;
};

constexpr DTypeInfo kDTypes[] = {
    {v1::DTYPE_BF16, 2, "bf16"}, {v1::DTYPE_F16, 2, "f16"},
    {v1::DTYPE_F32, 4, "f32"},   {v1::DTYPE_I8, 1, "i8"},
    {v1::DTYPE_U8, 1, "u8"},     {v1::DTYPE_I16, 2, "i16"},
    {v1::DTYPE_U16, 2, "u16"},   {v1::DTYPE_I32, 4, "i32"},
    {v1::DTYPE_U32, 4, "u32"},   {v1::DTYPE_I64, 8, "i64"},
};

// The entry of `dtype`, else nullptr (unspecified or unknown).
const DTypeInfo* FindDType(v1::DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return &info;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<RecordingFormat> RecordingFormatFromPath(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base =
      slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.rfind('.');
  std::string_view ext =
      dot == std::string_view::npos ? std::string_view() : base.substr(dot);
  if (ext == ".rec") return RecordingFormat::kBinary;
  if (ext == ".txtpb") return RecordingFormat::kText;
  if (ext == ".json") return RecordingFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat(absl::string_view(path.data(), path.size()),
                   ": extension \"", absl::string_view(ext.data(), ext.size()),
                   "\" names no recording format (.rec, .txtpb or .json)"));
}

absl::StatusOr<v1::Calls> ParseRecording(std::string_view bytes,
                                         RecordingFormat format,
                                         const RecordingLimits& limits) {
  if (bytes.size() > limits.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        bytes.size(), " bytes exceed the limit of ", limits.max_bytes));
  }
  // The parsers count in int.
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat(bytes.size(), " bytes exceed the parsers' 2 GiB"));
  }
  v1::Calls calls;
  switch (format) {
    case RecordingFormat::kBinary:
      RETURN_IF_ERROR(ParseBinary(bytes, &calls));
      break;
    case RecordingFormat::kText:
      RETURN_IF_ERROR(ParseText(bytes, &calls));
      break;
    case RecordingFormat::kJson:
      RETURN_IF_ERROR(ParseJson(bytes, &calls));
      break;
  }
  RETURN_IF_ERROR(ValidateRecording(calls, limits));
  return calls;
}

absl::StatusOr<v1::Calls> LoadRecording(const std::string& path,
                                        const RecordingLimits& limits) {
  ASSIGN_OR_RETURN(RecordingFormat format, RecordingFormatFromPath(path));
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, limits.max_bytes));
  absl::StatusOr<v1::Calls> calls = ParseRecording(bytes, format, limits);
  if (!calls.ok()) return PrefixPath(path, calls.status());
  return calls;
}

void SealRecording(v1::Calls& calls) {
  calls.set_format_version(v1::FORMAT_VERSION_2);
  calls.mutable_counts()->set_operators(
      static_cast<uint32_t>(calls.operators_size()));
  calls.mutable_counts()->set_calls(static_cast<uint32_t>(calls.calls_size()));
}

bool IsSealed(const v1::Calls& calls) {
  return calls.format_version() == v1::FORMAT_VERSION_2 && calls.has_counts() &&
         calls.counts().operators() ==
             static_cast<uint32_t>(calls.operators_size()) &&
         calls.counts().calls() == static_cast<uint32_t>(calls.calls_size());
}

absl::StatusOr<std::string> SerializeRecording(const v1::Calls& given,
                                               RecordingFormat format) {
  std::optional<v1::Calls> sealed;
  if (!IsSealed(given)) {
    sealed.emplace(given);
    SealRecording(*sealed);
  }
  const v1::Calls& calls = sealed ? *sealed : given;
  std::string out;
  switch (format) {
    case RecordingFormat::kBinary: {
      {
        pb::io::StringOutputStream stream(&out);
        pb::io::CodedOutputStream coded(&stream);
        coded.SetSerializationDeterministic(true);
        if (!calls.SerializeToCodedStream(&coded) || coded.HadError()) {
          return absl::InternalError("binary: encoding failed");
        }
      }  // `coded` trims `out` to what it wrote as it goes.
      return out;
    }
    case RecordingFormat::kText: {
      pb::TextFormat::Printer printer;
      if (!printer.PrintToString(calls, &out)) {
        return absl::InternalError("text format: printing failed");
      }
      return out;
    }
    case RecordingFormat::kJson: {
      pb::util::JsonPrintOptions options;
      options.add_whitespace = true;
      options.preserve_proto_field_names = true;
      pb::util::Status status =
          pb::util::MessageToJsonString(calls, &out, options);
      if (!status.ok()) {
        // In practice: nesting past what protobuf's JSON writer allows (64
        // messages, so expressions deeper than 31 levels).
        return absl::InvalidArgumentError(absl::StrCat(
            "json: ",
            absl::string_view(status.message().data(), status.message().size()),
            " (protobuf's JSON mapping nests at most 64 messages; write deep "
            "expressions as .rec or .txtpb)"));
      }
      return out;
    }
  }
  return absl::InvalidArgumentError("unknown recording format");
}

absl::Status SaveRecording(const v1::Calls& calls, const std::string& path) {
  ASSIGN_OR_RETURN(RecordingFormat format, RecordingFormatFromPath(path));
  absl::StatusOr<std::string> bytes = SerializeRecording(calls, format);
  if (!bytes.ok()) return PrefixPath(path, bytes.status());

  // The temporary sits beside `path` so the rename stays on one file system.
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return ErrnoError(path, "cannot create a temporary file", errno);
  absl::Status status = WriteAll(fd, *bytes);
  if (status.ok() && fchmod(fd, 0644) != 0) {
    status = absl::ErrnoToStatus(errno, "chmod");
  }
  if (status.ok() && fsync(fd) != 0) {
    status = absl::ErrnoToStatus(errno, "fsync");
  }
  if (close(fd) != 0 && status.ok()) {
    status = absl::ErrnoToStatus(errno, "close");
  }
  if (status.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    status = absl::ErrnoToStatus(errno, "rename");
  }
  if (!status.ok()) {
    unlink(tmp.c_str());
    return PrefixPath(path, status);
  }
  return absl::OkStatus();
}

uint64_t DTypeSize(v1::DType dtype) {
  const DTypeInfo* info = FindDType(dtype);
  return info == nullptr ? 0 : info->size;
}

std::optional<uint64_t> BufferBytes(const v1::Buffer& buffer) {
  uint64_t bytes = DTypeSize(buffer.dtype());
  for (uint64_t extent : buffer.shape()) {
    if (__builtin_mul_overflow(bytes, extent, &bytes)) return std::nullopt;
  }
  return bytes;
}

std::string_view DTypeName(v1::DType dtype) {
  const DTypeInfo* info = FindDType(dtype);
  return info == nullptr ? "unspecified" : info->name;
}

}  // namespace irontune

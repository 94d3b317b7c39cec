// make-llama-recording OUT_DIR: writes the example recording,
// OUT_DIR/llama-3.2-1b.txtpb (text, the reviewable source) and
// OUT_DIR/llama-3.2-1b.rec (binary, deterministic), from
// examples/llama_example.cc. Exits 0 on success, 1 on any failure, 2 on bad
// usage.
#include <fstream>
#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "examples/llama_example.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"

namespace irontune::examples {
namespace {

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string Deterministic(const v1::Calls& calls) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    calls.SerializeToCodedStream(&coded);
  }
  return bytes;
}

absl::Status Run(const std::string& dir) {
  absl::StatusOr<v1::Calls> calls = MakeLlamaCalls();
  if (!calls.ok()) return calls.status();

  google::protobuf::TextFormat::Printer printer;
  printer.SetUseShortRepeatedPrimitives(true);  // shape: [256, 2048]
  std::string text;
  if (!printer.PrintToString(*calls, &text)) {
    return absl::InternalError("cannot print the recording as text");
  }
  const std::string stem = absl::StrCat(dir, "/llama-3.2-1b");
  absl::Status status = WriteFile(stem + ".txtpb", kTextHeader + text);
  if (!status.ok()) return status;
  return WriteFile(stem + ".rec", Deterministic(*calls));
}

}  // namespace
}  // namespace irontune::examples

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make-llama-recording OUT_DIR\n";
    return 2;
  }
  absl::Status status = irontune::examples::Run(argv[1]);
  if (!status.ok()) {
    std::cerr << "make-llama-recording: " << status << "\n";
    return 1;
  }
  return 0;
}

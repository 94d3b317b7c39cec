// Fuzz target: the profile loader (common/profile.h). Whatever FromJson
// accepts, ToJson writes as text FromJson reads back to the same text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/profile.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  QuietProtobuf();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<irontune::Profile> profile =
      irontune::Profile::FromJson(text, irontune::IsKnownTunable);
  if (!profile.ok()) {
    FUZZ_CHECK(!profile.status().message().empty());
    return 0;
  }
  const std::string json = profile->ToJson();
  absl::StatusOr<irontune::Profile> again =
      irontune::Profile::FromJson(json, irontune::IsKnownTunable);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->ToJson() == json);
  FUZZ_CHECK(again->size() == profile->size());
  for (const irontune::v1::ProfileEntry& entry : profile->proto().entries()) {
    (void)profile->Match(entry.operator_class(), entry.dims());
  }
  return 0;
}

// Fuzz target: the service's request validation (daemon/scheduler/requests.h)
// on a request parsed from the input's bytes: a MeasureRequest
// (IRONTUNE_FUZZ_REQUEST 0) or an AutotuneRequest (1). What validation
// accepts must be safe to plan: MeasurePlanOf / AutotuneOptionsOf run on
// it, as the worker would.
#include <cstddef>
#include <cstdint>

#include "daemon/scheduler/requests.h"
#include "tests/fuzz/fuzz_check.h"

#ifndef IRONTUNE_FUZZ_REQUEST
#define IRONTUNE_FUZZ_REQUEST 0
#endif

namespace {

[[maybe_unused]] irontune::Platform Strix() {
  irontune::Platform p;
  p.name = "NPU Strix";
  p.generation = "npu2";
  p.columns = 8;
  p.core_mhz = 1800;
  p.hw_contexts = 16;
  p.full_elf = true;
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  QuietProtobuf();
#if IRONTUNE_FUZZ_REQUEST == 0
  irontune::v1::MeasureRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::Status valid = irontune::ValidateMeasureRequest(request);
  if (!valid.ok()) {
    FUZZ_CHECK(!valid.message().empty());
    return 0;
  }
  static const irontune::Platform platform = Strix();
  (void)irontune::MeasurePlanOf(request, platform);
#else
  irontune::v1::AutotuneRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::Status valid = irontune::ValidateAutotuneRequest(request);
  if (!valid.ok()) {
    FUZZ_CHECK(!valid.message().empty());
    return 0;
  }
  static const irontune::Platform platform = Strix();
  (void)irontune::AutotuneOptionsOf(request, platform, "");
#endif
  return 0;
}

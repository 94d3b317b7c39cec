#include "daemon/npu/builder.h"

#include "absl/strings/str_cat.h"

namespace irontune {

absl::Status CheckBuildRequest(const BuildRequest& request) {
  if (request.steps < 1 || request.steps > kMaxBuildSteps) {
    return absl::InvalidArgumentError(absl::StrCat(
        "steps must be in [1, ", kMaxBuildSteps, "], not ", request.steps));
  }
  if (request.packaging != v1::PACKAGING_FULL_ELF &&
      request.packaging != v1::PACKAGING_XCLBIN_CHAIN) {
    return absl::InvalidArgumentError("packaging is unspecified");
  }
  if (request.op.class_name().empty())
    return absl::InvalidArgumentError("the operator has no class");
  if (request.platform.generation.empty())
    return absl::InvalidArgumentError("the platform has no generation");
  return absl::OkStatus();
}

}  // namespace irontune

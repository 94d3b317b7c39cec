#include "daemon/npu/builder.h"

#include "absl/strings/str_cat.h"
#include "common/design.h"
#include "daemon/base/sha256.h"

namespace irontune {

std::string RequestKey(const BuildRequest& request) {
  return Sha256Hex(absl::StrCat(
      "build-request/1\n", request.platform.generation, "\n",
      request.platform.name, "\n", request.steps, "\n",
      request.distinct ? 1 : 0, "\n", static_cast<int>(request.packaging), "\n",
      DesignBytes(request.op)));
}

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

std::string RefusalOf(const BuildOutcome& outcome) {
  if (outcome.artifact) return std::string();
  return outcome.refusal.empty() ? std::string("refused without a reason")
                                 : outcome.refusal;
}

absl::StatusOr<std::string> Builder::Fit(const BuildRequest& request) {
  absl::StatusOr<BuildOutcome> outcome = Build(request);
  if (!outcome.ok()) return outcome.status();
  return RefusalOf(*outcome);
}

}  // namespace irontune

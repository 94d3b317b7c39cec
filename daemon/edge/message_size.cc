#include "daemon/edge/message_size.h"

#include "absl/strings/str_cat.h"

namespace irontune {

bool IsBigMessageRpc(Rpc rpc) {
  return rpc == Rpc::kAutotune || rpc == Rpc::kMeasure ||
         rpc == Rpc::kImportCache;
}

absl::Status CheckSmallRequest(Rpc rpc, uint64_t bytes,
                               const AdmissionLimits& limits) {
  if (IsBigMessageRpc(rpc) || bytes <= limits.small_message_bytes) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "a ", RpcName(rpc), " request of ", FormatBytes(bytes),
      " is over the limit of ", FormatBytes(limits.small_message_bytes),
      " (--max-small-message-bytes)"));
}

}  // namespace irontune

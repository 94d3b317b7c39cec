#include "daemon/edge/peer_properties.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace irontune {
namespace {

constexpr char kUid[] = "irontune.local.uid";
constexpr char kGid[] = "irontune.local.gid";
constexpr char kUser[] = "irontune.local.user";
constexpr char kRole[] = "irontune.local.role";

std::optional<std::string> One(const grpc::AuthContext& context,
                               const char* name) {
  const std::vector<grpc::string_ref> values = context.FindPropertyValues(name);
  if (values.size() != 1) return std::nullopt;
  return std::string(values[0].data(), values[0].size());
}

}  // namespace

void StampLocalPeer(const LocalPeer& peer, grpc::AuthContext& context) {
  if (!context.FindPropertyValues(kUid).empty()) return;
  context.AddProperty(kUser, peer.user);
  context.AddProperty(kGid, absl::StrCat(peer.gid));
  context.AddProperty(kRole, LocalRoleName(peer.role));
  context.AddProperty(kUid, absl::StrCat(peer.uid));  // last: the marker
}

std::optional<LocalPeer> ReadLocalPeer(const grpc::AuthContext& context) {
  const std::optional<std::string> uid = One(context, kUid);
  const std::optional<std::string> gid = One(context, kGid);
  const std::optional<std::string> user = One(context, kUser);
  const std::optional<std::string> role = One(context, kRole);
  LocalPeer peer;
  if (!uid || !gid || !user || !role || !absl::SimpleAtoi(*uid, &peer.uid) ||
      !absl::SimpleAtoi(*gid, &peer.gid)) {
    return std::nullopt;
  }
  absl::StatusOr<LocalRole> parsed = ParseLocalRole(*role);
  if (!parsed.ok()) return std::nullopt;
  peer.user = *user;
  peer.role = *parsed;
  peer.groups = {peer.gid};
  return peer;
}

}  // namespace irontune

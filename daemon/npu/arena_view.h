// A full ELF's buffers as views into its byte arenas (IRON
// iron/common/image/fusion.py @ 05a1d408, ArgumentSizes; artifacts.py @
// 528f4d3d, Artifacts.buffers): the one home of the rules a view follows,
// read by the builder protocol (a reply) and the XRT manifest (a stored
// entry).
//
// Pure; thread-safe.
#ifndef IRONTUNE_DAEMON_NPU_ARENA_VIEW_H_
#define IRONTUNE_DAEMON_NPU_ARENA_VIEW_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace irontune {

// A view's offset is a multiple of the shim DMA's 32-bit word (fusion.py
// SHIM_ADDRESS_ALIGNMENT).
inline constexpr uint64_t kArenaViewAlignment = 4;

struct ArenaView {
  size_t arena = 0;  // index of its arena
  uint64_t offset = 0;
  uint64_t nbytes = 0;
};

// Two views of one arena that overlap without being the same view (a
// buffer steps share is listed once per step at one place): their indices
// into `views`, the later-placed first; nullopt when none do.
inline std::optional<std::pair<size_t, size_t>> OverlappingViews(
    const std::vector<ArenaView>& views) {
  std::vector<std::tuple<size_t, uint64_t, uint64_t, size_t>> placed;
  placed.reserve(views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    placed.emplace_back(views[i].arena, views[i].offset, views[i].nbytes, i);
  }
  std::sort(placed.begin(), placed.end());
  for (size_t i = 1; i < placed.size(); ++i) {
    const auto& [arena, offset, nbytes, at] = placed[i];
    const auto& [parena, poffset, pnbytes, pat] = placed[i - 1];
    if (arena != parena || (offset == poffset && nbytes == pnbytes)) continue;
    if (offset < poffset + pnbytes) return std::make_pair(at, pat);
  }
  return std::nullopt;
}

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_NPU_ARENA_VIEW_H_

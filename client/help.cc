#include <string>
#include <string_view>
#include <utility>

#include "client/command.h"

namespace irontune {
namespace {

// The paragraph `irontune-client COMMAND --help` opens with, for each
// command, in the order `irontune-client --help` lists them.
constexpr std::pair<std::string_view, std::string_view> kCommandHelp[] = {
    {"inspect",
     "Print a recording's calls, its operator shapes and, for each shape, "
     "its tunables, their domain sizes and the size of the setting space."},
    {"convert",
     "Convert a recording between binary (.rec), text (.txtpb) and JSON "
     "(.json), by the files' extensions. The input is validated first."},
    {"points",
     "Print the contexts a design whose work follows the context is timed "
     "at: at most COUNT contexts halving down from CONTEXT, each a multiple "
     "of UNIT, weighted by the trapezoid rule (the weights sum to 1). Use "
     "them as a recording's points."},
    {"submit",
     "Tune a model's recorded calls on irontuned: the recording (and "
     "profile) are validated here first, progress streams to stderr, then "
     "the diff against the profile is printed. A setting replaces the one "
     "the profile runs only when it is faster beyond the noise and by more "
     "than --min-gain of the step, and wins again when re-timed. --check "
     "fails (exit 3) only on a changed entry whose gain over the model's "
     "calls, less 2 noises, clears --check-min-gain (a share of the model's "
     "time per pass, or microseconds); the diff lists every entry that "
     "moved. Shapes are "
     "tuned most weighted time first; the eta is the plan of NPU time left, "
     "corrected by what the shapes done took. --budget caps the NPU time: "
     "a shape begins only while some is left and is then finished, and the "
     "shapes never begun keep their entries and are listed as untuned."},
    {"watch",
     "Follow a job's events (those so far, then the rest) and print its "
     "result."},
    {"result",
     "Print a finished job's result: an autotune's diff (and, with "
     "--write, its profile), a measurement's table."},
    {"measure",
     "Time settings of one operator of a recording beside its recorded "
     "setting, e.g.\n  measure model.rec --shape 'GEMM M=256 K=2048 "
     "N=2048' --setting tile_m=128,tile_n=64 --setting tile_m=32"},
    {"status",
     "Show the daemon: its device and power mode, the running job, the "
     "queue and the cache."},
    {"jobs", "List jobs, newest first: queued, running and finished."},
    {"cancel",
     "Cancel a queued or running job; it stops within a round. Prints the "
     "job's state afterwards. A submit-role token may cancel only its own "
     "jobs; admin any."},
    {"health",
     "Ask the daemon's gRPC health service (grpc.health.v1) whether it "
     "serves: prints SERVING and exits 0, else exits 1. Needs no token, so "
     "probes can use it over TLS (deploy/kubernetes)."},
    {"stats", "Rows, size and hit rate of the daemon's cache."},
    {"export",
     "Write the cache as JSON lines to FILE (default: standard output). "
     "Needs the admin role."},
    {"import",
     "Send FILE's JSON lines (as `cache export` wrote them) to the "
     "daemon's cache. Rows measured under another power mode are "
     "refused. The daemon records who imported which file when, as an "
     "import `cache imports` lists. FILE may instead be IRON's cost "
     "files: its costs/ tree (or any directory under it), one <key>.json "
     "or a CostTable JSON; the client prints how many figures were "
     "imported and each record skipped, with why. Needs the admin role."},
    {"imports",
     "List the imports the daemon's cache keeps, newest first: id, when, "
     "who (the token's name), lines imported, rows still kept, and the file "
     "name. Needs the admin role."},
    {"drop-import",
     "Remove from the daemon's cache every row import ID added (rows "
     "measured on the box since are kept) and mark it dropped. Needs the "
     "admin role."},
    {"clear",
     "Empty the daemon's cache: every measurement, imported IRON figure and "
     "builder verdict goes (the imports are marked dropped), so the next "
     "job times every design again. Asks for --yes. Needs the admin role."},
};

}  // namespace

std::string CommandHelp(std::string_view name) {
  for (const auto& [command, help] : kCommandHelp) {
    if (command == name) return std::string(help);
  }
  return "";
}

}  // namespace irontune

#include "client/cache_commands.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/iron_cost_files.h"
#include "client/remote.h"
#include "client/render.h"
#include "client/replace_file.h"
#include "client/rpc.h"
#include "common/power_modes.h"

namespace irontune {
namespace {

// A table of the imports, newest first.
std::string ImportsText(const v1::ListImportsResponse& r) {
  std::string out =
      absl::StrFormat("%6s  %-20s  %-16s  %7s  %7s  %-8s  %s\n", "id",
                      "imported", "by", "lines", "rows", "state", "source");
  for (const v1::ImportRecord& i : r.imports()) {
    const absl::Time when = absl::FromUnixMillis(i.imported_unix_ms());
    absl::StrAppendFormat(
        &out, "%6d  %-20s  %-16s  %7d  %7d  %-8s  %s\n", i.id(),
        absl::FormatTime("%Y-%m-%d %H:%M:%S", when, absl::UTCTimeZone()),
        i.imported_by().empty() ? i.peer() : i.imported_by(), i.lines(),
        i.rows(), i.dropped_unix_ms() ? "dropped" : "kept", i.source());
  }
  return out;
}

struct StatsCommand {
  static constexpr char kName[] = "stats";

  void Bind(CLI::App&) {}

  int Run(const CommandContext& ctx) const {
    return CallAndPrint(
        ctx, &TunerConnection::GetStatus, v1::GetStatusRequest(),
        [](const v1::StatusResponse& status) {
          const v1::CacheSummary& c = status.cache();
          return absl::StrFormat(
              "rows      %d\nbytes     %d\nhits      %d\n"
              "misses    %d\nhit rate  %.1f%%\n",
              c.rows(), c.bytes(), c.hits(), c.misses(), 100 * c.hit_rate());
        });
  }
};

struct ExportCommand {
  static constexpr char kName[] = "export";
  std::string file;
  std::string iron;
  std::string pmode;

  void Bind(CLI::App& cmd) {
    CLI::Option* to_file =
        cmd.add_option("FILE", file, "where to write (default: stdout)");
    cmd.add_option("--iron", iron,
                   "write IRON's cost cache layout under DIR instead: "
                   "DIR/<platform>/<pmode>/<key>.json, one file per figure "
                   "IRON can look up (docs/iron-costs.md)")
        ->type_name("DIR")
        ->excludes(to_file);
    cmd.add_option("--pmode", pmode,
                   "with --iron: xrt-smi's spelling of the power mode on the "
                   "box that reads the files (default: the mode capitalized, "
                   "e.g. Default)")
        ->type_name("TEXT")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              const std::string mode = absl::AsciiStrToLower(text);
              for (std::string_view known : kPowerModeNames) {
                if (mode == known) return "";
              }
              return "not a power mode (" + PowerModeNamesText() +
                     ", in any case)";
            },
            "PMODE"));
  }

  // Writes IRON's layout under `iron`; prints what was written and what
  // was skipped, by reason.
  int RunIron(const CommandContext& ctx) const {
    const Daemon daemon(ctx, kCacheTimeoutS);
    IronCostWriter writer(iron, pmode);
    absl::Status failed;
    absl::Status s = daemon.tuner().ExportCache(daemon.timeout_s(),
                                                [&](const std::string& line) {
                                                  failed = writer.Add(line);
                                                  return failed.ok();
                                                });
    if (!failed.ok()) return Fail(ctx.io.err, failed);
    if (!s.ok()) return daemon.Fail(s);
    const IronExportCounts& counts = writer.counts();
    ctx.io.out << "wrote " << counts.written << " IRON cost "
               << (counts.written == 1 ? "file" : "files") << " under " << iron
               << "; skipped " << counts.skipped_total() << "\n";
    for (const auto& [why, n] : counts.skipped) {
      ctx.io.out << "  skipped " << n << " " << why << "\n";
    }
    return kExitOk;
  }

  // Streams the export to `write`, one line at a time while it returns
  // true; returns the call's status and counts the lines written in
  // `lines`.
  static absl::Status Export(
      const Daemon& daemon,
      const std::function<bool(const std::string&)>& write, uint64_t* lines) {
    return daemon.tuner().ExportCache(daemon.timeout_s(),
                                      [&](const std::string& line) {
                                        ++*lines;
                                        return write(line + "\n");
                                      });
  }

  // Exports to `file` through a FileReplacement, so a failed export leaves
  // no half file and nothing is written through a symlink.
  int ExportToFile(const CommandContext& ctx, const Daemon& daemon,
                   uint64_t* lines) const {
    FileReplacement out(file);
    if (!out.status().ok()) return Fail(ctx.io.err, out.status());
    absl::Status s = Export(
        daemon, [&](const std::string& text) { return out.Append(text); },
        lines);
    if (!s.ok() && out.status().ok()) return daemon.Fail(s);
    if (absl::Status written = out.Commit(); !written.ok()) {
      return Fail(ctx.io.err, written);
    }
    return kExitOk;
  }

  int Run(const CommandContext& ctx) const {
    if (!iron.empty()) return RunIron(ctx);
    if (!pmode.empty()) {
      return UsageError(ctx.io.err, "--pmode is for --iron only");
    }
    const Daemon daemon(ctx, kCacheTimeoutS);
    uint64_t lines = 0;
    if (file.empty()) {
      absl::Status s = Export(
          daemon,
          [&](const std::string& text) {
            return static_cast<bool>(ctx.io.out << text);
          },
          &lines);
      if (!s.ok()) return daemon.Fail(s);
    } else if (int code = ExportToFile(ctx, daemon, &lines); code != kExitOk) {
      return code;
    }
    ctx.io.err << "exported " << lines << " lines"
               << (file.empty() ? "" : absl::StrCat(" to ", file)) << "\n";
    return kExitOk;
  }
};

struct ImportCommand {
  static constexpr char kName[] = "import";
  std::string file;

  void Bind(CLI::App& cmd) {
    cmd.add_option("FILE", file,
                   "the export to read, or IRON's cost files: a costs/ "
                   "directory, a <key>.json or a CostTable")
        ->required();
  }

  int Run(const CommandContext& ctx) const {
    absl::StatusOr<std::optional<std::vector<std::string>>> iron =
        IronImportLines(file);
    if (!iron.ok()) return Fail(ctx.io.err, iron.status());
    if (iron->has_value()) return RunIron(ctx, **iron);
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      return Fail(ctx.io.err,
                  absl::NotFoundError(absl::StrCat("cannot read ", file)));
    }
    const Daemon daemon(ctx, kCacheTimeoutS);
    absl::StatusOr<v1::ImportCacheResponse> imported =
        daemon.tuner().ImportCache(daemon.timeout_s(), file,
                                   [&](std::string* line) {
                                     while (std::getline(in, *line)) {
                                       if (!line->empty()) return true;
                                     }
                                     return false;
                                   });
    if (!imported.ok()) return daemon.Fail(imported.status());
    ctx.io.out << "imported " << imported->imported() << " lines from " << file
               << (imported->import_id() == 0
                       ? ""
                       : absl::StrCat(" (import ", imported->import_id(), ")"))
               << "\n";
    return kExitOk;
  }

  // Sends IRON's cost files, one line each; says what was imported and
  // what was skipped, and why.
  int RunIron(const CommandContext& ctx,
              const std::vector<std::string>& lines) const {
    const Daemon daemon(ctx, kCacheTimeoutS);
    size_t next = 0;
    absl::StatusOr<v1::ImportCacheResponse> imported =
        daemon.tuner().ImportCache(daemon.timeout_s(), file,
                                   [&](std::string* line) {
                                     if (next == lines.size()) return false;
                                     *line = lines[next++];
                                     return true;
                                   });
    if (!imported.ok()) return daemon.Fail(imported.status());
    ctx.io.out << "imported " << imported->imported() << " IRON figures from "
               << lines.size() << (lines.size() == 1 ? " file" : " files")
               << " in " << file
               << (imported->import_id() == 0
                       ? ""
                       : absl::StrCat(" (import ", imported->import_id(), ")"))
               << "; skipped " << imported->skipped_size() << "\n";
    for (const std::string& why : imported->skipped()) {
      ctx.io.out << "  skipped " << why << "\n";
    }
    return kExitOk;
  }
};

struct ImportsCommand {
  static constexpr char kName[] = "imports";
  bool json = false;

  void Bind(CLI::App& cmd) {
    AddJsonFlag(cmd, &json, "print the ListImportsResponse as JSON");
  }

  int Run(const CommandContext& ctx) const {
    return CallAndPrint(ctx, &TunerConnection::ListImports,
                        v1::ListImportsRequest(), JsonOr(json, ImportsText));
  }
};

struct DropImportCommand {
  static constexpr char kName[] = "drop-import";
  uint64_t id = 0;

  void Bind(CLI::App& cmd) {
    cmd.add_option("ID", id, "the import's id, as `cache imports` lists it")
        ->required();
  }

  int Run(const CommandContext& ctx) const {
    v1::DropImportRequest request;
    request.set_id(id);
    return CallAndPrint(ctx, &TunerConnection::DropImport, request,
                        [this](const v1::DropImportResponse& r) {
                          return absl::StrCat("dropped import ", id, ": ",
                                              r.rows(), " rows removed\n");
                        });
  }
};

struct ClearCommand {
  static constexpr char kName[] = "clear";
  bool yes = false;

  void Bind(CLI::App& cmd) {
    cmd.add_flag("--yes", yes,
                 "confirm: the daemon's cache is emptied, which cannot be "
                 "undone");
  }

  int Run(const CommandContext& ctx) const {
    if (!yes) {
      return UsageError(ctx.io.err,
                        "cache clear removes every measurement and verdict "
                        "the daemon's cache holds, so every design is timed "
                        "again; pass --yes to confirm");
    }
    return CallAndPrint(
        ctx, &TunerConnection::ClearCache, v1::ClearCacheRequest(),
        [](const v1::ClearCacheResponse& r) {
          return absl::StrCat("cleared the cache: ", r.measurements(),
                              " measurements, ", r.iron_costs(),
                              " IRON figures, ", r.verdicts(),
                              " builder verdicts removed\n");
        });
  }
};

}  // namespace

void AddCacheCommands(CLI::App& app, const CommandContext& ctx) {
  auto* cache = app.add_subcommand(
      "cache",
      "The daemon's measurement cache: stats, export, import, imports, "
      "drop-import, clear.");
  cache->require_subcommand(1);
  AddCommands<StatsCommand, ExportCommand, ImportCommand, ImportsCommand,
              DropImportCommand, ClearCommand>(*cache, ctx);
}

}  // namespace irontune

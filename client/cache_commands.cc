#include "client/cache_commands.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/remote.h"
#include "client/rpc.h"

namespace irontune {
namespace {

void AddStats(CLI::App& cache, const CommandContext& ctx) {
  auto* cmd = cache.add_subcommand(
      "stats", "Rows, size and hit rate of the daemon's cache.");
  cmd->callback([=] {
    *ctx.run = [=]() -> int {
      const std::string server =
          ResolveServer(ctx.remote.server, ctx.env.server);
      absl::StatusOr<v1::StatusResponse> s = ConnectTuner(server)->GetStatus(
          ResolveTimeout(ctx.remote.timeout_s, kUnaryTimeoutS));
      if (!s.ok()) return FailRpc(ctx.io.err, s.status(), server);
      const v1::CacheSummary& c = s->cache();
      ctx.io.out << absl::StrFormat(
          "rows      %d\nbytes     %d\nhits      %d\nmisses    %d\n"
          "hit rate  %.1f%%\n",
          c.rows(), c.bytes(), c.hits(), c.misses(), 100 * c.hit_rate());
      return kExitOk;
    };
  });
}

void AddExport(CLI::App& cache, const CommandContext& ctx) {
  auto* cmd = cache.add_subcommand(
      "export",
      "Write the cache as JSON lines to FILE (default: standard output).");
  auto file = std::make_shared<std::string>();
  cmd->add_option("FILE", *file, "where to write (default: stdout)");
  cmd->callback([=] {
    *ctx.run = [=]() -> int {
      const std::string server =
          ResolveServer(ctx.remote.server, ctx.env.server);
      // Written beside the target and renamed, so a failed export leaves
      // no half file.
      const std::string tmp = absl::StrCat(*file, ".tmp");
      std::ofstream f;
      if (!file->empty()) {
        f.open(tmp, std::ios::binary | std::ios::trunc);
        if (!f) {
          return Fail(ctx.io.err, absl::PermissionDeniedError(
                                      absl::StrCat("cannot write ", tmp)));
        }
      }
      std::ostream& out = file->empty() ? ctx.io.out : f;
      uint64_t lines = 0;
      absl::Status s = ConnectTuner(server)->ExportCache(
          ResolveTimeout(ctx.remote.timeout_s, kCacheTimeoutS),
          [&](const std::string& line) {
            out << line << "\n";
            ++lines;
            return static_cast<bool>(out);
          });
      if (!file->empty()) {
        f.close();
        if (!s.ok() || !f || std::rename(tmp.c_str(), file->c_str()) != 0) {
          std::remove(tmp.c_str());
          if (s.ok()) {
            return Fail(ctx.io.err, absl::DataLossError(
                                        absl::StrCat("cannot write ", *file)));
          }
        }
      }
      if (!s.ok()) return FailRpc(ctx.io.err, s, server);
      ctx.io.err << "exported " << lines << " lines"
                 << (file->empty() ? "" : absl::StrCat(" to ", *file)) << "\n";
      return kExitOk;
    };
  });
}

void AddImport(CLI::App& cache, const CommandContext& ctx) {
  auto* cmd = cache.add_subcommand(
      "import",
      "Send FILE's JSON lines (as `cache export` wrote them) to the "
      "daemon's cache. Rows measured under another power mode are "
      "refused.");
  auto file = std::make_shared<std::string>();
  cmd->add_option("FILE", *file, "the export to read")->required();
  cmd->callback([=] {
    *ctx.run = [=]() -> int {
      const std::string server =
          ResolveServer(ctx.remote.server, ctx.env.server);
      std::ifstream in(*file, std::ios::binary);
      if (!in) {
        return Fail(ctx.io.err,
                    absl::NotFoundError(absl::StrCat("cannot read ", *file)));
      }
      absl::StatusOr<uint64_t> imported = ConnectTuner(server)->ImportCache(
          ResolveTimeout(ctx.remote.timeout_s, kCacheTimeoutS),
          [&](std::string* line) {
            while (std::getline(in, *line)) {
              if (!line->empty()) return true;
            }
            return false;
          });
      if (!imported.ok()) return FailRpc(ctx.io.err, imported.status(), server);
      ctx.io.out << "imported " << *imported << " lines from " << *file << "\n";
      return kExitOk;
    };
  });
}

}  // namespace

void AddCacheCommands(CLI::App& app, const CommandContext& ctx) {
  auto* cache = app.add_subcommand(
      "cache", "The daemon's measurement cache: stats, export, import.");
  cache->require_subcommand(1);
  AddStats(*cache, ctx);
  AddExport(*cache, ctx);
  AddImport(*cache, ctx);
}

}  // namespace irontune

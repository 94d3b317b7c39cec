#include "daemon/fleet/fleet_rows.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "daemon/base/log_safe.h"
#include "daemon/store/cache_key.h"
#include "daemon/store/cache_schema.h"
#include "spdlog/spdlog.h"

namespace irontune {
namespace {

std::string ModeName(const FleetPartition& partition) {
  return std::string(PowerModeName(partition.power_mode));
}

// Why `row` may not be merged into `partition`; "" when it may.
std::string FigureRefusal(const FleetPartition& partition,
                          const CacheEntry& row) {
  if (!IsCacheKeyDigest(row.key)) return "not a cache key digest";
  const std::string& mode = row.measurement.power_mode();
  if (!mode.empty() && mode != PowerModeName(partition.power_mode)) {
    return absl::StrCat("timed at power mode ", LogSafe(mode, 32),
                        ", not the partition's ", ModeName(partition));
  }
  const double t = row.measurement.t_step_us();
  if (!std::isfinite(t) || t < 0) {
    return absl::StrCat("step time ", t, " is not a finite time");
  }
  const FigureTiming& timing = row.timing;
  constexpr uint32_t kMost = std::numeric_limits<int32_t>::max();
  if ((!timing.known() && !(timing == FigureTiming{})) ||
      timing.rounds > kMost || timing.calls > kMost) {
    return absl::StrCat("a Timing of ", timing.rounds, " rounds x ",
                        timing.calls, " calls");
  }
  return "";
}

// A figure's Timing read from columns `rounds` and `calls` of row `i`.
absl::StatusOr<FigureTiming> TimingAt(const pg::Result& rows, int i, int rounds,
                                      int calls) {
  ASSIGN_OR_RETURN(int64_t r, rows.Int(i, rounds));
  ASSIGN_OR_RETURN(int64_t c, rows.Int(i, calls));
  return FigureTiming{static_cast<uint32_t>(r), static_cast<uint32_t>(c)};
}

// The order of a key's figures, the most precise first (cache.h).
constexpr char kRanked[] =
    "r.rounds::bigint * r.calls DESC, r.written DESC, r.rounds DESC";

void Refuse(MergeCounts& counts, std::string_view what, std::string_view key,
            std::string_view why) {
  std::string line = absl::StrCat(std::string(what), " ", LogSafe(key, 80),
                                  ": ", std::string(why));
  spdlog::warn("fleet store: refused {}", line);
  counts.refused.push_back(std::move(line));
}

// The rows `table` (aliased r) holds in a partition: a select's FROM and
// WHERE, $1 to $3 being InPartition's.
std::string FromPartition(std::string_view table) {
  return absl::StrCat(" FROM irontune.", std::string(table),
                      " r JOIN irontune.partitions p ON p.id = r.partition "
                      "WHERE p.platform = $1 AND p.power_mode = $2 AND "
                      "r.toolchain = $3 ");
}

// $1 to $3 of FromPartition, then `more`.
std::vector<pg::Param> InPartition(const FleetPartition& partition,
                                   std::initializer_list<pg::Param> more) {
  std::vector<pg::Param> params = {pg::Param::Text(partition.platform),
                                   pg::Param::Text(ModeName(partition)),
                                   pg::Param::Text(partition.toolchain)};
  params.insert(params.end(), more.begin(), more.end());
  return params;
}

void Count(MergeCounts& counts, const pg::Result& result) {
  if (result.affected() > 0) {
    ++counts.inserted;
  } else {
    ++counts.present;
  }
}

}  // namespace

absl::StatusOr<int64_t> PartitionId(pg::Connection& conn,
                                    const FleetPartition& partition) {
  const pg::Param params[] = {pg::Param::Text(partition.platform),
                              pg::Param::Text(ModeName(partition))};
  ASSIGN_OR_RETURN(
      pg::Result found,
      conn.Exec("SELECT id FROM irontune.partitions WHERE platform = $1 AND "
                "power_mode = $2",
                params));
  if (found.rows() == 1) return found.Int(0, 0);
  // Two boxes may create it together: the loser's insert does nothing and
  // the select after it sees the winner's row.
  RETURN_IF_ERROR(
      conn.Exec("INSERT INTO irontune.partitions(platform, power_mode) "
                "VALUES ($1, $2) ON CONFLICT DO NOTHING",
                params)
          .status());
  ASSIGN_OR_RETURN(
      pg::Result made,
      conn.Exec("SELECT id FROM irontune.partitions WHERE platform = $1 AND "
                "power_mode = $2",
                params));
  if (made.rows() != 1) {
    return absl::InternalError("the fleet store lost a partition row");
  }
  return made.Int(0, 0);
}

absl::StatusOr<MergeCounts> InsertFigures(pg::Connection& conn,
                                          const FleetPartition& partition,
                                          std::string_view box,
                                          absl::Span<const CacheEntry> rows) {
  MergeCounts counts;
  ASSIGN_OR_RETURN(int64_t id, PartitionId(conn, partition));
  for (const CacheEntry& row : rows) {
    if (std::string why = FigureRefusal(partition, row); !why.empty()) {
      Refuse(counts, "figure", row.key, why);
      continue;
    }
    v1::Measurement m = row.measurement;
    m.set_power_mode(ModeName(partition));
    ASSIGN_OR_RETURN(
        pg::Result result,
        conn.Exec("INSERT INTO irontune.figures(partition, toolchain, key, "
                  "row_schema, t_step_us, measurement, box, rounds, calls) "
                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
                  "ON CONFLICT DO NOTHING",
                  {pg::Param::Int(id), pg::Param::Text(partition.toolchain),
                   pg::Param::Text(row.key), pg::Param::Int(kCacheRowSchema),
                   pg::Param::Text(absl::StrFormat("%.17g", m.t_step_us())),
                   pg::Param::Bytes(m.SerializeAsString()),
                   pg::Param::Text(std::string(box)),
                   pg::Param::Int(row.timing.rounds),
                   pg::Param::Int(row.timing.calls)}));
    Count(counts, result);
  }
  return counts;
}

absl::StatusOr<std::vector<std::optional<v1::Measurement>>> SelectFigures(
    pg::Connection& conn, const FleetPartition& partition,
    absl::Span<const std::string> keys) {
  std::vector<std::optional<v1::Measurement>> out(keys.size());
  std::vector<std::string> digests;
  for (const std::string& key : keys) {
    if (IsCacheKeyDigest(key)) digests.push_back(key);
  }
  if (digests.empty()) return out;
  // Digests are hex digits, so the array literal needs no quoting.
  ASSIGN_OR_RETURN(
      pg::Result rows,
      conn.Exec(absl::StrCat("SELECT DISTINCT ON (r.key) r.key, r.measurement",
                             FromPartition("figures"),
                             "AND r.row_schema = $4 AND r.key = ANY($5) "
                             "ORDER BY r.key, ",
                             kRanked),
                InPartition(partition,
                            {pg::Param::Int(kCacheRowSchema),
                             pg::Param::Text(absl::StrCat(
                                 "{", absl::StrJoin(digests, ","), "}"))})));
  std::map<std::string, v1::Measurement, std::less<>> found;
  for (int i = 0; i < rows.rows(); ++i) {
    ASSIGN_OR_RETURN(std::string bytes, rows.Bytes(i, 1));
    v1::Measurement m;
    if (!m.ParseFromString(bytes)) {
      spdlog::warn("fleet store: the figure {} does not decode; read as a miss",
                   rows.Text(i, 0));
      continue;
    }
    found.emplace(std::string(rows.Text(i, 0)), std::move(m));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = found.find(keys[i]);
    if (it != found.end()) out[i] = it->second;
  }
  return out;
}

absl::StatusOr<std::vector<StoredFigure>> SelectFiguresAfter(
    pg::Connection& conn, const FleetPartition& partition, std::string_view box,
    const FigureCursor& after, size_t limit) {
  // The page is of (written, key) pairs, so the cursor (which names one)
  // never falls between two Timings of a key.
  const std::string mine = absl::StrCat(
      FromPartition("figures"),
      "AND r.row_schema = $4 AND r.box <> $5 AND (r.written, r.key) > "
      "(to_timestamp($6 / 1000000.0), $7)");
  ASSIGN_OR_RETURN(
      pg::Result rows,
      conn.Exec(
          absl::StrCat("WITH page AS (SELECT DISTINCT r.written, r.key", mine,
                       "ORDER BY r.written, r.key LIMIT $8) "
                       "SELECT r.key, r.measurement, (extract(epoch "
                       "FROM r.written) * 1000000)::bigint, r.rounds, "
                       "r.calls",
                       mine,
                       "AND (r.written, r.key) IN (SELECT * FROM page) "
                       "ORDER BY r.written, r.key, ",
                       kRanked),
          InPartition(partition,
                      {pg::Param::Int(kCacheRowSchema),
                       pg::Param::Text(std::string(box)),
                       pg::Param::Int(absl::ToUnixMicros(after.written)),
                       pg::Param::Text(after.key),
                       pg::Param::Int(static_cast<int64_t>(limit))})));
  std::vector<StoredFigure> out;
  for (int i = 0; i < rows.rows(); ++i) {
    StoredFigure f;
    f.entry.key = std::string(rows.Text(i, 0));
    ASSIGN_OR_RETURN(std::string bytes, rows.Bytes(i, 1));
    ASSIGN_OR_RETURN(int64_t micros, rows.Int(i, 2));
    f.written = absl::FromUnixMicros(micros);
    ASSIGN_OR_RETURN(f.entry.timing, TimingAt(rows, i, 3, 4));
    if (!f.entry.measurement.ParseFromString(bytes)) {
      spdlog::warn("fleet store: the figure {} does not decode; skipped",
                   f.entry.key);
      continue;
    }
    out.push_back(std::move(f));
  }
  return out;
}

absl::StatusOr<std::vector<StoredVerdict>> SelectVerdictsAfter(
    pg::Connection& conn, std::string_view platform, std::string_view box,
    const VerdictCursor& after, size_t limit) {
  ASSIGN_OR_RETURN(
      pg::Result rows,
      conn.Exec(
          "SELECT recipe_hash, environment, verdict, (extract(epoch FROM "
          "written) * 1000000)::bigint FROM irontune.verdicts WHERE platform "
          "= $1 AND row_schema = $2 AND box <> $3 AND (written, recipe_hash, "
          "environment) > (to_timestamp($4 / 1000000.0), $5, $6) ORDER BY "
          "written, recipe_hash, environment LIMIT $7",
          {pg::Param::Text(std::string(platform)),
           pg::Param::Int(kCacheRowSchema), pg::Param::Text(std::string(box)),
           pg::Param::Int(absl::ToUnixMicros(after.written)),
           pg::Param::Text(after.recipe_hash),
           pg::Param::Text(after.environment),
           pg::Param::Int(static_cast<int64_t>(limit))}));
  std::vector<StoredVerdict> out;
  for (int i = 0; i < rows.rows(); ++i) {
    StoredVerdict v;
    v.row.first.recipe_hash = std::string(rows.Text(i, 0));
    v.row.first.environment = std::string(rows.Text(i, 1));
    v.row.second = std::string(rows.Text(i, 2));
    ASSIGN_OR_RETURN(int64_t micros, rows.Int(i, 3));
    v.written = absl::FromUnixMicros(micros);
    out.push_back(std::move(v));
  }
  return out;
}

absl::StatusOr<MergeCounts> InsertVerdicts(pg::Connection& conn,
                                           std::string_view platform,
                                           std::string_view box,
                                           absl::Span<const VerdictRow> rows) {
  MergeCounts counts;
  for (const auto& [key, verdict] : rows) {
    if (key.recipe_hash.empty() || verdict.empty()) {
      Refuse(counts, "verdict", key.recipe_hash,
             "an empty recipe hash or verdict");
      continue;
    }
    ASSIGN_OR_RETURN(
        pg::Result result,
        conn.Exec(
            "INSERT INTO irontune.verdicts(platform, recipe_hash, "
            "environment, row_schema, verdict, box) VALUES ($1, $2, $3, "
            "$4, $5, $6) ON CONFLICT DO NOTHING",
            {pg::Param::Text(std::string(platform)),
             pg::Param::Text(key.recipe_hash), pg::Param::Text(key.environment),
             pg::Param::Int(kCacheRowSchema), pg::Param::Text(verdict),
             pg::Param::Text(std::string(box))}));
    Count(counts, result);
  }
  return counts;
}

absl::StatusOr<std::vector<std::optional<std::string>>> SelectVerdicts(
    pg::Connection& conn, std::string_view platform,
    absl::Span<const VerdictKey> keys) {
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  for (const VerdictKey& key : keys) {
    ASSIGN_OR_RETURN(
        pg::Result row,
        conn.Exec(
            "SELECT verdict FROM irontune.verdicts WHERE platform = $1 "
            "AND recipe_hash = $2 AND environment = $3 AND "
            "row_schema = $4",
            {pg::Param::Text(std::string(platform)),
             pg::Param::Text(key.recipe_hash), pg::Param::Text(key.environment),
             pg::Param::Int(kCacheRowSchema)}));
    out.push_back(row.rows() == 1
                      ? std::optional<std::string>(std::string(row.Text(0, 0)))
                      : std::nullopt);
  }
  return out;
}

absl::StatusOr<std::string> InsertDecision(pg::Connection& conn,
                                           const FleetPartition& partition,
                                           std::string_view box,
                                           std::string_view shape_key,
                                           std::string_view entry,
                                           std::optional<int64_t> job_id) {
  ASSIGN_OR_RETURN(int64_t id, PartitionId(conn, partition));
  RETURN_IF_ERROR(
      conn.Exec("INSERT INTO irontune.decisions(partition, toolchain, "
                "shape_key, entry, job_id, box) VALUES ($1, $2, $3, $4, $5, "
                "$6) ON CONFLICT DO NOTHING",
                {pg::Param::Int(id), pg::Param::Text(partition.toolchain),
                 pg::Param::Text(std::string(shape_key)),
                 pg::Param::Bytes(std::string(entry)),
                 job_id ? pg::Param::Int(*job_id) : pg::Param::Null(),
                 pg::Param::Text(std::string(box))})
          .status());
  ASSIGN_OR_RETURN(std::optional<std::string> standing,
                   SelectDecision(conn, partition, shape_key));
  if (!standing) return absl::InternalError("a decision row went missing");
  return *standing;
}

absl::StatusOr<std::optional<std::string>> SelectDecision(
    pg::Connection& conn, const FleetPartition& partition,
    std::string_view shape_key) {
  ASSIGN_OR_RETURN(
      pg::Result row,
      conn.Exec(
          absl::StrCat("SELECT r.entry", FromPartition("decisions"),
                       "AND r.shape_key = $4"),
          InPartition(partition, {pg::Param::Text(std::string(shape_key))})));
  if (row.rows() == 0) return std::nullopt;
  ASSIGN_OR_RETURN(std::string entry, row.Bytes(0, 0));
  return entry;
}

}  // namespace irontune

#include "client/job_flags.h"

#include <CLI/CLI.hpp>

namespace irontune {

void AddJobFlags(CLI::App* cmd, JobFlags* f) {
  cmd->add_option("--priority", f->priority,
                  "interactive (default) or batch (CI: runs after every "
                  "interactive job)")
      ->check(CLI::IsMember({"interactive", "batch"}));
  cmd->add_option("--client", f->client,
                  "who asks, for fairness and logs (default: $USER)");
  cmd->add_option("--rounds", f->rounds, "interleaved rounds (default 8)");
  cmd->add_option("--calls", f->calls, "runs per round (default 50)");
  cmd->add_option("--settle", f->settle,
                  "rounds before slow settings are cut (default 2)");
  cmd->add_option("--cutoff", f->cutoff,
                  "cut settings slower than this times the fastest "
                  "(default 1.5)");
  cmd->add_option("--repeats", f->repeats,
                  "steps in the many-step run (default 9)");
  cmd->add_option("--packaging", f->packaging,
                  "full-elf or xclbin-chain (default: full ELF where the NPU "
                  "has it)")
      ->check(CLI::IsMember({"full-elf", "xclbin-chain"}));
  cmd->add_option("--seed", f->seed, "seed of the inputs (default 0)");
  cmd->add_flag("--remeasure", f->remeasure,
                "time every setting again instead of using the cache");
}

std::string ClientName(const JobFlags& f, const ClientEnvironment& env) {
  if (!f.client.empty()) return f.client;
  if (!env.user.empty()) return env.user;
  return "irontune-client";
}

v1::Priority PriorityOf(const JobFlags& f) {
  return f.priority == "batch" ? v1::PRIORITY_BATCH : v1::PRIORITY_INTERACTIVE;
}

v1::Packaging PackagingOf(const JobFlags& f) {
  if (f.packaging == "full-elf") return v1::PACKAGING_FULL_ELF;
  if (f.packaging == "xclbin-chain") return v1::PACKAGING_XCLBIN_CHAIN;
  return v1::PACKAGING_UNSPECIFIED;
}

}  // namespace irontune

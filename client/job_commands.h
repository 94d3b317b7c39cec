// `status`, `jobs` and `cancel`: what irontuned is doing. See
// docs/client.md.
#ifndef IRONTUNE_CLIENT_JOB_COMMANDS_H_
#define IRONTUNE_CLIENT_JOB_COMMANDS_H_

#include "client/command.h"

namespace irontune {

// Registers the three commands on `app`. `ctx` outlives the parse and run.
void AddJobCommands(CLI::App& app, const CommandContext& ctx);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_JOB_COMMANDS_H_

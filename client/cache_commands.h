// `cache stats|export|import|imports|drop-import|clear`: irontuned's
// measurement cache. See docs/client.md.
#ifndef IRONTUNE_CLIENT_CACHE_COMMANDS_H_
#define IRONTUNE_CLIENT_CACHE_COMMANDS_H_

#include "client/command.h"

namespace irontune {

// Registers `cache` and its subcommands on `app`. `ctx` outlives the
// parse and run.
void AddCacheCommands(CLI::App& app, const CommandContext& ctx);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_CACHE_COMMANDS_H_

// `submit`, `watch` and `result`: tuning a model's recording on irontuned
// and getting its profile back. See docs/client.md.
#ifndef IRONTUNE_CLIENT_AUTOTUNE_COMMANDS_H_
#define IRONTUNE_CLIENT_AUTOTUNE_COMMANDS_H_

#include "client/command.h"

namespace irontune {

// Registers the three commands on `app`. `ctx` outlives the parse and run.
void AddAutotuneCommands(CLI::App& app, const CommandContext& ctx);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_AUTOTUNE_COMMANDS_H_

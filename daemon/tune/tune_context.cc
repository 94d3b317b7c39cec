#include "daemon/tune/tune_context.h"

#include "daemon/store/cache.h"

namespace irontune {

uint64_t TuneContext::cache_version() {
  const Cache* kept = cache();
  return kept == nullptr ? 0 : kept->generation();
}

}  // namespace irontune

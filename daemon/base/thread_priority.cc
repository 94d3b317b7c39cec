#include "daemon/base/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace irontune {
namespace {

id_t ThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }

}  // namespace

int ThreadNiceness() {
  errno = 0;
  return getpriority(PRIO_PROCESS, ThreadId());
}

void LowerThreadPriority() {
  setpriority(PRIO_PROCESS, ThreadId(), ThreadNiceness() + kHelperNiceness);
}

}  // namespace irontune

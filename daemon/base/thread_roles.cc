#include "daemon/base/thread_roles.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace irontune {
namespace {

id_t ThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }

// absl::Mutex rather than std::mutex: libstdc++'s is not annotated, so
// -Wthread-safety (the fuzz preset) could not check Reserved()'s callers.
ABSL_CONST_INIT absl::Mutex reserved_mu(absl::kConstInit);
std::vector<int>& Reserved() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reserved_mu) {
  static auto* cpus = new std::vector<int>;  // never destroyed
  return *cpus;
}

// Pins the calling thread to `cpus`; false if refused (or none given).
bool SetThreadCpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

}  // namespace

std::vector<int> ThreadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  }
  return out;
}

int ThreadNiceness() {
  errno = 0;
  return getpriority(PRIO_PROCESS, ThreadId());
}

std::vector<int> SpareTimingCpu() {
  const std::vector<int> mine = ThreadCpus();
  if (mine.size() < 2) return {};
  return {mine.back()};
}

void ReserveTimingCpus(const std::vector<int>& cpus) {
  absl::MutexLock lock(&reserved_mu);
  std::vector<int>& reserved = Reserved();
  reserved.insert(reserved.end(), cpus.begin(), cpus.end());
  std::sort(reserved.begin(), reserved.end());
  reserved.erase(std::unique(reserved.begin(), reserved.end()), reserved.end());
}

std::vector<int> TimingCpus() {
  absl::MutexLock lock(&reserved_mu);
  return Reserved();
}

void BecomeHelperThread() {
  setpriority(PRIO_PROCESS, ThreadId(), ThreadNiceness() + kHelperNiceness);
  const std::vector<int> timing = TimingCpus();
  const std::vector<int> mine = ThreadCpus();
  std::vector<int> rest;
  for (int cpu : mine) {
    if (!std::binary_search(timing.begin(), timing.end(), cpu)) {
      rest.push_back(cpu);
    }
  }
  if (rest.size() < mine.size()) SetThreadCpus(rest);
}

ScopedPin::ScopedPin(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  std::vector<int> before = ThreadCpus();
  if (before != cpus && SetThreadCpus(cpus)) before_ = std::move(before);
}

ScopedPin::~ScopedPin() { SetThreadCpus(before_); }

}  // namespace irontune

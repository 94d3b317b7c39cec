#include "daemon/xrt/timing_hygiene.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "daemon/base/thread_roles.h"
#include "spdlog/spdlog.h"

namespace irontune {

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::set<int> cpus;
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  for (absl::string_view piece :
       absl::StrSplit(trimmed, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> range =
        absl::StrSplit(piece, absl::MaxSplits('-', 1));
    int lo = 0, hi = 0;
    if (!absl::SimpleAtoi(range.first, &lo) ||
        !absl::SimpleAtoi(range.second.empty() ? range.first : range.second,
                          &hi) ||
        lo < 0 || hi < lo || hi > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CPU list \"", trimmed, "\": bad piece \"", piece, "\""));
    }
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

std::vector<MailboxIrq> ParseMailboxIrqs(absl::string_view text) {
  std::vector<MailboxIrq> irqs;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.find("xdna_mailbox") == absl::string_view::npos) continue;
    const size_t colon = line.find(':');
    MailboxIrq irq;
    if (colon == absl::string_view::npos ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(0, colon)),
                          &irq.irq)) {
      continue;
    }
    for (absl::string_view field :
         absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipEmpty())) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(field, &n)) break;  // the chip and name begin
      irq.count += n;
    }
    irqs.push_back(irq);
  }
  return irqs;
}

std::vector<int> NewIrqs(const std::vector<MailboxIrq>& before,
                         const std::vector<MailboxIrq>& after) {
  std::set<int> added;
  for (const MailboxIrq& a : after) {
    if (std::none_of(before.begin(), before.end(),
                     [&](const MailboxIrq& b) { return b.irq == a.irq; })) {
      added.insert(a.irq);
    }
  }
  return std::vector<int>(added.begin(), added.end());
}

absl::StatusOr<int64_t> ParseSchedstatWaitNs(absl::string_view text) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  int64_t wait = 0;
  if (fields.size() < 2 || !absl::SimpleAtoi(fields[1], &wait) || wait < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedstat \"", absl::StripAsciiWhitespace(text),
                     "\": no run-queue wait (second field)"));
  }
  return wait;
}

namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<std::vector<int>> ReadCpuList(const std::string& path) {
  const std::optional<std::string> text = ReadFile(path);
  if (!text) {
    spdlog::warn("timing hygiene: cannot read {}", path);
    return std::nullopt;
  }
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(*text);
  if (!cpus.ok()) {
    spdlog::warn("timing hygiene: {}: {}", path, cpus.status().ToString());
    return std::nullopt;
  }
  return *cpus;
}

cpu_set_t SetOf(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c < CPU_SETSIZE) CPU_SET(c, &set);
  return set;
}

void SpinOn(int cpu, const std::atomic<bool>* stop) {
  const cpu_set_t set = SetOf({cpu});
  sched_setaffinity(0, sizeof(set), &set);
  setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
  while (!stop->load(std::memory_order_relaxed)) {
  }
}

}  // namespace

TimingHygiene::TimingHygiene(HygieneOptions options)
    : options_(std::move(options)) {
  CPU_ZERO(&saved_);
  if (!options_.enabled) return;
  std::optional<std::vector<MailboxIrq>> irqs = ReadIrqs();
  if (irqs) at_open_ = *std::move(irqs);
}

TimingHygiene::~TimingHygiene() { StopSpinning(); }

std::optional<std::vector<MailboxIrq>> TimingHygiene::ReadIrqs() {
  const std::string interrupts = options_.proc_root + "/interrupts";
  const std::optional<std::string> text = ReadFile(interrupts);
  if (!text) {
    if (!warned_interrupts_) {
      spdlog::warn(
          "timing hygiene: cannot read {}; the timing thread is not "
          "pinned",
          interrupts);
      warned_interrupts_ = true;
    }
    return std::nullopt;
  }
  return ParseMailboxIrqs(*text);
}

void TimingHygiene::ContextCreated(PowerMode mode) {
  if (!options_.enabled) return;
  if (mode == PowerMode::kTurbo) {
    // The out-of-tree driver polls a turbo context's mailbox.
    if (!warned_turbo_) {
      spdlog::info(
          "timing hygiene: power mode turbo, where the amdxdna driver "
          "polls for completions; the timing thread is not pinned");
      warned_turbo_ = true;
    }
    UseIrqs({});
    return;
  }
  const std::optional<std::vector<MailboxIrq>> now = ReadIrqs();
  if (!now) return;
  const std::vector<int> added = NewIrqs(at_open_, *now);
  if (added.empty() && !warned_no_irq_) {
    spdlog::warn(
        "timing hygiene: no xdna_mailbox IRQ in {}/interrupts appeared "
        "with the hardware context; the timing thread is not pinned",
        options_.proc_root);
    warned_no_irq_ = true;
  }
  UseIrqs(added);
}

void TimingHygiene::UseIrqs(const std::vector<int>& irqs) {
  if (irqs == irqs_) return;
  irqs_ = irqs;
  std::set<int> cpus;
  for (int irq : irqs) {
    const auto list = ReadCpuList(absl::StrCat(options_.proc_root, "/irq/", irq,
                                               "/effective_affinity_list"));
    if (list) cpus.insert(list->begin(), list->end());
  }
  cpus_.assign(cpus.begin(), cpus.end());
  std::set<int> siblings;
  for (int c : cpus_) {
    const auto list =
        ReadCpuList(absl::StrCat(options_.sys_root, "/devices/system/cpu/cpu",
                                 c, "/topology/thread_siblings_list"));
    if (!list) continue;
    for (int s : *list)
      if (!cpus.count(s)) siblings.insert(s);
  }
  siblings_.assign(siblings.begin(), siblings.end());
  // Helper threads keep off them (where others remain): the timing
  // thread wakes there as each run completes.
  ReserveTimingCpus(cpus_);
  if (spin_asked_) {  // on the new siblings
    StopSpinning();
    Spin();
  }
  if (!cpus_.empty()) {
    spdlog::info(
        "timing hygiene: completions on CPU {} (IRQ {}), SMT siblings {}",
        absl::StrJoin(cpus_, ","), absl::StrJoin(irqs_, ","),
        siblings_.empty() ? "none" : absl::StrJoin(siblings_, ","));
  }
}

void TimingHygiene::Pin() {
  if (!options_.enabled || cpus_.empty() || pinned_) return;
  if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
  const cpu_set_t set = SetOf(cpus_);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    if (!warned_pin_) {
      spdlog::warn("timing hygiene: cannot pin to CPU {}: {}",
                   absl::StrJoin(cpus_, ","), std::strerror(errno));
      warned_pin_ = true;
    }
    return;
  }
  pinned_ = true;
}

void TimingHygiene::Unpin() {
  if (!pinned_) return;
  sched_setaffinity(0, sizeof(saved_), &saved_);
  pinned_ = false;
}

void TimingHygiene::Spin() {
  if (!options_.enabled || spin_asked_) return;
  spin_asked_ = true;
  stop_ = false;
  for (int cpu : siblings_) spinners_.emplace_back(SpinOn, cpu, &stop_);
}

void TimingHygiene::StopSpinning() {
  spin_asked_ = false;
  stop_ = true;
  for (std::thread& t : spinners_) t.join();
  spinners_.clear();
}

std::optional<int64_t> TimingHygiene::CpuWaitNs() {
  const std::string path = options_.proc_root + "/thread-self/schedstat";
  const std::optional<std::string> text = ReadFile(path);
  absl::StatusOr<int64_t> wait =
      text ? ParseSchedstatWaitNs(*text)
           : absl::StatusOr<int64_t>(absl::NotFoundError("cannot read"));
  if (!wait.ok()) {
    if (!warned_schedstat_) {
      spdlog::warn("timing hygiene: {}: {}; CPU waits are reported as 0", path,
                   std::string(wait.status().message()));
      warned_schedstat_ = true;
    }
    return std::nullopt;
  }
  return *wait;
}

}  // namespace irontune

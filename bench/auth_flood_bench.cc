// What a flood of large requests without a valid token costs irontuned:
// the real irontuned with --tokens on plaintext loopback TCP and a unix
// socket, sent `--calls` tokenless GetStatus and as many wrong-token
// Autotune requests of `--mb` MB each at once over each listener. Prints
// the daemon's peak RSS (VmHWM) before and after, and the codes the calls
// got; then, as a control, one valid-token request of the same size (read
// whole, then refused by its handler), to show what reading one costs.
// Prints figures; never fails.
//
// With --queue N, instead: what one submit token's padded queued jobs cost
// (issue 34): behind an admin's long Autotune on the real-time clock, N
// Autotune requests padded to --mb MB with an unknown field, each followed
// (its stream held open, as a client watching its job). Prints each one's
// code and the daemon's peak RSS after it, and its resident memory at the
// end.
//
//   auth_flood_bench [--mb 200] [--calls 4] [--queue N] [--irontuned PATH]
//
// --irontuned runs another build (e.g. one from before the call gate, or
// before the queue's byte budget) for the figure to compare with.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/base/sha256.h"
#include "grpcpp/grpcpp.h"
#include "tests/testing/process.h"
#include "tests/testing/raw_grpc.h"
#include "tests/testing/recording_fixtures.h"

namespace irontune {
namespace {

const std::string kToken = "flood-bench-token-0123456789abcdef";
const std::string kSubmitToken = "queue-bench-submit-0123456789abcd";

// A unary call that waits up to two minutes for a flood's answer.
grpc::StatusCode Call(const std::shared_ptr<grpc::Channel>& channel,
                      const char* method, const grpc::ByteBuffer& request,
                      const std::string& token) {
  return testing::RawCall(channel, method, request, token,
                          std::chrono::seconds(120));
}

std::shared_ptr<grpc::Channel> Channel(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

// `calls` tokenless GetStatus and `calls` wrong-token Autotune at once,
// each its own channel; the codes they got, counted.
std::map<int, int> Flood(const std::string& target, int calls,
                         const grpc::ByteBuffer& big) {
  std::vector<std::thread> threads;
  std::vector<int> codes(2 * calls);
  for (int i = 0; i < 2 * calls; ++i) {
    threads.emplace_back([&, i] {
      codes[i] =
          i % 2 == 0
              ? Call(Channel(target), "/irontune.v1.Tuner/GetStatus", big, "")
              : Call(Channel(target), "/irontune.v1.Tuner/Autotune", big,
                     "wrong-token-0123456789abcdef");
    });
  }
  for (std::thread& t : threads) t.join();
  std::map<int, int> counted;
  for (int c : codes) ++counted[c];
  return counted;
}

void PrintCodes(const std::map<int, int>& codes) {
  for (const auto& [code, n] : codes) {
    std::printf(" %d x %s", n,
                code == grpc::StatusCode::UNAUTHENTICATED
                    ? "UNAUTHENTICATED"
                    : std::to_string(code).c_str());
  }
  std::printf("\n");
}

// The tokens file: `bench` (admin, kToken) and `ci` (submit, kSubmitToken).
void WriteTokens(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  std::fprintf(f, "bench admin %s\n", Sha256Hex(kToken).c_str());
  std::fprintf(f, "ci submit %s\n", Sha256Hex(kSubmitToken).c_str());
  std::fclose(f);
}

// irontuned with the tokens file (written under `dir`), on 127.0.0.1:0
// and with `flags`; `*tcp` gets its TCP address. Null, with why printed,
// when it did not come up.
std::unique_ptr<e2e::Process> StartIrontuned(const std::string& daemon,
                                             const std::string& dir,
                                             std::vector<std::string> flags,
                                             std::string* tcp) {
  WriteTokens(dir + "/tokens");
  std::vector<std::string> argv = {daemon,     "--state-dir", dir + "/state",
                                   "--listen", "127.0.0.1:0", "--log-level",
                                   "info",     "--tokens",    dir + "/tokens"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto irontuned = std::make_unique<e2e::Process>("irontuned", argv, dir);
  *tcp = e2e::WaitForServingAddress(*irontuned, "127.0.0.1:", 30);
  if (tcp->empty()) {
    std::printf("irontuned did not come up: %s\n", irontuned->Stderr().c_str());
    return nullptr;
  }
  return irontuned;
}

// The flood: tokenless and wrong-token requests of `mb` MB, `calls` of each
// at once on each listener, then a valid-token control.
int FloodMain(const std::string& daemon, size_t mb, int calls) {
  const std::string dir = e2e::TempDir("bench-flood");
  const std::string sock = dir + "/sock";
  std::string tcp;
  std::unique_ptr<e2e::Process> process = StartIrontuned(
      daemon, dir, {"--listen", "unix:" + sock, "--sim-clock", "virtual"},
      &tcp);
  if (process == nullptr) return 1;
  e2e::Process& irontuned = *process;
  const pid_t pid = irontuned.pid();
  std::printf(
      "irontuned %s, --tokens; %d tokenless GetStatus + %d "
      "wrong-token Autotune of %zu MB at once per listener\n",
      daemon.c_str(), calls, calls, mb);
  const grpc::ByteBuffer big = testing::PaddedMessage(mb << 20);
  std::printf("  peak RSS at start:              %7ld KiB\n",
              e2e::ProcStatusKib(pid, "VmHWM"));
  for (const std::string& target : {tcp, "unix:" + sock}) {
    const std::map<int, int> codes = Flood(target, calls, big);
    std::printf("  peak RSS after the flood on %-18s %7ld KiB;",
                target.substr(0, 18).c_str(), e2e::ProcStatusKib(pid, "VmHWM"));
    PrintCodes(codes);
  }
  const grpc::StatusCode control =
      Call(Channel(tcp), "/irontune.v1.Tuner/GetStatus", big, kToken);
  std::printf(
      "  control, one valid-token GetStatus of %zu MB (code %d): "
      "peak RSS %ld KiB\n",
      mb, static_cast<int>(control), e2e::ProcStatusKib(pid, "VmHWM"));
  irontuned.Signal(SIGTERM);
  irontuned.Wait(15);
  return 0;
}

// A followed Autotune stream of `request` with `token`.
std::unique_ptr<testing::RawStream> Follow(const std::string& target,
                                           const grpc::ByteBuffer& request,
                                           const std::string& token) {
  return std::make_unique<testing::RawStream>(
      Channel(target), "/irontune.v1.Tuner/Autotune", request, token,
      std::chrono::seconds(120));
}

// The queue: `jobs` padded Autotune requests of `mb` MB from the submit
// token, queued behind an admin's long job, each followed.
int QueueMain(const std::string& daemon, size_t mb, int jobs) {
  const std::string dir = e2e::TempDir("bench-queue");
  std::string tcp;
  std::unique_ptr<e2e::Process> process = StartIrontuned(
      daemon, dir, {"--sim-clock", "realtime", "--sim-build-seconds", "0"},
      &tcp);
  if (process == nullptr) return 1;
  e2e::Process& irontuned = *process;
  const pid_t pid = irontuned.pid();
  std::printf(
      "irontuned %s, --tokens; %d Autotune requests padded to %zu MB from "
      "one submit token, queued behind a long job, each followed\n",
      daemon.c_str(), jobs, mb);
  const std::string busy_wire =
      testing::SmallAutotune(/*quick=*/false).SerializeAsString();
  auto busy = Follow(tcp, testing::ToByteBuffer(busy_wire), kToken);
  const grpc::Status started = busy->First();
  std::printf("  the long job: code %d; peak RSS %ld KiB\n",
              static_cast<int>(started.error_code()),
              e2e::ProcStatusKib(pid, "VmHWM"));
  const grpc::ByteBuffer padded =
      testing::PaddedRequest(testing::SmallAutotune(/*quick=*/true), mb << 20);
  std::vector<std::unique_ptr<testing::RawStream>> held;
  for (int i = 0; i < jobs; ++i) {
    held.push_back(Follow(tcp, padded, kSubmitToken));
    const grpc::Status s = held.back()->First();
    const std::string outcome = s.ok() ? "queued"
                                       : "refused, code " +
                                             std::to_string(s.error_code()) +
                                             ": " + s.error_message();
    std::printf("  job %d: peak RSS %7ld KiB; %s\n", i + 1,
                e2e::ProcStatusKib(pid, "VmHWM"), outcome.c_str());
  }
  std::printf("  at the end: resident %ld KiB, peak %ld KiB\n",
              e2e::ProcStatusKib(pid, "VmRSS"),
              e2e::ProcStatusKib(pid, "VmHWM"));
  held.clear();
  busy.reset();
  irontuned.Signal(SIGTERM);
  irontuned.Wait(15);
  return 0;
}

int Main(int argc, char** argv) {
  std::string daemon = IRONTUNE_IRONTUNED;
  size_t mb = 200;
  int calls = 4;
  int queue = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mb") mb = std::strtoul(argv[i + 1], nullptr, 10);
    if (flag == "--calls") calls = std::atoi(argv[i + 1]);
    if (flag == "--queue") queue = std::atoi(argv[i + 1]);
    if (flag == "--irontuned") daemon = argv[i + 1];
  }
  return queue > 0 ? QueueMain(daemon, mb, queue)
                   : FloodMain(daemon, mb, calls);
}

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) { return irontune::Main(argc, argv); }

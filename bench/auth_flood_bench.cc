// What a flood of large requests without a valid token costs irontuned:
// the real irontuned with --tokens on plaintext loopback TCP and a unix
// socket, sent `--calls` tokenless GetStatus and as many wrong-token
// Autotune requests of `--mb` MB each at once over each listener. Prints
// the daemon's peak RSS (VmHWM) before and after, and the codes the calls
// got; then, as a control, one valid-token request of the same size (read
// whole, then refused by its handler), to show what reading one costs.
// Prints figures; never fails.
//
//   auth_flood_bench [--mb 200] [--calls 4] [--irontuned PATH]
//
// --irontuned runs another build (e.g. one from before the call gate) for
// the figure to compare with.
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

namespace irontune {
namespace {

const std::string kToken = "flood-bench-token-0123456789abcdef";

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

int Main(int argc, char** argv) {
  std::string daemon = IRONTUNE_IRONTUNED;
  size_t mb = 200;
  int calls = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mb") mb = std::strtoul(argv[i + 1], nullptr, 10);
    if (flag == "--calls") calls = std::atoi(argv[i + 1]);
    if (flag == "--irontuned") daemon = argv[i + 1];
  }
  const std::string dir = e2e::TempDir("bench-flood");
  {
    FILE* f = std::fopen((dir + "/tokens").c_str(), "w");
    std::fprintf(f, "bench admin %s\n", Sha256Hex(kToken).c_str());
    std::fclose(f);
  }
  const std::string sock = dir + "/sock";
  e2e::Process irontuned(
      "irontuned",
      {daemon, "--state-dir", dir + "/state", "--listen", "127.0.0.1:0",
       "--listen", "unix:" + sock, "--sim-clock", "virtual", "--log-level",
       "info", "--tokens", dir + "/tokens"},
      dir);
  const std::string tcp =
      e2e::WaitForServingAddress(irontuned, "127.0.0.1:", 30);
  if (tcp.empty()) {
    std::printf("irontuned did not come up: %s\n", irontuned.Stderr().c_str());
    return 1;
  }
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

}  // namespace
}  // namespace irontune

int main(int argc, char** argv) { return irontune::Main(argc, argv); }

// Raw gRPC calls for tests and benchmarks that speak to irontuned beneath
// its generated stubs: a request of any size as bytes, sent unary to any
// method. Header-only; its users link gRPC.
#ifndef IRONTUNE_TESTS_TESTING_RAW_GRPC_H_
#define IRONTUNE_TESTS_TESTING_RAW_GRPC_H_

#include <chrono>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/client_unary_call.h"

namespace irontune::testing {

// `bytes` (at least 7) of protobuf: one unknown length-delimited field,
// number 1000, padding them out; any request message parses it.
inline grpc::ByteBuffer PaddedMessage(size_t bytes) {
  // Tag (1000 << 3 | 2) is two varint bytes, the length five.
  const size_t payload = bytes - 7;
  std::string wire = {static_cast<char>(0xC2), static_cast<char>(0x3E)};
  for (int shift = 0; shift < 28; shift += 7) {  // a 5-byte varint
    wire.push_back(static_cast<char>(((payload >> shift) & 0x7F) | 0x80));
  }
  wire.push_back(static_cast<char>((payload >> 28) & 0x7F));
  wire.resize(bytes, 'x');
  grpc::Slice slice(wire);
  return grpc::ByteBuffer(&slice, 1);
}

// The code of a unary call of `method` ("/irontune.v1.Tuner/GetStatus")
// sending `request` over `channel` with `token` ("" for none), within
// `deadline`. A server-streaming method answers a unary call with its
// status just the same.
inline grpc::StatusCode RawCall(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& method,
                                const grpc::ByteBuffer& request,
                                const std::string& token,
                                std::chrono::seconds deadline) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  grpc::ByteBuffer response;
  const grpc::internal::RpcMethod rpc(method.c_str(),
                                      grpc::internal::RpcMethod::NORMAL_RPC);
  return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
             channel.get(), rpc, &context, request, &response)
      .error_code();
}

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_TESTING_RAW_GRPC_H_

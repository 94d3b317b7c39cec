// Raw gRPC calls for tests and benchmarks that speak to irontuned beneath
// its generated stubs: a request of any size as bytes (padded with an
// unknown field), sent unary to any method or as a stream held open.
// Header-only; its users link gRPC and protobuf.
#ifndef IRONTUNE_TESTS_TESTING_RAW_GRPC_H_
#define IRONTUNE_TESTS_TESTING_RAW_GRPC_H_

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/client_unary_call.h"
#include "grpcpp/support/sync_stream.h"

namespace irontune::testing {

// `bytes` (at least 7) of protobuf wire: one unknown length-delimited
// field, number 1000, padding them out. Alone, any request message parses
// it; after a message's own encoding, it parses as that message with the
// unknown field beside its known ones.
inline std::string PaddingBytes(size_t bytes) {
  // Tag (1000 << 3 | 2) is two varint bytes, the length five.
  const size_t payload = bytes - 7;
  std::string wire = {static_cast<char>(0xC2), static_cast<char>(0x3E)};
  for (int shift = 0; shift < 28; shift += 7) {  // a 5-byte varint
    wire.push_back(static_cast<char>(((payload >> shift) & 0x7F) | 0x80));
  }
  wire.push_back(static_cast<char>((payload >> 28) & 0x7F));
  wire.resize(bytes, 'x');
  return wire;
}

inline grpc::ByteBuffer ToByteBuffer(const std::string& wire) {
  grpc::Slice slice(wire);
  return grpc::ByteBuffer(&slice, 1);
}

// `bytes` of padding alone (PaddingBytes).
inline grpc::ByteBuffer PaddedMessage(size_t bytes) {
  return ToByteBuffer(PaddingBytes(bytes));
}

// `message`, padded out to `bytes` in all by an unknown field after it.
// REQUIRES: bytes >= its own encoded size + 7.
inline grpc::ByteBuffer PaddedRequest(const google::protobuf::Message& message,
                                      size_t bytes) {
  const std::string own = message.SerializeAsString();
  return ToByteBuffer(own + PaddingBytes(bytes - own.size()));
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

// A server-streaming call of `method` sending `request` with `token` (""
// for none), within `deadline`, held open until destroyed (then
// cancelled): as a client following its job does, keeping its handler on
// the daemon.
class RawStream {
 public:
  RawStream(const std::shared_ptr<grpc::Channel>& channel, std::string method,
            const grpc::ByteBuffer& request, const std::string& token,
            std::chrono::seconds deadline)
      : method_(std::move(method)),
        rpc_(method_.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING) {
    context_.set_deadline(std::chrono::system_clock::now() + deadline);
    if (!token.empty()) {
      context_.AddMetadata("authorization", "Bearer " + token);
    }
    reader_.reset(grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
        channel.get(), rpc_, &context_, request));
  }
  ~RawStream() {
    context_.TryCancel();
    if (!finished_) reader_->Finish();
  }
  RawStream(const RawStream&) = delete;
  RawStream& operator=(const RawStream&) = delete;

  // Waits for the first message: OK when one came (its bytes in `*bytes`
  // where given; the call stays open), else the status the call ended with.
  grpc::Status First(std::string* bytes = nullptr) {
    grpc::ByteBuffer message;
    if (reader_->Read(&message)) {
      grpc::Slice slice;
      if (bytes != nullptr && message.DumpToSingleSlice(&slice).ok()) {
        bytes->assign(reinterpret_cast<const char*>(slice.begin()),
                      slice.size());
      }
      return grpc::Status::OK;
    }
    finished_ = true;
    return reader_->Finish();
  }

 private:
  const std::string method_;  // the call refers to its name
  const grpc::internal::RpcMethod rpc_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader_;
  bool finished_ = false;
};

}  // namespace irontune::testing

#endif  // IRONTUNE_TESTS_TESTING_RAW_GRPC_H_

// Large byte buffers (a weight, an output: tens or hundreds of MB) whose
// pages the kernel is asked to back with transparent huge pages before they
// are first touched. Filling a fresh 4 KiB-paged buffer costs one page fault
// per 4 KiB, which on some hosts (virtual machines) costs more than writing
// the bytes; 2 MiB pages take 512 times fewer faults. Where the kernel's
// THP mode is "always" or "never" the advice changes nothing, and where it
// is refused the buffer is still made: this is a speed hint only.
//
// A big buffer is usually a mapping of its own, unmapped when freed. Up to
// 32 MiB, glibc may instead carve it from an arena (its mmap threshold
// rises as big chunks are freed); the advice then stays on that arena
// memory after the buffer is freed, where it only lets later allocations
// there fault in huge pages too. Fixing the threshold at kBigBytes
// (mallopt) avoids that but made the example's Autotune slower (every big
// buffer faulted in afresh: 12.2 s of host work beside the device time in
// `service_bench utilisation`, against 7.3 to 8.3 s), so it is left to
// glibc.
#ifndef IRONTUNE_DAEMON_BASE_BIG_BYTES_H_
#define IRONTUNE_DAEMON_BASE_BIG_BYTES_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace irontune {

// Buffers of at least this many bytes are advised; smaller ones are made as
// any string is.
inline constexpr size_t kBigBytes = size_t{4} << 20;

// Sets `s` to `n` zero bytes. Where `s` lacks the capacity and `n` is at
// least kBigBytes, its new storage is advised before it is zeroed. Thread-
// compatible: `s` is the caller's.
void AssignZeros(std::string& s, size_t n);

// Sets `s` to a copy of `bytes`, advised as AssignZeros advises.
// REQUIRES: `bytes` does not point into `s`.
void AssignBytes(std::string& s, std::string_view bytes);

// `n` zero bytes; a copy of `bytes`: new strings made as above.
std::string ZeroBytes(size_t n);
std::string CopyBytes(std::string_view bytes);

}  // namespace irontune

#endif  // IRONTUNE_DAEMON_BASE_BIG_BYTES_H_

// Bulk memory: the one call to the system allocator (AlignedBuffer's), the machine's memory, and
// sizes written for people. A request the machine cannot meet is an AllocationFailure that names
// the size and what it was for, not a bare std::bad_alloc.
#pragma once

#include <cstddef>
#include <string>

#include "core/check.h"

namespace gpt {

// "512 B", "3.0 KiB", "1.5 GiB", "2.3 PiB" (binary units).
std::string byte_size(double bytes);

// The machine's RAM plus swap: more than this can never be resident at once (0 when unknown).
std::size_t system_memory_bytes();

// An allocation that failed: a runtime error (exit code 1) whose message names the size, what it
// was for (when given) and the machine's memory.
class AllocationFailure : public UserError {
 public:
  explicit AllocationFailure(double bytes, const std::string& purpose = "");
  double bytes() const { return bytes_; }

 private:
  double bytes_;
};

// `bytes` (rounded up to a multiple of 64), 64-byte aligned and uninitialised; free with std::free.
// From 2 MiB on: rounded up to and aligned on 2 MiB, with the advice that lets Linux back it with
// transparent huge pages.
// AllocationFailure when the allocator refuses, or when it is more than system_memory_bytes()
// (which could only fail later, a page at a time, or bring the out-of-memory killer).
void* allocate_aligned(std::size_t bytes);

}  // namespace gpt

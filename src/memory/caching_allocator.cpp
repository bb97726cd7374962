// Loss segments across steps in PyTorch's caching allocator (see caching_allocator.h).
#include "memory/caching_allocator.h"

#include <algorithm>

#include "common/units.h"

namespace memfit {

std::int64_t large_segment_bytes(std::int64_t request_bytes) {
  return checked_mul(ceil_div(request_bytes, kAllocatorRoundLargeBytes), kAllocatorRoundLargeBytes, "segment bytes");
}

std::int64_t second_step_loss_segment_bytes(std::int64_t loss_buffer_bytes, std::int64_t loss_segments,
                                            std::int64_t lazy_state_bytes, bool expandable_segments) {
  // expandable_segments:True maps pages at the end of one segment per stream: freed blocks merge
  // back into it and no request waits for a segment of its own (Note [Expandable Segments]).
  if (expandable_segments || loss_segments <= 0 || lazy_state_bytes <= 0) return 0;
  if (loss_buffer_bytes <= kAllocatorSmallSizeBytes) return 0;  // small pool: 2 MiB segments, reused
  const std::int64_t segment = large_segment_bytes(loss_buffer_bytes);
  const std::int64_t broken = std::min(loss_segments, ceil_div(lazy_state_bytes, segment));
  return checked_mul(broken, segment, "segment bytes");
}

std::int64_t first_step_loss_segment_bytes(std::int64_t logits_bytes, std::int64_t loss_buffer_bytes,
                                           std::int64_t loss_segments, bool logits_held, bool expandable_segments) {
  if (expandable_segments || loss_segments <= 0 || loss_buffer_bytes <= kAllocatorSmallSizeBytes) return 0;
  const std::int64_t buffers = checked_mul(loss_segments, large_segment_bytes(loss_buffer_bytes), "segment bytes");
  const bool logits_apart = logits_bytes > kAllocatorSmallSizeBytes && (logits_held || logits_bytes < loss_buffer_bytes);
  return logits_apart ? checked_add(buffers, large_segment_bytes(logits_bytes), "segment bytes") : buffers;
}

}  // namespace memfit

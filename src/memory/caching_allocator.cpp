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

std::int64_t fsdp1_wrap_cached_bytes(std::int64_t root_bytes, std::int64_t head_bytes, std::int64_t layer_bytes,
                                     std::int64_t shard_ranks, bool sharded, bool offloaded) {
  if (root_bytes <= 0 && layer_bytes <= 0) return 0;
  const std::int64_t root = large_segment_bytes(root_bytes), layer = large_segment_bytes(layer_bytes);
  std::int64_t cached = 0;
  if (sharded) {
    cached = checked_mul(2, checked_add(root, layer, "segment bytes"), "segment bytes");
  } else {
    // The embedding fills a bucket of its own (a view); the final norm and the head make the next,
    // flattened into a buffer of their size (a bucket closes once it reaches the limit). A smaller
    // embedding shares the root's one bucket, which the flat parameter of the same size reuses.
    const std::int64_t bucket = root_bytes - head_bytes >= kFsdp1BroadcastBucketBytes ? large_segment_bytes(head_bytes) : 0;
    cached = checked_add(checked_add(root, layer, "segment bytes"), bucket, "segment bytes");
  }
  if (offloaded && sharded) cached = checked_add(cached, large_segment_bytes(ceil_div(root_bytes, std::max<std::int64_t>(1, shard_ranks))), "segment bytes");
  return cached;
}

}  // namespace memfit

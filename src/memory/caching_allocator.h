// What PyTorch's CUDA caching allocator does with the loss's large buffers across steps
// (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp, read at 001074d2, the 2.11 line;
// tools/oracle/caching_allocator.py models the whole allocator and reproduces every traced
// address and max_reserved of the H200 snapshots in tests/validation/measured_h200/).
#pragma once
#include <cstdint>

namespace memfit {

/// kSmallSize: requests up to 1 MiB are served from the small pool's 2 MiB segments.
inline constexpr std::int64_t kAllocatorSmallSizeBytes = 1LL << 20;
/// kRoundLarge: a segment for a request of 10 MiB or more is the request rounded up to 2 MiB.
inline constexpr std::int64_t kAllocatorRoundLargeBytes = 2LL << 20;

/// The segment cudaMalloc'd for one large request that no cached block serves.
std::int64_t large_segment_bytes(std::int64_t request_bytes);

/// Bytes of the segments the second step maps for its loss (0 with expandable segments). The
/// first step maps a segment per loss buffer live at once (`loss_segments` of `loss_buffer_bytes`:
/// nothing cached is that large yet); once its loss backward frees them, the tensors that step
/// creates lazily and keeps (`lazy_state_bytes`: the optimizer states of the large pool) are
/// placed best fit, and a segment split by the first of them stays the best fit for the next, so
/// they fill whole loss segments one after the other. A segment holding any of them no longer
/// serves a loss buffer: the second step's loss maps a new segment for each.
std::int64_t second_step_loss_segment_bytes(std::int64_t loss_buffer_bytes, std::int64_t loss_segments,
                                            std::int64_t lazy_state_bytes, bool expandable_segments);

/// Bytes of the segments the first step's loss maps (0 with expandable segments). Nothing cached
/// before the loss is that large (the blocks the layers' freed temporaries leave hold a layer's
/// tensors), so each of the `loss_segments` buffers of `loss_buffer_bytes` live at once gets a segment,
/// and so do the `logits_bytes` of the output projection; a freed block is reused only by a request
/// it holds, so the logits' segment serves no loss buffer when they are smaller (16-bit logits,
/// fp32 loss) or `logits_held` through the backward. Reserved at the loss is then what was reserved
/// before it plus these segments, above the allocated peak by the logits' segment left cached.
std::int64_t first_step_loss_segment_bytes(std::int64_t logits_bytes, std::int64_t loss_buffer_bytes,
                                           std::int64_t loss_segments, bool logits_held, bool expandable_segments);

/// torch FSDP1's broadcast bucket when it syncs module states (torch/distributed/fsdp/_init_utils.py
/// PARAM_BROADCAST_BUCKET_SIZE, 250 MiB).
inline constexpr std::int64_t kFsdp1BroadcastBucketBytes = 250LL << 20;

/// The segments FSDP1's wrap of a model held in host memory leaves cached on the rank that loaded
/// it (DistributedBehaviour::fsdp1_wrap_from_host; tools/oracle/fsdp1_wrap.py replays the requests).
/// Each unit's parameters are copied to the device (a block each), concatenated into the unsharded
/// flat parameter, and the rank's chunk is cloned before the rest is freed. The root unit
/// (embeddings, final norm, head: `root_bytes`, `head_bytes` of it) is wrapped last and is larger than
/// any block (`layer_bytes`), so its copies and flat buffer find no cached block that holds them and
/// map their own segments; a block's leave theirs for the next block. Sharded (`sharded`): both units'
/// copies and flat buffers stay cached (2 x (root + block)); the shard's clone takes the broadcast
/// bucket's freed block. Unsharded (NO_SHARD): the flat parameter is kept, so the copies of both
/// units and the root's head bucket (the final norm and output layer flattened, the embedding a bucket
/// of its own) stay cached. `offloaded`: the root's shard goes to the host after it is made, its
/// block cached too.
std::int64_t fsdp1_wrap_cached_bytes(std::int64_t root_bytes, std::int64_t head_bytes, std::int64_t layer_bytes,
                                     std::int64_t shard_ranks, bool sharded, bool offloaded);

}  // namespace memfit

"""A model of PyTorch's CUDA caching allocator (standard library only), to replay allocation traces.

The rules, from pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (read at commit 001074d2, the 2.11 line):
- round_size: requests round up to a multiple of kMinBlockSize (512 B).
- Requests <= kSmallSize (1 MiB) use the small pool, larger ones the large pool; each pool keeps its free
  blocks per stream ordered by (size, address) and get_free_block takes the smallest that fits (best fit).
- A new segment (cudaMalloc) is get_allocation_size(size): kSmallBuffer (2 MiB) for small requests,
  kLargeBuffer (20 MiB) below kMinLargeAlloc (10 MiB), else the size rounded up to kRoundLarge (2 MiB).
- should_split: a small-pool block splits when >= 512 B remain, a large-pool block when more than kSmallSize
  remains (or >= 512 B with expandable segments); max_split_size unset (default) never forbids a split.
- free_block merges the block with free neighbours of the same segment (try_merge_blocks); segments are
  never returned to the driver without empty_cache() or an out-of-memory retry (not modelled).
- expandable_segments:True: one segment per (pool, stream) that maps pages at its end as needed, 2 MiB pages
  for the small pool and kLargeBuffer (20 MiB) for the large one (Note [Expandable Segments]).

`reserved_bytes` is what torch.cuda.memory_reserved() reports: the sum of segment sizes (mapped pages).
"""
import bisect

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20
SMALL_BUFFER = 2 << 20
LARGE_BUFFER = 20 << 20
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20


def round_size(size):
    return MIN_BLOCK if size < MIN_BLOCK else -(-size // MIN_BLOCK) * MIN_BLOCK


def allocation_size(size):
    """The segment cudaMalloc'd for a request of `size` (rounded) bytes that no cached block serves."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


class Block:
    __slots__ = ("addr", "size", "allocated", "prev", "next", "segment")

    def __init__(self, addr, size, segment, prev=None, nxt=None):
        self.addr, self.size, self.segment = addr, size, segment
        self.allocated, self.prev, self.next = False, prev, nxt


class Segment:
    __slots__ = ("addr", "size", "small", "stream", "expandable")

    def __init__(self, addr, size, small, stream, expandable=False):
        self.addr, self.size, self.small, self.stream, self.expandable = addr, size, small, stream, expandable


class CachingAllocator:
    """alloc(size, stream) -> address, free(address); `reserved_bytes`, `allocated_bytes` and their peaks.

    `segment_address`, when given, is called as f(size) for each new segment's address (a replay passes the
    trace's own); otherwise segments get fresh addresses 2 MiB apart.
    """

    def __init__(self, expandable_segments=False, segment_address=None):
        self.expandable = expandable_segments
        self.segment_address = segment_address
        self.free_lists = {}  # (small, stream) -> sorted [(size, addr)]
        self.blocks = {}      # addr -> Block (allocated and free)
        self.segments = []
        self.expandable_tail = {}  # (small, stream) -> the expandable segment's last block
        self.reserved_bytes = self.allocated_bytes = 0
        self.max_reserved_bytes = self.max_allocated_bytes = 0
        self._next_addr = 1 << 40

    # -- free lists
    def _insert_free(self, b):
        bisect.insort(self.free_lists.setdefault((b.segment.small, b.segment.stream), []), (b.size, b.addr))

    def _remove_free(self, b):
        lst = self.free_lists[(b.segment.small, b.segment.stream)]
        del lst[bisect.bisect_left(lst, (b.size, b.addr))]

    def _best_fit(self, size, small, stream):
        lst = self.free_lists.get((small, stream), [])
        i = bisect.bisect_left(lst, (size, -1))
        return self.blocks[lst[i][1]] if i < len(lst) else None

    # -- segments
    def _new_address(self, size):
        if self.segment_address:
            return self.segment_address(size)
        addr = self._next_addr
        self._next_addr += -(-size // ROUND_LARGE) * ROUND_LARGE + ROUND_LARGE
        return addr

    def add_segment(self, addr, size, small, stream=0):
        """Maps a segment of `size` bytes at `addr` as one free block (a replay's pre-existing segments too)."""
        seg = Segment(addr, size, small, stream)
        self.segments.append(seg)
        b = Block(addr, size, seg)
        self.blocks[addr] = b
        self._insert_free(b)
        self._grow_reserved(size)
        return b

    def _grow_reserved(self, size):
        self.reserved_bytes += size
        self.max_reserved_bytes = max(self.max_reserved_bytes, self.reserved_bytes)

    def _expand(self, size, small, stream):
        """Maps pages at the end of the pool's expandable segment so that its free tail holds `size`."""
        page = SMALL_BUFFER if small else LARGE_BUFFER
        key = (small, stream)
        tail = self.expandable_tail.get(key)
        if tail is None:
            grow = -(-size // page) * page
            addr = self._new_address(1 << 40)
            seg = Segment(addr, 0, small, stream, expandable=True)
            self.segments.append(seg)
            tail = Block(addr, 0, seg)
            self.blocks[addr] = tail
        else:
            have = 0 if tail.allocated else tail.size
            grow = -(-(size - have) // page) * page
            if tail.allocated:
                nb = Block(tail.addr + tail.size, 0, tail.segment, prev=tail)
                tail.next = nb
                self.blocks[nb.addr] = nb
                tail = nb
            else:
                self._remove_free(tail)
        tail.size += grow
        tail.segment.size += grow
        self.expandable_tail[key] = tail
        self._insert_free(tail)
        self._grow_reserved(grow)
        return tail

    # -- requests

    def _split_tail(self, b, size):
        """Keeps the first `size` bytes of `b`; the rest becomes a free block after it (returned)."""
        rest = Block(b.addr + size, b.size - size, b.segment, prev=b, nxt=b.next)
        if b.next:
            b.next.prev = rest
        b.next = rest
        b.size = size
        self.blocks[rest.addr] = rest
        self._insert_free(rest)
        return rest

    def alloc(self, size, stream=0):
        size = round_size(size)
        small = size <= SMALL_SIZE
        b = self._best_fit(size, small, stream)
        if b is None:
            if self.expandable:
                b = self._expand(size, small, stream)
            else:
                b = self.add_segment(self._new_address(allocation_size(size)), allocation_size(size), small, stream)
        self._remove_free(b)
        remaining = b.size - size
        split = remaining >= MIN_BLOCK if (small or self.expandable) else remaining > SMALL_SIZE
        if split:
            rest = self._split_tail(b, size)
            if self.expandable_tail.get((small, stream)) is b:
                self.expandable_tail[(small, stream)] = rest
        b.allocated = True
        self.allocated_bytes += b.size
        self.max_allocated_bytes = max(self.max_allocated_bytes, self.allocated_bytes)
        return b.addr

    def free(self, addr):
        b = self.blocks[addr]
        assert b.allocated, f"double free at {addr:#x}"
        b.allocated = False
        self.allocated_bytes -= b.size
        key = (b.segment.small, b.segment.stream)
        for nb in (b.prev, b.next):
            if nb is not None and not nb.allocated:
                self._remove_free(nb)
                self._merge(b, nb)
        if b.next is None and b.segment.expandable:
            self.expandable_tail[key] = b
        self._insert_free(b)

    def _merge(self, b, nb):
        if nb is b.prev:
            del self.blocks[b.addr]
            b.addr, b.prev = nb.addr, nb.prev
            if nb.prev:
                nb.prev.next = b
            self.blocks[b.addr] = b
        else:
            del self.blocks[nb.addr]
            b.next = nb.next
            if nb.next:
                nb.next.prev = b
        b.size += nb.size

    def allocate_at(self, addr, size):
        """Marks [addr, addr + size) of a free block as allocated (a replay's blocks live before its trace)."""
        host = None
        for b in self.blocks.values():
            if not b.allocated and b.addr <= addr and addr + size <= b.addr + b.size:
                host = b
                break
        assert host is not None, f"no free block holds {addr:#x}+{size}"
        self._remove_free(host)
        if addr > host.addr:  # a free head stays free
            head = Block(host.addr, addr - host.addr, host.segment, prev=host.prev, nxt=host)
            if host.prev:
                host.prev.next = head
            host.prev = head
            del self.blocks[host.addr]
            self.blocks[head.addr] = head
            self._insert_free(head)
            host.addr, host.size = addr, host.size - head.size
            self.blocks[addr] = host
        if host.size > size:
            self._split_tail(host, size)
        host.allocated = True
        self.allocated_bytes += size
        self.max_allocated_bytes = max(self.max_allocated_bytes, self.allocated_bytes)


def replay_events(events, expandable_segments=False):
    """Feeds [("alloc", serial, bytes) | ("free", serial)] (tracker.LiveBytes.events) to a new model; returns it."""
    model = CachingAllocator(expandable_segments=expandable_segments)
    where = {}
    for e in events:
        if e[0] == "alloc":
            where[e[1]] = model.alloc(e[2])
        elif e[1] in where:
            model.free(where.pop(e[1]))
    return model

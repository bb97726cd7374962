"""The caching-allocator model and the snapshot replay (standard library only; runs in CI)."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import caching_allocator as ca  # noqa: E402
import replay_snapshot  # noqa: E402

MiB = 1 << 20
MEASURED = os.path.join(HERE, "..", "..", "tests", "validation", "measured_h200")


class RulesTest(unittest.TestCase):
    def test_rounding_and_segment_sizes(self):
        self.assertEqual(ca.round_size(1), 512)
        self.assertEqual(ca.round_size(513), 1024)
        self.assertEqual(ca.allocation_size(MiB), 2 * MiB)          # small pool
        self.assertEqual(ca.allocation_size(MiB + 512), 20 * MiB)   # 1-10 MiB: a 20 MiB segment
        self.assertEqual(ca.allocation_size(10 * MiB), 10 * MiB)    # >= 10 MiB: rounded to 2 MiB
        self.assertEqual(ca.allocation_size(11 * MiB), 12 * MiB)

    def test_small_requests_share_a_2_mib_segment(self):
        a = ca.CachingAllocator()
        x, y = a.alloc(1000), a.alloc(1000)
        self.assertEqual(y - x, 1024)
        self.assertEqual(a.reserved_bytes, 2 * MiB)

    def test_mid_requests_split_a_20_mib_segment(self):
        a = ca.CachingAllocator()
        a.alloc(3 * MiB)
        a.alloc(3 * MiB)
        self.assertEqual(a.reserved_bytes, 20 * MiB)

    def test_large_block_keeps_a_remainder_of_one_mib_or_less(self):
        a = ca.CachingAllocator()
        big = a.alloc(100 * MiB)
        a.free(big)
        a.alloc(99 * MiB)          # 1 MiB left: not split, the block stays whole
        self.assertEqual(a.allocated_bytes, 100 * MiB)
        b = ca.CachingAllocator()
        big = b.alloc(100 * MiB)
        b.free(big)
        b.alloc(98 * MiB)          # 2 MiB left: split
        self.assertEqual(b.allocated_bytes, 98 * MiB)

    def test_best_fit_takes_the_smallest_free_block(self):
        a = ca.CachingAllocator()
        large, small = a.alloc(200 * MiB), a.alloc(50 * MiB)
        a.free(large)
        a.free(small)
        self.assertEqual(a.alloc(40 * MiB), small)

    def test_freed_neighbours_merge_and_segments_stay_cached(self):
        a = ca.CachingAllocator()
        seg = a.alloc(100 * MiB)
        a.free(seg)
        x = a.alloc(40 * MiB)
        y = a.alloc(40 * MiB)
        a.free(x)
        a.free(y)
        self.assertEqual(a.alloc(100 * MiB), seg)  # merged back into one block
        self.assertEqual(a.reserved_bytes, 100 * MiB)

    def test_states_fill_the_freed_loss_segments_one_after_another(self):
        # Step 1 maps three loss buffers; the optimizer's states go into the freed segments by best fit,
        # a split segment's remainder being the best fit for the next state; step 2's loss maps a new
        # segment for each one holding a state: ceil(states / segment), at most three (the rule of
        # src/memory/caching_allocator.cpp). Expandable segments map none.
        for states, broken in ((1, 1), (31, 1), (32, 2), (62, 2), (63, 3), (200, 3)):
            for expandable in (False, True):
                a = ca.CachingAllocator(expandable_segments=expandable)
                loss = [a.alloc(2004 * MiB) for _ in range(3)]
                for x in loss:
                    a.free(x)
                for _ in range(states):
                    a.alloc(64 * MiB)
                before = a.reserved_bytes
                for _ in range(3):
                    a.alloc(2004 * MiB)
                grown = a.reserved_bytes - before
                if expandable:  # the tail grows by what the loss lacks, in 20 MiB pages
                    self.assertLess(grown, min(states * 64 * MiB, 3 * 2004 * MiB) + 20 * MiB)
                else:
                    self.assertEqual(grown, broken * 2004 * MiB, states)


class ReplayTest(unittest.TestCase):
    def test_gc02_snapshot_replays_exactly(self):
        path = os.path.join(MEASURED, "GC-02.snapshot.pickle.gz")
        case, measured, _ = replay_snapshot.measured_max_reserved(path)
        r = replay_snapshot.replay(replay_snapshot.load(path))
        self.assertEqual(case, "GC-02")
        self.assertEqual(r["mismatched_addresses"], 0)          # every request where the GPU put it
        self.assertEqual(r["segments_model"], r["segments_gpu"])
        self.assertEqual(r["max_reserved"], measured)           # 26.518 GiB, to the byte


if __name__ == "__main__":
    unittest.main()

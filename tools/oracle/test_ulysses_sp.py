"""The Ulysses runner on a 2-layer Qwen3-4B (needs deepspeed and einops importable; skipped otherwise)."""
import importlib.util
import os
import unittest

import cases

HERE = os.path.dirname(os.path.abspath(__file__))


@unittest.skipUnless(importlib.util.find_spec("deepspeed") and importlib.util.find_spec("trl"), "needs deepspeed, trl")
class UlyssesRunner(unittest.TestCase):
    def test_logits_of_the_rank_shard_at_the_loss_backward(self):
        import ulysses_sp
        model_id = cases.reduced_config("Qwen/Qwen3-4B", 2)
        case = {"model": model_id, "method": "full", "lora_rank": None, "lora_targets": None, "precision": "bf16",
                "optimizer": "adamw", "optimizer_impl": "trainer_default", "micro_batch": 1, "seq_len": 16384,
                "activation_checkpointing": "full", "checkpoint_use_reentrant": True, "attention": "sdpa",
                "layers": 2, "cp": 4, "dp": 1, "freeze_trainable_layers": 2}
        tracker = ulysses_sp.run_trl_ulysses(case, os.path.join(cases.ORACLE_CONFIGS, cases.config_file(model_id)))
        local_tokens, vocab = 16384 // 4, 151936
        bf16_logits = local_tokens * vocab * 2
        # bf16 logits, their fp32 copy, log-softmax and its gradient (fp32 each): 6 bf16 units, the shard's only
        self.assertEqual(tracker.peak_where["op"], "_log_softmax_backward_data.default")
        self.assertAlmostEqual(tracker.breakdown()["logits_loss"] / bf16_logits, 6.0, delta=0.01)
        self.assertEqual(tracker.sdpa_calls["flash"], 8)  # 2 layers x (forward, recompute) x 2 steps


if __name__ == "__main__":
    unittest.main()

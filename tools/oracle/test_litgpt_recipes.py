"""Tests of the LitGPT runner (litgpt_recipes.py). Skipped where torch or litgpt is not installed (CI)."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch  # noqa: F401
    import litgpt  # noqa: F401
    import litgpt_recipes
except ImportError:  # CI has no torch
    litgpt_recipes = None

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests",
                       "validation", "configs")
VOCAB, TOKENS = 32768, 256


def tiny_config(method, n_layer=2):
    """A Llama-style litgpt Config (2 layers) whose output layer dominates: the logits' dtype shows in the peak."""
    Config = litgpt_recipes.litgpt_module({"method": method}).Config
    fields = dict(name="tiny", n_layer=n_layer, n_embd=64, n_head=4, n_query_groups=2, head_size=16,
                  intermediate_size=128, vocab_size=VOCAB, padded_vocab_size=VOCAB, block_size=1024,
                  bias=False, norm_class_name="RMSNorm", mlp_class_name="LLaMAMLP", rotary_percentage=1.0,
                  parallel_residual=False)
    if method == "lora":
        fields.update(lora_r=4, lora_alpha=8, lora_query=True, lora_value=True)
    return Config(**fields)


def run_tiny(method="full", n_layer=2, **overrides):
    case = {"family": "tiny", "method": method, "lora_rank": 4 if method == "lora" else None,
            "lora_targets": "q,v" if method == "lora" else None, "precision": "bf16",
            "activation_checkpointing": "none", "micro_batch": 1, "seq_len": TOKENS, **overrides}
    return litgpt_recipes.run_case(case, None, config=tiny_config(method, n_layer))


@unittest.skipIf(litgpt_recipes is None, "torch or litgpt is not installed")
class ConfigTest(unittest.TestCase):
    def hf(self, name):
        with open(os.path.join(CONFIGS, name)) as f:
            return {**json.load(f), "num_hidden_layers": 2}

    def test_litgpts_named_configs_match_the_cases_configs(self):
        for family, name in (("llama3_gqa", "meta-llama__Llama-3.1-8B.json"),
                             ("llama32_tied", "meta-llama__Llama-3.2-1B-Instruct.json"),
                             ("qwen25_bias", "Qwen__Qwen2.5-7B.json")):
            config = litgpt_recipes.litgpt_config({"family": family, "method": "full"}, self.hf(name))
            self.assertEqual(config.n_layer, 2)
        with self.assertRaises(ValueError):  # Llama 3.1's config named as Qwen2.5's
            litgpt_recipes.litgpt_config({"family": "qwen25_bias", "method": "full"},
                                         self.hf("meta-llama__Llama-3.1-8B.json"))

    def test_lora_targets_map_to_litgpts_switches(self):
        kwargs = litgpt_recipes.lora_kwargs({"lora_rank": 8, "lora_targets": "q,v"})
        self.assertEqual({k for k, v in kwargs.items() if v is True}, {"lora_query", "lora_value"})
        kwargs = litgpt_recipes.lora_kwargs({"lora_rank": 16, "lora_targets": "all-linear"})
        self.assertTrue(kwargs["lora_key"] and kwargs["lora_projection"] and kwargs["lora_mlp"])
        with self.assertRaises(ValueError):
            litgpt_recipes.lora_kwargs({"lora_rank": 8, "lora_targets": "q,gate"})


@unittest.skipIf(litgpt_recipes is None, "torch or litgpt is not installed")
class RecipeStepTest(unittest.TestCase):
    def test_fabric_bf16_true_hands_the_loss_fp32_logits(self):
        # HalfPrecision.convert_output casts the head's bf16 chunks to the default dtype: at the peak of the second
        # forward, the first step's fp32 chunks (still bound to `logits`) and the new ones are both live
        lora = run_tiny("lora")
        self.assertEqual(lora.trainer_settings["precision"], "bf16-true")
        self.assertGreaterEqual(lora.breakdown()["logits_loss"], TOKENS * VOCAB * 4)

    def test_full_keeps_adamw_states_for_every_weight_and_lora_for_the_adapters(self):
        full, lora = run_tiny(), run_tiny("lora")
        rope_cache_bytes = 2 * TOKENS * 16 * 4  # the weights' fp32 cos and sin buffers (head size 16)
        self.assertAlmostEqual(full.breakdown()["optimizer"], 2 * full.breakdown()["weights"],
                               delta=2 * rope_cache_bytes)
        self.assertLess(lora.breakdown()["optimizer"], full.breakdown()["optimizer"] / 100)
        self.assertEqual(full.sdpa_calls["flash"], 4)  # 2 layers x 2 steps, causal without a mask

    def test_checkpointing_saves_only_block_inputs(self):
        plain = run_tiny("lora", seq_len=1024)
        wrapped = run_tiny("lora", seq_len=1024, activation_checkpointing="full")
        self.assertLess(wrapped.peak_bytes, plain.peak_bytes)

    def test_adapter_trains_only_its_gates_and_attends_to_the_prefix_from_the_start_layer(self):
        # 3 layers, adapter_start_layer 2: one adapted layer; validate's no-grad forward fills adapter_kv_cache,
        # which training reuses, so adapter_wte gets no gradient: AdamW's two states of the 4 gates only
        adapter = run_tiny("adapter", n_layer=3)
        self.assertEqual(adapter.breakdown()["optimizer"], 2 * 512)  # two states, one 512-B block each
        self.assertEqual(adapter.sdpa_calls["efficient"], 3)  # the prefix attention: validate + 2 steps
        v2 = run_tiny("adapter_v2", n_layer=3)
        self.assertGreater(v2.breakdown()["optimizer"], adapter.breakdown()["optimizer"])


if __name__ == "__main__":
    unittest.main()

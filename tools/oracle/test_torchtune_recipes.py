"""Tests of the torchtune runner (torchtune_recipes.py). Skipped where torch or torchtune is not installed (CI)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
    import torchtune  # noqa: F401
    from torch._subclasses.fake_tensor import FakeTensorMode
    import torchtune_recipes
except ImportError:  # CI has no torch
    torch = None

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests",
                       "validation", "configs")
TINY_LLAMA = {"model_type": "llama", "vocab_size": 2048, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "hidden_size": 128, "intermediate_size": 256, "max_position_embeddings": 1024,
              "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": True,
              "rope_scaling": {"factor": 32.0, "rope_type": "llama3"}}


def run_tiny(mlp=256, **overrides):
    case = {"method": "full", "lora_rank": None, "lora_targets": None, "precision": "bf16", "loss": "chunked",
            "activation_checkpointing": "none", "micro_batch": 1, "seq_len": 64, "optimizer_in_backward": 0,
            **overrides}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({**TINY_LLAMA, "intermediate_size": mlp}, f)
    try:
        return torchtune_recipes.run_case(case, f.name)
    finally:
        os.unlink(f.name)


@unittest.skipIf(torch is None, "torch or torchtune is not installed")
class BuilderTest(unittest.TestCase):
    def config(self, name):
        with open(os.path.join(CONFIGS, name)) as f:
            return json.load(f)

    def test_each_config_takes_torchtunes_builder_of_that_model(self):
        name, kwargs = torchtune_recipes.builder_kwargs(self.config("meta-llama__Llama-3.2-1B-Instruct.json"))
        self.assertEqual((name, kwargs["scale_factor"], kwargs["tie_word_embeddings"]), ("llama3_2", 32, True))
        name, kwargs = torchtune_recipes.builder_kwargs(self.config("meta-llama__Llama-3.1-8B.json"))
        self.assertEqual((name, kwargs["scale_factor"]), ("llama3_1", 8))
        name, kwargs = torchtune_recipes.builder_kwargs(self.config("Qwen__Qwen2.5-3B.json"))
        self.assertEqual((name, kwargs["tie_word_embeddings"], kwargs["num_kv_heads"]), ("qwen2", True, 2))

    def test_lora_targets_map_to_torchtunes_module_names(self):
        kwargs = torchtune_recipes.lora_kwargs({"method": "qlora", "lora_rank": 64, "lora_targets": "q,k,v,o,gate,up,down"})
        self.assertEqual(kwargs["lora_attn_modules"], ["q_proj", "k_proj", "v_proj", "output_proj"])
        self.assertTrue(kwargs["apply_lora_to_mlp"] and kwargs["quantize_base"])
        kwargs = torchtune_recipes.lora_kwargs({"method": "lora", "lora_rank": 8, "lora_targets": "q,v"})
        self.assertEqual((kwargs["lora_attn_modules"], kwargs["apply_lora_to_mlp"]), (["q_proj", "v_proj"], False))

    def test_scaled_rope_builds_its_cache_on_fake_tensors(self):
        from torchtune.models.llama3_1 import Llama3ScaledRoPE
        with FakeTensorMode(), torchtune_recipes.rope_scaling_without_values():
            rope = Llama3ScaledRoPE(dim=64, max_seq_len=256)
        self.assertEqual(tuple(rope.cache.shape), (256, 32, 2))


@unittest.skipIf(torch is None, "torch or torchtune is not installed")
class RecipeStepTest(unittest.TestCase):
    def test_optimizer_in_backward_frees_each_gradient_as_it_steps(self):
        # the MLP dominates the parameters: all its gradients at once outweigh the few activations of 64 tokens
        stepped = run_tiny(mlp=4096)
        in_backward = run_tiny(mlp=4096, optimizer_in_backward=1)
        self.assertLess(in_backward.peak_bytes, stepped.peak_bytes)
        self.assertTrue(in_backward.trainer_settings["optimizer_in_bwd"])

    def test_lora_trains_and_keeps_state_for_the_adapters_only(self):
        full, lora = run_tiny(), run_tiny(method="lora", lora_rank=4, lora_targets="q,v")
        self.assertEqual(lora.trainer_settings["recipe"], "LoRAFinetuneRecipeSingleDevice")
        self.assertLess(lora.breakdown()["optimizer"], full.breakdown()["optimizer"] / 20)
        self.assertEqual(full.sdpa_calls["flash"], 4)  # 2 layers x 2 steps, causal without a mask


if __name__ == "__main__":
    unittest.main()

# What one adapted linear of PEFT's shared-bank adapters (LiLy, TinyLoRA, VB-LoRA, FRoD, AdaMSS) saves
# for backward, executed on real CPU tensors (the fake-tensor oracle cannot build these methods):
# per adapted module of the second layer, the unique storages autograd packs, split into per-token and
# per-layer bytes by running 32 and 64 tokens; "owned" storages are the model's own parameters or
# buffers (on a GPU, FRoD's U, V and indices and AdaMSS's scatter index are per-forward device copies).
# Also prints each method's trainable parameters. Checks training/peft_shared_adapters.cpp.
# Usage: tools/oracle/.venvs/cur_2026_11/bin/python tools/oracle/peft_shared_saved.py [method ...]
# (AdaMSS needs scikit-learn; PEFT_SHARED_EXTRA_PATH may name a folder that holds it.)
import sys, torch

from transformers import LlamaConfig, LlamaForCausalLM
import peft
from peft import get_peft_model

import os
if os.environ.get("PEFT_SHARED_EXTRA_PATH"):
    sys.path.append(os.environ["PEFT_SHARED_EXTRA_PATH"])
H, F, KV = 256, 512, 128
try:
    import sklearn; HAVE_SK = True
except ImportError:
    HAVE_SK = False
def model():
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=H, intermediate_size=F, num_hidden_layers=4, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=512, max_position_embeddings=256)
    return LlamaForCausalLM(cfg).to(torch.bfloat16)

def configs():
    return {
      "lily": peft.LilyConfig(r=16, stride_A=2, num_B=2, target_modules=["q_proj", "v_proj"]),
      "tinylora": peft.TinyLoraConfig(r=2, u=8, target_modules=["q_proj", "v_proj"]),
      "vblora": peft.VBLoRAConfig(r=4, num_vectors=16, vector_length=64, topk=2, target_modules=["q_proj", "v_proj"]),
      "frod": peft.FrodConfig(sparse_rate=0.01, runtime_offload_base_weight=True, target_modules=["q_proj", "v_proj"]),
      **({"adamss": peft.AdamssConfig(r=16, num_subspaces=4, subspace_rank=1, target_modules=["q_proj", "v_proj"])} if HAVE_SK else {}),
    }

def measure(name, cfg, tokens):
    m = get_peft_model(model(), cfg, autocast_adapter_dtype=True)
    owned = {p.untyped_storage().data_ptr() for p in m.parameters()} | {b.untyped_storage().data_ptr() for b in m.buffers()}
    rec = {}
    from peft.tuners.tuners_utils import BaseTunerLayer
    for mod_name, mod in m.named_modules():
        if not isinstance(mod, BaseTunerLayer) or "layers.1." not in mod_name:
            continue
        orig = mod.forward
        def wrapped(*a, _orig=orig, _n=mod_name, **k):
            seen = rec.setdefault(_n, {})
            def pack(t):
                parts = [t._indices(), t._values()] if t.is_sparse else [t]
                for x in parts:
                    s = x.untyped_storage()
                    if s.data_ptr() == 0: continue
                    if s.data_ptr() in owned:
                        seen[s.data_ptr()] = (0, "owned:" + str(x.dtype), tuple(x.shape))
                    else:
                        seen[s.data_ptr()] = (s.nbytes(), str(x.dtype), tuple(x.shape))
                return t
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                return _orig(*a, **k)
        mod.forward = wrapped
    m.train()
    emb = torch.randn(1, tokens, H, dtype=torch.bfloat16, requires_grad=True)
    out = m(inputs_embeds=emb).logits
    return {n: (sum(v[0] for v in d.values()), sorted(v for v in d.values())) for n, d in rec.items()}

res = {}
for name, cfg in configs().items():
    if len(sys.argv) > 1 and name not in sys.argv[1:]: continue
    try:
        a = measure(name, cfg, 32); b = measure(name, cfg, 64)
        for n in a:
            per_tok = (b[n][0] - a[n][0]) / 32
            per_layer = a[n][0] - per_tok * 32
            print(f"{name:9s} {n.split('.')[-1]:7s} per_token={per_tok:8.1f} B  per_layer={per_layer:10.0f} B   items@32={a[n][1]}")
    except Exception as e:
        print(name, "FAILED", type(e).__name__, str(e)[:300])

print("trainable:", {n: sum(p.numel() for p in get_peft_model(model(), c, autocast_adapter_dtype=True).parameters() if p.requires_grad)
                     for n, c in configs().items() if len(sys.argv) == 1 or n in sys.argv[1:]}))

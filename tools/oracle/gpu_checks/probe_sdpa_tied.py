# Which SDPA kernel takes unequal query and K/V head counts on CUDA, and what it keeps; a tied table's backward.
# Run on a GPU: python3 probe_sdpa_tied.py (tools/oracle/gpu_checks/README.md has the H200 output).
import torch, torch.nn as nn, torch.nn.functional as F
print("torch", torch.__version__, torch.cuda.get_device_name())
dev = "cuda"
V, h, T = 32000, 1024, 16
emb = nn.Embedding(V, h).to(dev, torch.bfloat16)
ids = torch.randint(0, V, (1, T), device=dev)
logits = F.linear(emb(ids), emb.weight)
loss = logits.float().logsumexp(-1).mean()
torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
loss.backward(); torch.cuda.synchronize()
print("TIED backward peak above base MiB %.1f ; V*h bf16 MiB %.1f" % ((torch.cuda.max_memory_allocated() - base) / 2**20, V * h * 2 / 2**20))
del emb, logits, loss
B, H, S, D = 1, 8, 2048, 64
q = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
k = torch.randn(B, 1, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
v = torch.randn(B, 1, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
torch.cuda.synchronize(); before = torch.cuda.memory_allocated()
o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
torch.cuda.synchronize()
print("MQA sdpa: kept after forward MiB %.1f ; B*H*S*S bf16 MiB %.1f ; grad_fn %s" % ((torch.cuda.memory_allocated() - before) / 2**20, B * H * S * S * 2 / 2**20, type(o.grad_fn).__name__))
from torch.nn.attention import sdpa_kernel, SDPBackend
for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
    try:
        with sdpa_kernel([be]): F.scaled_dot_product_attention(q, k, v, is_causal=True)
        print(be, "accepts unequal heads")
    except Exception as ex:
        print(be, "refuses:", str(ex).splitlines()[0][:120])

# The embedding table's backward, tied to the output layer or not: peak and end allocation above the start.
# Run on a GPU: python3 probe_tied_untied.py (tools/oracle/gpu_checks/README.md has the H200 output).
import torch, torch.nn as nn, torch.nn.functional as F
dev = "cuda"; V, h, T = 32000, 1024, 16
def run(tied, dt=torch.bfloat16):
    emb = nn.Embedding(V, h).to(dev, dt); head = emb.weight if tied else nn.Parameter(torch.randn(V, h, device=dev, dtype=dt))
    ids = torch.randint(0, V, (1, T), device=dev)
    loss = F.linear(emb(ids), head).float().logsumexp(-1).mean()
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
    loss.backward(); torch.cuda.synchronize()
    print("tied" if tied else "untied", dt, "peak-base MiB %.1f after-base %.1f (V*h %.1f)" % ((torch.cuda.max_memory_allocated()-base)/2**20, (torch.cuda.memory_allocated()-base)/2**20, V*h*torch.finfo(dt).bits/8/2**20))
for dt in (torch.bfloat16, torch.float32):
    run(False, dt); run(True, dt)

"""Peak CUDA memory of TRL's chunked_nll algorithm, alone on a GPU, beside the standard loss.

TRL itself cannot travel to the GPU machine from a helper's worktree, so this follows the
algorithm of huggingface/trl @ f2cd5771 trl/trainer/sft_trainer.py (_chunked_cross_entropy_loss,
_chunk) in its own code: valid tokens sorted to the front (argsort of the label mask), then per
256-token chunk under non-reentrant checkpointing h.float() @ w.float().t(), log_softmax, the
summed nll, the argmax accuracy and the entropy. The inputs (h [T, H] bf16, w [V, H] bf16,
labels) are allocated first; the allocator's counters give the bytes above them: the forward's
peak, what it leaves alive, the backward's peak and what stays after it (the gradients).
tests/unit/loss_kernels_test.cpp holds the results (results/chunked_nll_h200.csv) against
src/block/loss_kernels.cpp. Usage: python3 tools/measure/chunked_nll_gpu.py > OUT.csv
"""
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

V, H, CHUNK = 151936, 2560, 256  # Qwen3-4B's vocabulary and hidden size; TRL's chunk


def chunk_loss(h, w, labels):
    logits = h.float() @ w.float().t()
    log_p = F.log_softmax(logits, dim=-1)
    loss = F.nll_loss(log_p, labels, reduction="sum")
    valid = labels != -100
    correct = ((logits.argmax(dim=-1) == labels) & valid).sum().float()
    entropy = (-(log_p.exp() * log_p).sum(dim=-1) * valid).sum()
    return loss, correct, entropy


def chunked_nll(h, w, labels):
    valid = labels != -100
    n_valid = valid.sum()
    order = valid.to(torch.int8).argsort(descending=True, stable=True)
    hidden, targets = h[order], labels[order]
    padded = int((n_valid / CHUNK).ceil().item()) * CHUNK
    total = h.new_zeros((), dtype=torch.float32)
    for start in range(0, padded, CHUNK):
        loss, _, _ = checkpoint(chunk_loss, hidden[start:start + CHUNK], w, targets[start:start + CHUNK],
                                use_reentrant=False)
        total = total + loss
    return total / n_valid


def standard(h, w, labels):  # the harness's control: cross_entropy over upcast full logits
    return F.cross_entropy((h @ w.t()).float(), labels)


def measure(loss_fn, tokens, head_trains):
    torch.cuda.empty_cache()
    h = torch.randn(tokens, H, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = (torch.randn(V, H, device="cuda", dtype=torch.bfloat16) * 0.02).requires_grad_(head_trains)
    labels = torch.randint(0, V, (tokens,), device="cuda")
    loss_fn(h, w, labels).backward()  # warm-up
    h.grad = w.grad = None
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    loss = loss_fn(h, w, labels)
    torch.cuda.synchronize()
    forward_peak = torch.cuda.max_memory_allocated() - base
    held = torch.cuda.memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    torch.cuda.synchronize()
    return forward_peak, held, torch.cuda.max_memory_allocated() - base, torch.cuda.memory_allocated() - base


def main():
    print("kernel,tokens,vocab,hidden,head_trains,forward_peak_bytes,held_bytes,backward_peak_bytes,"
          f"after_backward_bytes  # torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for name, loss_fn in (("chunked_nll_algorithm", chunked_nll), ("standard", standard)):
        for tokens, trains in ((4096, 0), (4096, 1), (16384, 0), (16384, 1)):
            row = (name, tokens, V, H, trains) + measure(loss_fn, tokens, bool(trains))
            print(",".join(map(str, row)), flush=True)


if __name__ == "__main__":
    main()

"""Runner `transformers_loop`: a transformers model trained by a plain PyTorch loop, under fake tensors.

The loop, two steps (the second has optimizer states during forward and backward), as accelerate's
examples/nlp_example.py and PEFT's example scripts write it:
    for batch in ...: outputs = model(**batch); loss = outputs.loss; loss.backward(); opt.step(); opt.zero_grad()
`outputs` (with the logits) stays alive through backward, the optimizer step and the next forward, until the next
call returns and the name is rebound. Two case keys change the loop for a comparison with a measured one:
`release_outputs` deletes `outputs` after backward (tools/measure/worker.py's loop) and
`checkpoint_use_reentrant` passes that choice to gradient checkpointing (transformers' own default otherwise).
"""
import contextlib
import json

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from cuda_autocast import cuda_autocast_on_cpu
from fake_h100 import SDPA_CALLS, pin_h100_sdpa
from tracker import LiveBytes, saved_tensor_marker

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32, "amp_bf16": torch.float32}
LORA_MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj", "up": "up_proj",
                "down": "down_proj"}
# memfit's names of the modules PEFT's modules_to_save trains as full copies, as Llama-named models call them.
SAVED_MODULES = {"embedding": "embed_tokens", "head": "lm_head"}


def load_config(path, case):
    import transformers
    with open(path) as f:
        raw = json.load(f)
    raw = {k: v for k, v in raw.items() if not k.startswith("_")}
    config = transformers.AutoConfig.for_model(raw.pop("model_type"), **raw)
    config._attn_implementation = case["attention"]
    config.use_cache = False
    return config


def build_model(config, case):
    """The model on meta in its parameter dtype, with the method's adapters or frozen parts applied."""
    import transformers
    transformers.AutoModelForCausalLM._model_mapping[type(config)]  # import the model's module outside meta/bf16
    dtype = DTYPES[case["precision"]]
    # transformers 5 builds in the config's dtype unless told (`dtype=`); 4.x takes `torch_dtype=`
    dtype_key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config, **{dtype_key: dtype})
    finally:
        torch.set_default_dtype(previous)

    if case["activation_checkpointing"] == "full":
        if "checkpoint_use_reentrant" in case:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": case["checkpoint_use_reentrant"]})
        else:
            model.gradient_checkpointing_enable()
    method = case["method"]
    if method == "lora":
        import peft
        targets = case["lora_targets"]
        target_modules = "all-linear" if targets == "all-linear" else [LORA_MODULES[t] for t in targets.split(",")]
        saved = [SAVED_MODULES[m] for m in case["modules_to_save"].split(",")] if case.get("modules_to_save") else None
        lora = peft.LoraConfig(r=case["lora_rank"], lora_alpha=2 * case["lora_rank"], lora_dropout=case.get(
            "lora_dropout", 0.0), target_modules=target_modules, modules_to_save=saved, task_type="CAUSAL_LM",
            init_lora_weights=case.get("lora_init", True))  # pissa / olora: SVD / QR of the weight (on meta here)
        # PiSSA / OLoRA assign the SVD / QR factors (meta, as the weight) to the adapters: made on meta too
        with torch.device("meta") if case.get("lora_init") else contextlib.nullcontext():
            model = peft.get_peft_model(model, lora)
        if case["activation_checkpointing"] == "full" and case.get("checkpoint_use_reentrant", True):
            model.enable_input_require_grads()  # only reentrant checkpointing needs a grad-requiring input
    elif method in PEFT_BUILDERS:
        import peft
        no_boft_extension()
        model = peft.get_peft_model(model, PEFT_BUILDERS[method](peft, case))
        if case["activation_checkpointing"] == "full" and method not in PROMPT_METHODS:
            model.enable_input_require_grads()  # as for LoRA: reentrant checkpointing needs a grad-requiring input
    elif method == "freeze" or case.get("badam_block"):
        layers = decoder_layers(model)
        if case.get("badam_block"):  # BAdam's active block: one decoder layer, the rest frozen (BAdamBlock)
            keep_layers = layers[:1] if case["badam_block"] == "first" else layers[-1:]
        else:
            keep_layers = layers[-case["freeze_trainable_layers"]:]
        keep = set(id(p) for layer in keep_layers for p in layer.parameters())
        for p in model.parameters():
            p.requires_grad_(id(p) in keep)
        if case["activation_checkpointing"] == "full":
            model.enable_input_require_grads()  # reentrant checkpointing (transformers 4.x default) needs it
    return model


def peft_targets(case):
    targets = case["lora_targets"]
    return list(LORA_MODULES.values()) if targets == "all-linear" else [LORA_MODULES[t] for t in targets.split(",")]


# PEFT methods beyond LoRA (issue 34): each config class with PEFT's defaults but for rank, targets, virtual tokens.
PEFT_BUILDERS = {
    "ia3": lambda peft, c: peft.IA3Config(task_type="CAUSAL_LM"),  # default targets: k, v, down (feed-forward)
    "prompt_tuning": lambda peft, c: peft.PromptTuningConfig(task_type="CAUSAL_LM",
                                                             num_virtual_tokens=c["virtual_tokens"]),
    "prefix_tuning": lambda peft, c: peft.PrefixTuningConfig(task_type="CAUSAL_LM",
                                                             num_virtual_tokens=c["virtual_tokens"]),
    "loha": lambda peft, c: peft.LoHaConfig(r=c["lora_rank"], alpha=c["lora_rank"], target_modules=peft_targets(c),
                                            task_type="CAUSAL_LM"),
    "lokr": lambda peft, c: peft.LoKrConfig(r=c["lora_rank"], alpha=c["lora_rank"], target_modules=peft_targets(c),
                                            task_type="CAUSAL_LM"),
    "vera": lambda peft, c: peft.VeraConfig(r=c["lora_rank"], target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "adaption_prompt": lambda peft, c: peft.AdaptionPromptConfig(adapter_len=c["adapter_len"],
                                                                 adapter_layers=c["adapter_layers"],
                                                                 task_type="CAUSAL_LM"),
    "p_tuning": lambda peft, c: peft.PromptEncoderConfig(task_type="CAUSAL_LM", num_virtual_tokens=c["virtual_tokens"],
                                                         encoder_reparameterization_type=c["encoder"].upper()),
    "oft": lambda peft, c: peft.OFTConfig(r=0, oft_block_size=c["block_size"], target_modules=peft_targets(c),
                                          task_type="CAUSAL_LM"),
    "boft": lambda peft, c: peft.BOFTConfig(boft_block_size=c["block_size"], target_modules=peft_targets(c),
                                            task_type="CAUSAL_LM"),
    # the block norms and the final norm: PEFT's llama default (constants.py), given for every family
    "ln_tuning": lambda peft, c: peft.LNTuningConfig(task_type="CAUSAL_LM", target_modules=[
        "input_layernorm", "post_attention_layernorm", "norm"]),
}
PROMPT_METHODS = {"prompt_tuning", "prefix_tuning", "p_tuning"}
# PEFT's method_comparison benchmark methods (issue 34, third block): the config class with the case's `peft_kwargs`
# (the benchmark's adapter_config.json settings, tools/oracle/cases.py BENCH_PEFT) on the case's targets.
BENCH_CONFIGS = {"miss": "MissConfig", "glora": "GloraConfig"}
for _method, _config in BENCH_CONFIGS.items():
    PEFT_BUILDERS[_method] = (lambda name: lambda peft, c: getattr(peft, name)(
        task_type="CAUSAL_LM", target_modules=peft_targets(c), **c.get("peft_kwargs", {})))(_config)


# PEFT's newer methods (issue 34, third block), each as the MetaMathQA method_comparison experiment configures it
# (peft @ 5d602fd method_comparison/MetaMathQA/experiments/<method>/llama-3.2-3B-*/adapter_config.json), on the
# case's targets where the experiment names them.
PEFT_BUILDERS.update({
    "fourierft": lambda peft, c: peft.FourierFTConfig(n_frequency=c["n_frequency"], scaling=300, random_loc_seed=777,
                                                      target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "waveft": lambda peft, c: peft.WaveFTConfig(n_frequency=c["n_frequency"], scaling=25.0, random_loc_seed=777,
                                                target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "c3a": lambda peft, c: peft.C3AConfig(block_size=c["block_size"], target_modules=peft_targets(c),
                                          task_type="CAUSAL_LM"),
    "shira": lambda peft, c: peft.ShiraConfig(r=c["lora_rank"], random_seed=42, target_modules=peft_targets(c),
                                              task_type="CAUSAL_LM"),
    "hira": lambda peft, c: peft.HiraConfig(r=c["lora_rank"], target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "delora": lambda peft, c: peft.DeloraConfig(r=c["lora_rank"], delora_lambda=15, target_modules=peft_targets(c),
                                                task_type="CAUSAL_LM"),
    "gralora": lambda peft, c: peft.GraloraConfig(r=c["lora_rank"], alpha=2 * c["lora_rank"], gralora_k=2,
                                                  target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "peanut": lambda peft, c: peft.PeanutConfig(r=c["lora_rank"], act_fn="relu", scaling=2.0,
                                                target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "deft": lambda peft, c: peft.DeftConfig(r=c["lora_rank"], alpha=4 * c["lora_rank"], decomposition_method="relu",
                                            target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "road": lambda peft, c: peft.RoadConfig(variant="road_2", group_size=64, target_modules=peft_targets(c),
                                            task_type="CAUSAL_LM"),
    "beft": lambda peft, c: peft.BeftConfig(target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "adamss": lambda peft, c: peft.AdamssConfig(r=100, num_subspaces=32, subspace_rank=1, init_weights="orthogonal",
                                                target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "frod": lambda peft, c: peft.FrodConfig(sparse_rate=0.01, regularization_alpha=0.001, save_projection=True,
                                            target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "osf": lambda peft, c: peft.OSFConfig(target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "trainable_tokens": lambda peft, c: peft.TrainableTokensConfig(token_indices=[0, 1],
                                                                   target_modules=["embed_tokens"]),
    "pvera": lambda peft, c: peft.PveraConfig(r=c["lora_rank"], d_initial=0.1, save_projection=True,
                                              target_modules=peft_targets(c), task_type="CAUSAL_LM"),
    "unilora": lambda peft, c: peft.UniLoraConfig(r=c["lora_rank"], theta_d_length=256, proj_seed=42,
                                                  init_theta_d_bound=0.02, target_modules=peft_targets(c),
                                                  task_type="CAUSAL_LM"),
    "adalora": lambda peft, c: peft.AdaLoraConfig(init_r=c["lora_rank"], target_r=32, r=8, lora_alpha=8, beta1=0.85,
                                                  beta2=0.85, deltaT=1, orth_reg_weight=0.5, tinit=200, tfinal=500,
                                                  total_step=5000, target_modules=peft_targets(c),
                                                  task_type="CAUSAL_LM"),
    "psoft": lambda peft, c: peft.PsoftConfig(ab_svd_init="psoft_init", psoft_orth=True, psoft_mag_a=True,
                                              psoft_mag_b=True, num_cayley_neumann_terms=5,
                                              target_modules=peft_targets(c), task_type="CAUSAL_LM", **c["peft_kwargs"]),
    "randlora": lambda peft, c: peft.RandLoraConfig(r=c["lora_rank"], randlora_alpha=640, projection_prng_key=0,
                                                    save_projection=True, sparse=False, very_sparse=False,
                                                    target_modules=peft_targets(c), task_type="CAUSAL_LM"),
})


def no_boft_extension():
    """BOFT compiles a CUDA extension (fbd_cuda) for its block-diagonal matrix; without nvcc it falls back to
    torch.block_diag. With the default butterfly factor 1 both give the same [1, in, in] fp32 matrix (FastBlockDiag
    saves only its [1, blocks, b, b] input): the runner skips the compile attempt (peft tuners/boft/layer.py)."""
    try:
        import peft.tuners.boft.layer as boft_layer
    except ImportError:
        return
    boft_layer.get_fbd_cuda = lambda: None


def decoder_layers(model):
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > 0 and hasattr(module[0], "forward"):
            return list(module)
    raise ValueError("no decoder layer list found")


def make_optimizer(params, case, tracker=None):
    name, impl = case["optimizer"], case["optimizer_impl"]
    flags = {"foreach": impl == "foreach", "fused": impl == "fused"} if impl != "for_loop" else {"foreach": False}
    if case.get("badam_block"):
        return BAdamBlock(params, flags, tracker)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-5, **flags)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, **flags)
    if name == "sgd_momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, **flags)
    if name == "adafactor":
        # transformers' Adafactor (the HF Trainer's optim="adafactor") with a set lr; torch.optim.Adafactor calls
        # .item() on step counts and norms, which fake tensors cannot answer
        from transformers.optimization import Adafactor
        return Adafactor(params, lr=1e-3, scale_parameter=False, relative_step=False, warmup_init=False)
    if name == "muon":
        return MuonWithAdamW(params, flags)
    raise ValueError(f"optimizer {name} not in this runner")


class MuonWithAdamW:
    """torch.optim.Muon on the 2-d block matrices, AdamW on the rest (Muon takes 2-d parameters only; the embedding
    and output layer stay on AdamW as Keller Jordan's and torch's docs recommend)."""

    def __init__(self, params, flags):
        named = list(params)
        matrices = [p for p in named if p.ndim == 2 and not getattr(p, "_oracle_outer", False)]
        rest = [p for p in named if not (p.ndim == 2 and not getattr(p, "_oracle_outer", False))]
        self.opts = [torch.optim.Muon(matrices, lr=1e-3)]
        if rest:
            self.opts.append(torch.optim.AdamW(rest, lr=1e-5, **flags))
        self.state = {}

    def step(self):
        for o in self.opts:
            o.step()
        self.state = {k: v for o in self.opts for k, v in o.state.items()}

    def zero_grad(self, set_to_none=True):
        for o in self.opts:
            o.zero_grad(set_to_none=set_to_none)


class BAdamBlock:
    """badam 1.4 (PyPI) badam/block_optim.py BlockOptimizer on one GPU, written out (the package is not in the version
    set): `_switch_trainable_params_single_gpu` keeps an fp32 clone of each active 16-bit parameter
    (`param.clone().float()`) and gives the base AdamW those clones; `step_single_gpu` runs `_grad_to_hp`
    (`hp.grad = lp.grad.float()`, then `lp.grad = None`, parameter by parameter), the base step, `_update_param`
    (`lp.data.copy_(hp.to(lp.dtype))`) and `_clean_hp_grad` (`hp.grad = None`). A block switch (every
    switch_block_every steps, 50 by default) drops the clones and the states; two steps never switch."""

    def __init__(self, params, flags, tracker):
        self.low = list(params)
        self.high = [p.detach().clone().float() for p in self.low]
        for h in self.high:
            h.requires_grad_(True)
            if tracker is not None:
                tracker.track(h, "optimizer")  # made before the tracker's dispatch is entered
        self.base = torch.optim.AdamW(self.high, lr=1e-5, **flags)

    @property
    def state(self):
        return self.base.state

    def step(self):
        for low, high in zip(self.low, self.high):
            high.grad = low.grad.float()
            low.grad = None
        self.base.step()
        for low, high in zip(self.low, self.high):
            low.data.copy_(high.to(low.dtype).data)
            high.grad = None

    def zero_grad(self, set_to_none=True):
        self.base.zero_grad(set_to_none=set_to_none)


class Hooks:
    """Module names for the tracker, and the loss region: from the output layer's forward to its input's gradient."""

    def __init__(self, model, tracker):
        self.tracker = tracker
        self.names = {id(m): n for n, m in model.named_modules()}
        head = model.get_output_embeddings()
        self.stack = []
        self.handles = [
            torch.nn.modules.module.register_module_forward_pre_hook(self._enter),
            torch.nn.modules.module.register_module_forward_hook(self._exit),
            head.register_forward_pre_hook(self._head_enter),
            head.register_forward_hook(self._head_exit),
        ]

    def _enter(self, module, args):
        self.stack.append(self.names.get(id(module), type(module).__name__))
        self.tracker.module = self.stack[-1]

    def _exit(self, module, args, out):
        if self.stack:
            self.stack.pop()
        self.tracker.module = self.stack[-1] if self.stack else ""

    def _head_enter(self, module, args):
        self.tracker.region = "head"

    def _head_exit(self, module, args, out):
        x = args[0] if args else None
        if isinstance(x, torch.Tensor) and x.requires_grad:
            x.register_hook(self._head_input_grad)

    def _head_input_grad(self, grad):
        self.tracker.region = "body"

    def remove(self):
        for h in self.handles:
            h.remove()


def unpacked_positions():
    """transformers 5 treats a fake tensor as tracing and then keeps a packed-sequence mask that a GPU run drops
    (`masking_utils.find_packed_sequence_indices` returns None when every row is one sequence, as the oracle's
    arange positions are); without this, SDPA gets an explicit mask and leaves flash."""
    try:
        from transformers import masking_utils
    except ImportError:  # transformers < 4.53 has no masking_utils
        return
    if hasattr(masking_utils, "find_packed_sequence_indices"):
        masking_utils.find_packed_sequence_indices = lambda *args, **kwargs: None


def run_case(case, config_path, steps=None, shard=None, step_context=None):
    """Runs `steps` training steps on fake tensors; returns the tracker. `shard(model)`, if given, wraps the model on
    meta before its storage is made (fsdp2_loop.py); `step_context(buffers)`, if given, is entered around each step's
    forward and backward with the step's input buffers (context parallelism shards them along the sequence)."""
    steps = steps or case.get("steps", 2)
    unpacked_positions()
    config = load_config(config_path, case)
    model = build_model(config, case)
    tracker = LiveBytes()
    if case.get("record_allocations"):
        tracker.events = []
    amp = case["precision"] == "amp_bf16"
    tracker.optimizer_scalars_on_host = case["optimizer_impl"] != "fused"
    with FakeTensorMode(allow_non_fake_inputs=True), pin_h100_sdpa(), \
            cuda_autocast_on_cpu() if amp else contextlib.nullcontext():
        if shard is not None:
            shard(model)
        model.to_empty(device="cpu")
        if getattr(config, "tie_word_embeddings", False):
            # to_empty unties them; a modules_to_save wrapper ties its original module (its copy was made untied)
            unwrap = lambda m: getattr(m, "original_module", m)
            unwrap(model.get_output_embeddings()).weight = unwrap(model.get_input_embeddings()).weight
        model.train()
        for m in model.modules():
            if type(m).__module__.startswith(("peft.tuners.loha", "peft.tuners.lokr")):
                # LyCORIS layers draw `torch.rand(1) > module_dropout` per forward in training mode, a data-dependent
                # branch; in eval mode they take the adapter path unconditionally, as a GPU does with dropout 0
                m.training = False
        trainable = tracker.track_model(model)
        for module in (model.get_input_embeddings(), model.get_output_embeddings()):
            for p in module.parameters():
                p._oracle_outer = True  # the embedding and output layer (MuonWithAdamW leaves them to AdamW)
        opt = make_optimizer(trainable, case, tracker)
        hooks = Hooks(model, tracker)
        b, s = case["micro_batch"], case["seq_len"]
        with tracker, saved_tensor_marker(tracker):
            tracker.phase = "inputs"
            ids = torch.randint(0, config.vocab_size, (b, s))
            labels = ids.clone()
            tracker.mark(ids, "inputs")
            tracker.mark(labels, "inputs")
            outputs = None
            for step in range(steps):
                tracker.step = step
                tracker.phase, tracker.region = "forward", "body"
                autocast = torch.autocast("cpu", dtype=torch.bfloat16) if amp else contextlib.nullcontext()
                around = step_context([ids, labels]) if step_context else contextlib.nullcontext()
                with around:
                    with autocast:
                        outputs = model(input_ids=ids, labels=labels)
                    tracker.phase = "backward"
                    outputs.loss.backward()
                if case.get("release_outputs"):
                    outputs = None
                tracker.phase, tracker.module = "optimizer", "optimizer"
                for p in trainable:  # FSDP2 sets a shard's reduced gradient without the accumulate hook
                    if p.grad is not None and tracker.block_of(p.grad) is not None:
                        tracker.mark(p.grad, "gradients")
                opt.step()
                if case["method"] == "adalora":  # AdaLoRA's RankAllocator: after the step, before zero_grad
                    model.base_model.update_and_allocate(step)
                for state in opt.state.values():
                    for v in state.values():
                        if isinstance(v, torch.Tensor) and tracker.block_of(v) is not None:
                            tracker.mark(v, "optimizer")
                opt.zero_grad(set_to_none=True)
        hooks.remove()
    tracker.sdpa_calls = dict(SDPA_CALLS)
    return tracker

"""What the harness needs to know per model family, without importing torch.

The case CSV speaks in family-neutral short names (q k v o gate up down); transformers names the
same projections differently in every family, and some families fuse q, k and v into one module.
This module is the one place that translates, so the dry run can check a case and the worker can
build the same LoRA config / tensor-parallel plan from it.
"""

from __future__ import annotations

from dataclasses import dataclass

SHORT_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")

# Names are PEFT target_modules entries: PEFT matches an entry against a module's full name as an
# exact suffix after a dot, so "attn.c_proj" picks GPT-2's attention output but not "mlp.c_proj".
_LLAMA_LIKE = {
    "q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
    "gate": "gate_proj", "up": "up_proj", "down": "down_proj",
}
_FUSED_QKV_NEOX = {  # BLOOM, GPT-NeoX and Falcon share this layout under different parents
    "q": "query_key_value", "k": "query_key_value", "v": "query_key_value",
    "o": "dense", "up": "mlp.dense_h_to_4h", "down": "mlp.dense_4h_to_h",
}

FAMILY_MODULES: dict[str, dict[str, str]] = {
    **{t: _LLAMA_LIKE for t in (
        "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe",
        "gemma", "gemma2", "gemma3_text",
    )},
    # Mixtral's experts keep the original Mistral paper names w1 (gate), w3 (up), w2 (down).
    "mixtral": {**_LLAMA_LIKE, "gate": "w1", "up": "w3", "down": "w2"},
    "starcoder2": {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
                   "up": "mlp.c_fc", "down": "mlp.c_proj"},
    # GPT-2 uses one Conv1D for q, k and v, and calls both output projections c_proj.
    "gpt2": {"q": "attn.c_attn", "k": "attn.c_attn", "v": "attn.c_attn", "o": "attn.c_proj",
             "up": "mlp.c_fc", "down": "mlp.c_proj"},
    "opt": {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "self_attn.out_proj",
            "up": "fc1", "down": "fc2"},
    "bloom": {**_FUSED_QKV_NEOX, "q": "self_attention.query_key_value",
              "k": "self_attention.query_key_value", "v": "self_attention.query_key_value",
              "o": "self_attention.dense"},
    "falcon": {**_FUSED_QKV_NEOX, "q": "self_attention.query_key_value",
               "k": "self_attention.query_key_value", "v": "self_attention.query_key_value",
               "o": "self_attention.dense"},
    "gpt_neox": {**_FUSED_QKV_NEOX, "q": "attention.query_key_value",
                 "k": "attention.query_key_value", "v": "attention.query_key_value",
                 "o": "attention.dense"},
    "phi": {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "self_attn.dense",
            "up": "mlp.fc1", "down": "mlp.fc2"},
    # T5 v1.0 has one input projection "wi"; gated variants (v1.1, flan) split it, see t5_modules.
    "t5": {"q": "q", "k": "k", "v": "v", "o": "o", "up": "wi", "down": "wo"},
}

ENCODER_DECODER = {"t5", "mt5", "bart"}

# transformers implements only eager attention for these (the ALiBi / relative-position bias is
# added inside their own attention code); asking for sdpa makes from_config raise.
EAGER_ONLY = {"bloom", "t5", "mt5"}

# Families whose attention splits q, k and v into separate projections and derives the head count
# from the projection's output width, so a column-sharded projection just yields fewer local heads.
TP_CAPABLE = {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text"}

# Learned absolute position tables: a longer sequence indexes past the table and crashes.
LEARNED_POSITIONS = {"gpt2": "n_positions", "opt": "max_position_embeddings"}


class TargetError(ValueError):
    """A LoRA target list that cannot be mapped for this family."""


def _t5_modules(config: dict) -> dict[str, str]:
    ff = str(config.get("feed_forward_proj", "relu"))
    if ff.startswith("gated-") or config.get("is_gated_act"):
        return {**FAMILY_MODULES["t5"], "gate": "wi_0", "up": "wi_1"}
    return FAMILY_MODULES["t5"]


def family_modules(config: dict) -> dict[str, str]:
    """Short name -> module name for this config's family (missing keys: family has no such module)."""
    model_type = config.get("model_type", "")
    if model_type in ("t5", "mt5"):
        return _t5_modules(config)
    if model_type not in FAMILY_MODULES:
        raise TargetError(f"no module-name map for model_type {model_type!r}")
    return FAMILY_MODULES[model_type]


def parse_short_targets(text: str) -> list[str]:
    """'q,k,v,o' -> ['q','k','v','o']; raises on unknown or empty names."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise TargetError("lora_targets is empty")
    unknown = [t for t in names if t not in SHORT_TARGETS]
    if unknown:
        raise TargetError(f"unknown LoRA target(s) {', '.join(unknown)} "
                          f"(use {','.join(SHORT_TARGETS)} or all-linear)")
    return names


def lora_target_modules(config: dict, targets: str) -> list[str] | str:
    """Map the CSV's lora_targets to PEFT target_modules for this config.

    'all-linear' is passed through: PEFT resolves it itself (every Linear except the output head).
    Fused projections collapse: q,v on GPT-2 becomes one entry, c_attn, which then adapts k too;
    the dry run reports that so the case's lora_targets can be read correctly.
    """
    if targets.strip() == "all-linear":
        return "all-linear"
    table = family_modules(config)
    mapped: list[str] = []
    for short in parse_short_targets(targets):
        if short not in table:
            raise TargetError(f"model_type {config.get('model_type')!r} has no {short!r} projection")
        if table[short] not in mapped:
            mapped.append(table[short])
    return mapped


def covered_short_targets(config: dict, targets: str) -> list[str]:
    """Every short name that really gets an adapter: q,v on a fused-qkv family also covers k."""
    if targets.strip() == "all-linear":
        return [t for t in SHORT_TARGETS if t in family_modules(config)]
    table = family_modules(config)
    modules = set(lora_target_modules(config, targets))
    return [t for t in SHORT_TARGETS if table.get(t) in modules]


def fused_target_note(config: dict, targets: str) -> str:
    """Non-empty when the mapping adapts more than asked (fused qkv): say what really gets LoRA."""
    if targets.strip() == "all-linear":
        return ""
    asked = set(parse_short_targets(targets))
    extra = [t for t in covered_short_targets(config, targets) if t not in asked]
    return f"fused projection also adapts {','.join(extra)}" if extra else ""


@dataclass(frozen=True)
class Dims:
    """The few config numbers the checks and the campaign's rough fit estimate need."""
    model_type: str
    hidden: int
    layers: int              # decoder layers (plus encoder layers for encoder-decoder models)
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int        # dense MLP width (per expert for MoE)
    gated_mlp: bool
    vocab: int
    tied: bool
    experts: int             # 0 for dense models
    experts_per_token: int
    max_positions: int       # 0 = no limit known


def _first(config: dict, *keys, default=None):
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return default


def dims(config: dict) -> Dims:
    model_type = config.get("model_type", "")
    hidden = int(_first(config, "hidden_size", "n_embd", "n_embed", "d_model", default=0))
    layers = int(_first(config, "num_hidden_layers", "n_layer", "num_layers", default=0))
    if model_type in ENCODER_DECODER:
        layers += int(_first(config, "num_decoder_layers", "num_layers", default=0))
    heads = int(_first(config, "num_attention_heads", "n_head", "num_heads", default=1))
    kv_heads = int(_first(config, "num_key_value_heads", default=heads) or heads)
    head_dim = int(_first(config, "head_dim", "d_kv", default=hidden // max(heads, 1)))
    experts = int(_first(config, "num_experts", "num_local_experts", "n_routed_experts", default=0))
    if experts:
        intermediate = int(_first(config, "moe_intermediate_size", "intermediate_size", default=0))
    else:
        intermediate = int(_first(config, "intermediate_size", "n_inner", "ffn_dim", "d_ff",
                                  default=0) or 4 * hidden)
    gated = model_type in FAMILY_MODULES and "gate" in FAMILY_MODULES[model_type]
    if model_type in ("t5", "mt5"):
        gated = "gate" in _t5_modules(config)
    # Families differ in the default of tie_word_embeddings when the config omits it.
    tied_default = model_type in ("gpt2", "opt", "bloom", "t5", "mt5", "gemma", "gemma2",
                                  "gemma3_text", "gpt_neox")
    tied = bool(config.get("tie_word_embeddings", tied_default))
    max_pos = int(_first(config, "n_positions", "max_position_embeddings", default=0) or 0)
    if model_type in ("bloom", "t5", "mt5"):
        max_pos = 0  # ALiBi / relative buckets: no table to run off
    return Dims(model_type, hidden, layers, heads, kv_heads, head_dim, intermediate, gated,
                int(config.get("vocab_size", 0)), tied, experts,
                int(_first(config, "num_experts_per_tok", "num_experts_per_token", default=0)),
                max_pos)


def param_counts(d: Dims) -> tuple[float, float]:
    """(all parameters, parameters of one block) from the config's shapes."""
    attn = d.hidden * d.head_dim * (2 * d.heads + 2 * d.kv_heads)
    if d.experts:
        mlp = d.experts * 3 * d.hidden * d.intermediate + d.hidden * d.experts
    else:
        mlp = (3 if d.gated_mlp else 2) * d.hidden * d.intermediate
    block = attn + mlp
    if d.model_type in ENCODER_DECODER:
        block += attn / 2  # decoder blocks carry cross-attention: half the stack, one more attn
    embed = d.vocab * d.hidden * (1 if d.tied else 2)
    return embed + d.layers * block, block


def layer_count_keys(config: dict) -> list[int]:
    """Lengths of the repeated-block lists the worker should find (decoder, and encoder for T5)."""
    d = dims(config)
    if d.model_type in ENCODER_DECODER:
        enc = int(_first(config, "num_layers", default=0))
        dec = int(_first(config, "num_decoder_layers", "num_layers", default=0))
        return sorted({enc, dec})
    return [d.layers]


def tp_problems(config: dict, tp: int) -> list[str]:
    """Why this config cannot be split tp ways by the harness's tensor-parallel plan (empty = fine)."""
    d = dims(config)
    if d.model_type not in TP_CAPABLE:
        return [f"tensor parallel is implemented for {', '.join(sorted(TP_CAPABLE))}, "
                f"not model_type {d.model_type!r}"]
    problems = []
    for name, value in (("num_attention_heads", d.heads), ("num_key_value_heads", d.kv_heads),
                        ("intermediate_size", d.intermediate)):
        if value % tp:
            problems.append(f"{name}={value} is not divisible by tp={tp}")
    return problems

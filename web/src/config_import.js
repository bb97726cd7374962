// Config import: a training framework's own config file (Axolotl, LLaMA-Factory, torchtune,
// DeepSpeed, accelerate, HF TrainingArguments / TRL SFTConfig, a Megatron-LM argument list, PEFT's
// adapter_config.json)
// translated into memfit's request. Config translation only, no estimator math: every key read
// names the request field it fills; every key not read is listed (never dropped silently).
// Shared by the CLI (require) and the page (the lazily loaded memfit-import.js); the YAML parser
// (the npm `yaml` package) is passed in.
'use strict';
(function (root, factory) {
  if (typeof module === 'object' && module.exports) module.exports = factory();
  else (root.memfitWeb = root.memfitWeb || {}).configImport = factory();
})(globalThis, () => {
  const MAX_INPUT_CHARS = 1 << 20;
  const FORMAT_NAMES = {
    axolotl: 'Axolotl YAML', llamafactory: 'LLaMA-Factory YAML', torchtune: 'torchtune recipe YAML',
    deepspeed: 'DeepSpeed JSON', accelerate: 'accelerate config YAML',
    hf_args: 'HF TrainingArguments / TRL SFTConfig', megatron: 'Megatron-LM argument list',
    peft: 'PEFT adapter_config.json',
  };
  // Keys each format is recognised by (the format with most of them present wins).
  const SIGNATURES = {
    axolotl: ['base_model', 'adapter', 'micro_batch_size', 'sequence_len', 'sample_packing', 'lora_target_linear',
      'num_epochs', 'pad_to_sequence_len', 'flash_attention', 'special_tokens', 'val_set_size', 'dataset_prepared_path'],
    llamafactory: ['stage', 'finetuning_type', 'cutoff_len', 'lora_target', 'template', 'quantization_bit',
      'freeze_trainable_layers', 'pure_bf16', 'flash_attn', 'plot_loss', 'max_samples', 'enable_liger_kernel'],
    torchtune: ['checkpointer', 'enable_activation_checkpointing', 'enable_activation_offloading', 'batch_size',
      'dtype', 'metric_logger', 'max_steps_per_epoch', 'optimizer_in_bwd', 'log_peak_memory_stats', 'tokenizer'],
    deepspeed: ['zero_optimization', 'train_micro_batch_size_per_gpu', 'train_batch_size', 'gradient_clipping',
      'zero_allow_untested_optimizer', 'steps_per_print', 'wall_clock_breakdown'],
    accelerate: ['distributed_type', 'compute_environment', 'num_processes', 'num_machines', 'mixed_precision',
      'machine_rank', 'main_training_function', 'fsdp_config', 'deepspeed_config', 'rdzv_backend', 'same_network', 'dynamo_config'],
    hf_args: ['per_device_train_batch_size', 'output_dir', 'gradient_checkpointing', 'optim', 'max_seq_length',
      'max_length', 'packing', 'dataset_text_field', 'use_peft', 'lora_r', 'model_name_or_path', 'torch_dtype',
      'use_liger_kernel', 'completion_only_loss', 'padding_free', 'num_train_epochs'],
    peft: ['peft_type', 'task_type', 'base_model_name_or_path', 'inference_mode', 'auto_mapping', 'revision', 'target_modules'],
  };
  // Names of ignored keys that may change memory: flagged so that a user sees what memfit did not model.
  const MEMORY_HINT = /offload|quant|liger|unsloth|kernel|checkpoint|parallel|shard|fsdp|zero|batch|seq|len|dtype|precision|bf16|fp16|fp8|optim|lora|peft|dora|adapter|attn|attention|compile|pack|bucket|memory|cpu|flash|cross_entropy|galore|badam|apollo|8bit|4bit|modules_to_save|unfrozen|trainable|vocab|hidden|layers|heads|ffn|recompute|padding/i;
  // HF / PEFT module names -> memfit LoRA targets.
  const LORA_MODULES = { q_proj: 'q', k_proj: 'k', v_proj: 'v', o_proj: 'o', output_proj: 'o', gate_proj: 'gate', up_proj: 'up',
    down_proj: 'down', w1: 'gate', w3: 'up', w2: 'down', lm_head: 'head', output: 'head' };
  // HF TrainingArguments `optim` (also Axolotl's `optimizer`, LLaMA-Factory's `optim`) -> optimizer and impl.
  const HF_OPTIM = {
    adamw_torch: ['adamw', 'foreach'], adamw_torch_fused: ['adamw', 'fused'], adamw_hf: ['adamw', 'forloop'],
    adamw_apex_fused: ['adamw', 'fused'], adamw_bnb_8bit: ['adamw_8bit'], adamw_8bit: ['adamw_8bit'],
    paged_adamw_8bit: ['paged_adamw_8bit'], paged_adamw_32bit: ['paged_adamw_32bit'], paged_adamw: ['paged_adamw_32bit'],
    adamw_torch_4bit: ['adamw_4bit'], adafactor: ['adafactor'], sgd: ['sgd'], lion_32bit: ['lion'],
    galore_adamw: ['galore_adamw'], galore_adamw_layerwise: ['galore_adamw'], apollo_adamw: ['apollo_adamw'],
    apollo_adamw_layerwise: ['apollo_adamw'],
  };

  class ImportError extends Error {
    constructor(code, path, message, line) {
      super(message);
      this.code = code;
      this.path = path;
      this.line = line;
    }
  }

  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const pointer = (parts) => parts.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
  const lower = (v) => String(v).trim().toLowerCase();
  // A shell variable or an OmegaConf interpolation left in a value (`$PP_SIZE`, `${output_dir}`).
  const isExpression = (v) => typeof v === 'string' && v.includes('$');

  /// The parsed file, what was read from it and the request being filled.
  class Mapping {
    constructor(doc, lines) {
      this.doc = doc;
      this.lines = lines;  // pointer -> 1-based line of the key
      this.request = { training: {} };
      this.mapped = [];
      this.read = new Set();
      this.notes = [];
      this.modelId = null;
      this.extraIgnored = [];  // keys of the files this one names, already prefixed
    }

    lineOf(ptr) {
      return this.lines.get(ptr) ?? null;
    }

    /// The value at a path (an array of keys); undefined when absent. Marks it read.
    take(parts) {
      let v = this.doc;
      for (const p of parts) {
        if (!isObject(v) || !Object.hasOwn(v, p)) return undefined;
        v = v[p];
      }
      this.read.add(pointer(parts));
      return v;
    }

    /// Back to unread (listed as ignored): a value memfit does not use, such as "auto".
    unread(parts) {
      this.read.delete(Array.isArray(parts) ? pointer(parts) : parts);
    }

    has(parts) {
      let v = this.doc;
      for (const p of parts) {
        if (!isObject(v) || !Object.hasOwn(v, p)) return false;
        v = v[p];
      }
      return v !== null && v !== undefined;
    }

    /// A request field (a JSON Pointer into the request) filled from the key at `from`.
    set(field, value, from, note) {
      const parts = field.split('/').slice(1);
      let o = this.request;
      for (const p of parts.slice(0, -1)) o = o[p] = isObject(o[p]) ? o[p] : {};
      o[parts.at(-1)] = value;
      const fromPtr = Array.isArray(from) ? pointer(from) : from;
      this.mapped = this.mapped.filter((m) => m.to !== field);
      this.mapped.push({ from: fromPtr, line: this.lineOf(fromPtr), to: field, value, ...(note ? { note } : {}) });
    }

    fail(code, parts, message) {
      const ptr = Array.isArray(parts) ? pointer(parts) : parts;
      throw new ImportError(code, ptr, message, this.lineOf(ptr));
    }

    /// An integer >= 1 at `parts`, or undefined when absent, null, or "auto" (the trainer decides).
    positiveInt(parts) {
      const v = this.take(parts);
      if (v === 'auto' || isExpression(v)) this.unread(parts);
      if (isExpression(v)) this.note(`${pointer(parts).slice(1)}: ${v} is an expression memfit does not evaluate (not read)`);
      if (v === undefined || v === null || v === 'auto' || isExpression(v)) return undefined;
      const n = typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v;
      if (!Number.isInteger(n) || n < 1) this.fail('invalid_value', parts, `${pointer(parts).slice(1)} must be a whole number ≥ 1, got ${JSON.stringify(v)}`);
      return n;
    }

    /// A boolean at `parts` (YAML true/false, or the strings "true"/"false"); undefined when absent.
    bool(parts) {
      const v = this.take(parts);
      if (v === undefined || v === null) return undefined;
      if (typeof v === 'boolean') return v;
      if (v === 'true' || v === 'false') return v === 'true';
      return this.fail('invalid_type', parts, `${pointer(parts).slice(1)} must be true or false, got ${JSON.stringify(v)}`);
    }

    note(text) {
      if (!this.notes.includes(text)) this.notes.push(text);
    }

    /// Keys read that fill no field (e.g. load_in_8bit: false): listed with `to` null.
    readWithoutField() {
      const from = new Set(this.mapped.map((x) => x.from));
      const reads = [...this.read].filter((r) => r && ![...this.read].some((o) => o.startsWith(`${r}/`)));
      return reads.filter((r) => !from.has(r)).map((r) => ({ from: r, line: this.lineOf(r), to: null, value: this.valueAt(r),
        note: 'read; sets no field (memfit\'s default applies)' }));
    }

    valueAt(ptr) {
      let v = this.doc;
      for (const p of ptr.split('/').slice(1).map((x) => x.replace(/~1/g, '/').replace(/~0/g, '~'))) v = isObject(v) ? v[p] : undefined;
      return v;
    }

    /// Every key not read, as the outermost key whose whole subtree went unread.
    ignored() {
      const out = [];
      const walk = (v, parts) => {
        const ptr = pointer(parts);
        if (parts.length && this.read.has(ptr)) return;
        const readBelow = [...this.read].some((r) => r.startsWith(`${ptr}/`));
        if (parts.length && (!readBelow || !isObject(v))) {
          // "auto": the HF integration fills it from the trainer's arguments (memfit reads those).
          const hint = v !== 'auto' && MEMORY_HINT.test(String(parts.at(-1)).replace(/-/g, '_'));
          out.push({ key: ptr, line: this.lineOf(ptr), value: v, may_change_memory: hint });
          return;
        }
        if (isObject(v)) for (const k of Object.keys(v)) walk(v[k], [...parts, k]);
      };
      walk(this.doc, []);
      return out;
    }
  }

  // ---- reading the text ----------------------------------------------------------------------

  /// Lines of every key (and sequence item) in a YAML/JSON document, by JSON Pointer.
  function keyLines(YAML, node, lineCounter, parts = [], out = new Map()) {
    if (YAML.isMap(node)) {
      for (const pair of node.items) {
        const key = YAML.isScalar(pair.key) ? pair.key.value : String(pair.key);
        const at = [...parts, key];
        if (pair.key?.range) out.set(pointer(at), lineCounter.linePos(pair.key.range[0]).line);
        keyLines(YAML, pair.value, lineCounter, at, out);
      }
    } else if (YAML.isSeq(node)) {
      node.items.forEach((item, i) => {
        const at = [...parts, i];
        if (item?.range) out.set(pointer(at), lineCounter.linePos(item.range[0]).line);
        keyLines(YAML, item, lineCounter, at, out);
      });
    }
    return out;
  }

  function parseStructured(text, YAML) {
    const lineCounter = new YAML.LineCounter();
    // YAML 1.1, as PyYAML (and so every Python framework here) reads it: yes/no/on/off are booleans.
    const doc = YAML.parseDocument(text, { lineCounter, version: '1.1', uniqueKeys: true, prettyErrors: false });
    if (doc.errors.length) {
      const e = doc.errors[0];
      const line = e.linePos?.[0]?.line ?? (e.pos ? lineCounter.linePos(e.pos[0]).line : null);
      throw new ImportError('invalid_yaml', '', `line ${line}: ${e.message.split('\n')[0]}`, line);
    }
    let value;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {  // an alias expanding past maxAliasCount (a "billion laughs" file)
      throw new ImportError('invalid_yaml', '', `the file cannot be read: ${e.message}`, null);
    }
    if (!isObject(value)) {
      throw new ImportError('invalid_type', '', `the file must hold a mapping of keys (YAML) or a JSON object, got ${value === null ? 'nothing' : Array.isArray(value) ? 'a list' : typeof value}`, 1);
    }
    return { value, lines: keyLines(YAML, doc.contents, lineCounter) };
  }

  /// A Megatron-LM launch script or argument list: shell variables with literal values are
  /// substituted (NAME=value, ${NAME:-default}); each --flag [value] becomes a key with its line.
  function parseMegatronArgs(text) {
    const vars = new Map();
    for (const m of text.matchAll(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(?:\$\{[A-Za-z_0-9]+:-([^}]*)\}|"([^"$]*)"|([^\s$#"'()]+))\s*(?:#.*)?$/gm)) {
      vars.set(m[1], (m[2] ?? m[3] ?? m[4] ?? '').replace(/^"|"$/g, ''));
    }
    const expand = (token) => token.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
      (whole, a, dflt, b) => vars.get(a ?? b) ?? dflt ?? whole);
    const value = {};
    const lines = new Map();
    const tokens = [];
    text.split('\n').forEach((raw, i) => {
      const line = raw.replace(/(^|\s)#.*$/, '');
      for (const t of line.replace(/["'\\]/g, ' ').split(/\s+/)) if (t) tokens.push({ t: expand(t), line: i + 1 });
    });
    for (let i = 0; i < tokens.length; i += 1) {
      const m = /^--([A-Za-z][\w-]*)(?:=(.*))?$/.exec(tokens[i].t);
      if (!m) continue;
      const key = m[1];
      let v = true;
      if (m[2] !== undefined) v = m[2];
      else if (i + 1 < tokens.length && !tokens[i + 1].t.startsWith('--') && tokens[i + 1].line === tokens[i].line) v = tokens[++i].t;
      value[key] = typeof v === 'string' && /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(v) ? Number(v) : v;
      lines.set(pointer([key]), tokens[i].line);
    }
    if (!Object.keys(value).length) throw new ImportError('invalid_value', '', 'no --flags found in the argument list', null);
    return { value, lines };
  }

  const MEGATRON_FLAG = /(^|[\s"'])--(tensor-model-parallel-size|pipeline-model-parallel-size|micro-batch-size|global-batch-size|num-layers|seq-length|hidden-size)\b/;

  /// The format: the one asked for, else from the file name and the keys present.
  function detectFormat(value, fileName) {
    const name = lower(fileName || '');
    const score = {};
    for (const [format, keys] of Object.entries(SIGNATURES)) score[format] = keys.filter((k) => Object.hasOwn(value, k)).length;
    if (Object.values(value).some((v) => isObject(v) && Object.hasOwn(v, '_component_'))) score.torchtune += 3;
    if (/^ds_|deepspeed|zero[0-3]?/.test(name.split('/').pop()) && name.endsWith('.json')) score.deepspeed += 2;
    const best = Object.entries(score).sort((a, b) => b[1] - a[1])[0];
    if (best[1] === 0) return null;
    return best[0];
  }

  // ---- shared mappings -----------------------------------------------------------------------

  /// A repository name without what does not change the architecture: Meta's old "Meta-" prefix
  /// (Meta-Llama-3.1-8B is now Llama-3.1-8B) and an instruction-tuned or format suffix.
  const baseName = (id) => lower(id.split(/[\\/]/).pop()).replace(/^meta-(?=llama)/, '').replace(/-(instruct|chat|it|hf)$/, '');

  /// The preset an HF id names: the same id, else the same repository name under another owner,
  /// else the same base name (an -Instruct model and its base share the architecture).
  function matchPreset(id, presets) {
    const name = lower(id.split(/[\\/]/).pop());
    presets = (presets ?? []).filter((p) => typeof p === 'string');
    return presets?.find((p) => lower(p) === lower(id)) ?? presets?.find((p) => lower(p.split('/').pop()) === name)
      ?? presets?.find((p) => baseName(p) === baseName(id)) ?? null;
  }

  function setModel(m, parts, presets) {
    const id = m.take(parts);
    if (typeof id !== 'string' || !id) return;
    m.modelId = id;
    const match = matchPreset(id, presets);
    if (match) m.set('/model/preset', match, parts, match === id ? undefined : `${id} is estimated as the preset ${match} (the same architecture)`);
    else m.note(`model ${id} is not a memfit preset: give its config.json (model.config), or a preset with the same architecture`);
  }

  /// LoRA targets from a list (or comma-separated string) of module names.
  function setLoraTargets(m, parts, list) {
    const names = typeof list === 'string' ? list.split(',').map((s) => s.trim()).filter(Boolean) : list;
    if (!Array.isArray(names)) return m.fail('invalid_type', parts, `${pointer(parts).slice(1)} must be a list of module names`);
    if (names.some((n) => ['all', 'all-linear', 'all_linear'].includes(lower(n)))) return m.set('/training/lora/targets', 'all-linear', parts);
    const targets = [];
    const unknown = [];
    for (const n of names) {
      const t = LORA_MODULES[String(n).split('.').pop()];
      if (t) { if (!targets.includes(t)) targets.push(t); } else unknown.push(n);
    }
    if (unknown.length) m.note(`LoRA on ${unknown.join(', ')} is not modelled (memfit knows q k v o gate up down head)`);
    if (targets.length) m.set('/training/lora/targets', targets, parts);
  }

  // PEFT's modules_to_save (Axolotl lora_modules_to_save, LLaMA-Factory additional_target, TRL
  // ModelConfig lora_modules_to_save): the token embedding and the output layer are modelled.
  const SAVED_MODULES = { embed_tokens: 'embedding', wte: 'embedding', word_embeddings: 'embedding', tok_embeddings: 'embedding', lm_head: 'head', output: 'head' };
  function setModulesToSave(m, parts) {
    const list = m.take(parts);
    if (list === null || list === undefined) return;
    const names = typeof list === 'string' ? list.split(',').map((s) => s.trim()).filter(Boolean) : list;
    if (!Array.isArray(names)) return m.fail('invalid_type', parts, `${pointer(parts).slice(1)} must be a list of module names`);
    const saved = [];
    const unknown = [];
    for (const n of names) {
      const s = SAVED_MODULES[String(n).split('.').pop()];
      if (s) { if (!saved.includes(s)) saved.push(s); } else unknown.push(n);
    }
    if (unknown.length) m.note(`modules_to_save ${unknown.join(', ')}: not modelled (memfit trains copies of the embedding and the output layer only)`);
    if (saved.length) m.set('/training/lora/modules_to_save', saved, parts);
  }

  function setOptimizer(m, parts) {
    const name = m.take(parts);
    if (name === undefined || name === null) return;
    const found = HF_OPTIM[lower(name)];
    if (!found) {
      m.note(`optimizer ${name} is not modelled: the framework's default optimizer is estimated`);
      m.unread(parts);
      return;
    }
    m.set('/training/optimizer', found[0], parts);
    if (found[1]) m.set('/training/optimizer_impl', found[1], parts);
    if (/_layerwise$/.test(lower(name))) m.set('/training/optimizer_in_backward', true, parts, 'layer-wise: each parameter steps in its gradient hook');
    if (['galore_adamw', 'apollo_adamw'].includes(found[0])) setOptimArgs(m, ['optim_args'], found[0]);
  }

  /// GaLore / APOLLO settings from HF's optim_args ("rank=64,update_proj_gap=100" or a mapping):
  /// rank and update_proj_gap; APOLLO at rank 1 with scale_type tensor is APOLLO-Mini.
  function setOptimArgs(m, parts, optimizer) {
    const raw = m.take(parts);
    if (raw === undefined || raw === null) return;
    const args = isObject(raw) ? raw : Object.fromEntries(String(raw).split(',').map((kv) => kv.split('=').map((x) => x.trim())).filter((kv) => kv.length === 2));
    const int = (k, field) => {
      if (args[k] === undefined) return undefined;
      const n = Number(args[k]);
      if (!Number.isInteger(n) || n < 1) m.fail('invalid_value', parts, `optim_args ${k} must be a whole number ≥ 1, got ${JSON.stringify(args[k])}`);
      m.set(field, n, parts);
      return n;
    };
    const rank = int('rank', '/training/projection/rank');
    int('update_proj_gap', '/training/projection/update_gap');
    if (optimizer === 'apollo_adamw' && rank === 1 && lower(args.scale_type ?? '') === 'tensor') {
      m.set('/training/optimizer', 'apollo_mini', parts, 'APOLLO at rank 1 with a tensor-wise scale is APOLLO-Mini');
      delete m.request.training.projection.rank;
    }
  }

  const ATTENTION = { flash_attention_2: 'flash', flash_attention_3: 'flash', fa2: 'flash', fa3: 'flash', sdpa: 'sdpa', eager: 'eager', disabled: 'eager' };
  function setAttention(m, parts) {
    const v = m.take(parts);
    if (v === undefined || v === null || lower(v) === 'auto') return;
    if (ATTENTION[lower(v)]) m.set('/training/attention', ATTENTION[lower(v)], parts);
    else { m.note(`attention ${v} is not modelled`); m.unread(parts); }
  }

  /// Precision from the trainer's bf16/fp16 flags and the dtype the weights are loaded in.
  function setPrecision(m, bf16Parts, fp16Parts, weightsFp32, dtypeParts) {
    const bf16 = m.take(bf16Parts);
    const fp16 = m.take(fp16Parts);
    const on = (v) => v === true || v === 'true' || v === 'auto';
    let precision = null;
    let from = bf16Parts;
    if (on(bf16)) precision = weightsFp32 ? 'amp_bf16' : 'bf16';
    else if (on(fp16)) { precision = weightsFp32 ? 'amp_fp16' : 'fp16'; from = fp16Parts; }
    else if (weightsFp32 && dtypeParts !== null) { precision = 'fp32'; from = dtypeParts; }
    if (bf16 === 'auto') m.note('bf16: auto is taken as bf16 (a GPU with bf16 support)');
    if (precision) m.set('/training/precision', precision, from);
  }

  const FSDP_SHARDING = { full_shard: 'zero3', shard_grad_op: 'zero2', no_shard: 'none', hybrid_shard: 'zero3', hybrid_shard_zero2: 'zero2',
    '1': 'zero3', '2': 'zero2', '3': 'none', '4': 'zero3' };
  /// An FSDP strategy name (FSDP1 names, or accelerate's 1-4) -> sharding.
  function setFsdpStrategy(m, parts, value) {
    const key = lower(value).replace(/^fsdp_/, '');
    const sharding = FSDP_SHARDING[key];
    if (!sharding) return false;
    m.set('/parallel/sharding', sharding, parts);
    if (key.startsWith('hybrid') || key === '4') m.note('hybrid sharding shards within a node: set parallel.shard_degree to the GPUs per node');
    return true;
  }

  /// A DeepSpeed config (a JSON object, inline or from its file) under `base` (the key path).
  function mapDeepspeed(m, base, wrapped) {
    if (wrapped) m.set('/parallel/backend', 'deepspeed', '');
    const stage = m.take([...base, 'zero_optimization', 'stage']);
    if (stage !== undefined) {
      const sharding = ['none', 'zero1', 'zero2', 'zero3'][stage];
      if (!sharding) m.fail('invalid_value', [...base, 'zero_optimization', 'stage'], `zero_optimization.stage must be 0, 1, 2 or 3, got ${JSON.stringify(stage)}`);
      m.set('/parallel/sharding', sharding, [...base, 'zero_optimization', 'stage']);
    }
    const device = (key) => lower(m.take([...base, 'zero_optimization', key, 'device']) ?? 'none');
    const optimizerDevice = device('offload_optimizer');
    const paramDevice = device('offload_param');
    if (paramDevice !== 'none') m.set('/training/offload', 'params_optimizer', [...base, 'zero_optimization', 'offload_param', 'device']);
    else if (optimizerDevice !== 'none') m.set('/training/offload', 'optimizer', [...base, 'zero_optimization', 'offload_optimizer', 'device']);
    if (optimizerDevice === 'nvme' || paramDevice === 'nvme') m.note('NVMe offload is estimated as CPU offload (device memory is the same; host memory is not)');
    const micro = m.positiveInt([...base, 'train_micro_batch_size_per_gpu']);
    if (micro) m.set('/training/micro_batch', micro, [...base, 'train_micro_batch_size_per_gpu']);
    const accum = m.positiveInt([...base, 'gradient_accumulation_steps']);
    if (accum) m.set('/training/grad_accum', accum, [...base, 'gradient_accumulation_steps']);
    const enabled = (k) => {
      const v = m.take([...base, k, 'enabled']);
      if (typeof v !== 'boolean') m.unread([...base, k, 'enabled']);
      return v;
    };
    if (enabled('bf16') === true) m.set('/training/precision', 'amp_bf16', [...base, 'bf16', 'enabled']);
    else if (enabled('fp16') === true) m.set('/training/precision', 'amp_fp16', [...base, 'fp16', 'enabled']);
    const opt = m.take([...base, 'optimizer', 'type']);
    if (opt !== undefined) {
      const o = { adam: 'adamw', adamw: 'adamw', lion: 'lion' }[lower(opt)];
      if (o) m.set('/training/optimizer', o, [...base, 'optimizer', 'type']);
      else { m.note(`DeepSpeed optimizer ${opt} is not modelled`); m.unread([...base, 'optimizer', 'type']); }
    }
  }
  const WRAPPED_DEEPSPEED = 'the DeepSpeed config runs under the HF Trainer / accelerate (framework hf_trainer, parallel.backend deepspeed)';

  /// A DeepSpeed config named by its path: read from the files given beside (by name), else noted.
  function deepspeedByPath(m, parts, { files, YAML, readFile }) {
    const ref = m.take(parts);
    if (isObject(ref)) {
      const sub = new Mapping(ref, subLines(m.lines, pointer(parts)));
      m.set('/parallel/backend', 'deepspeed', parts);
      m.note(WRAPPED_DEEPSPEED);
      return mapNested(m, sub, parts, () => mapDeepspeed(sub, [], false));
    }
    if (typeof ref !== 'string' || !ref) return;
    const base = ref.split(/[\\/]/).pop();
    const text = files?.find((f) => f.name.split(/[\\/]/).pop() === base)?.text ?? readFile?.(ref);
    m.set('/parallel/backend', 'deepspeed', parts);
    if (typeof text !== 'string') {
      m.note(`${pointer(parts).slice(1)} names ${ref}: give that file too (its ZeRO stage and offload are not read)`);
      return;
    }
    let parsed;
    try {
      parsed = parseStructured(text, YAML);
    } catch (e) {
      if (e instanceof ImportError) e.path = `${base}:${e.path}`, e.message = `${base}: ${e.message}`;
      throw e;
    }
    const sub = new Mapping(parsed.value, parsed.lines);
    m.note(WRAPPED_DEEPSPEED);
    mapNested(m, sub, `${base}:`, () => mapDeepspeed(sub, [], false));
  }

  /// The lines of the keys under `prefix`, re-rooted there.
  function subLines(lines, prefix) {
    const out = new Map();
    for (const [k, v] of lines) if (k.startsWith(`${prefix}/`)) out.set(k.slice(prefix.length), v);
    return out;
  }

  /// Runs a mapping of another document (a referenced file or inline object) and merges it,
  /// its keys prefixed (`prefix` a path array or a file label).
  function mapNested(m, sub, prefix, run) {
    run();
    const label = Array.isArray(prefix) ? pointer(prefix) : prefix;
    deepMerge(m.request, sub.request);
    for (const x of sub.mapped) {
      m.mapped = m.mapped.filter((y) => y.to !== x.to);
      m.mapped.push({ ...x, from: `${label}${x.from}` });
    }
    for (const x of sub.ignored()) m.extraIgnored.push({ ...x, key: `${label}${x.key}` });
    for (const n of sub.notes) m.note(n);
    if (Array.isArray(prefix)) m.read.add(pointer(prefix));
  }

  function deepMerge(into, from) {
    for (const [k, v] of Object.entries(from)) {
      if (isObject(v) && isObject(into[k])) deepMerge(into[k], v);
      else into[k] = v;
    }
  }

  // ---- the formats ---------------------------------------------------------------------------

  const FRAMEWORK_NOTE = {
    axolotl: 'Axolotl: framework axolotl, whose profile supplies what the file leaves out (bf16 auto, sequence_len 512, no checkpointing, fp32 embeddings and lm_head outside FSDP; docs/frameworks.md)',
    llamafactory: 'LLaMA-Factory: framework llamafactory, whose profile supplies what the file leaves out (LoRA r8 on all linears, cutoff_len 2048, gradient checkpointing, fp32 trainables for full / freeze; docs/frameworks.md)',
  };
  /// The framework's own profile when the core has it (ctx.frameworks; all when not given), else hf_trainer.
  function setFramework(m, ctx, id) {
    const own = !ctx.frameworks || ctx.frameworks.includes(id);
    m.set('/training/framework', own ? id : 'hf_trainer', '');
    m.note(own ? FRAMEWORK_NOTE[id] : `${FORMAT_NAMES[id]}: memfit has no ${id} profile here, so the HF Trainer's defaults apply to the keys not given`);
    return own;
  }

  function mapAxolotl(m, ctx) {
    const own = setFramework(m, ctx, 'axolotl');
    setModel(m, ['base_model'], ctx.presets);
    const adapter = m.take(['adapter']);
    const in4 = m.bool(['load_in_4bit']);
    const in8 = m.bool(['load_in_8bit']);
    const dora = m.bool(['peft_use_dora']);
    if (adapter === 'qlora' || (adapter === 'lora' && in4)) {
      m.set('/training/method', 'qlora', ['adapter']);
      m.set('/training/base_quant', 'nf4', in4 ? ['load_in_4bit'] : ['adapter']);
    } else if (adapter === 'lora') {
      m.set('/training/method', dora ? 'dora' : 'lora', dora ? ['peft_use_dora'] : ['adapter']);
      if (in8) m.set('/training/base_quant', 'int8', ['load_in_8bit']);
    } else if (adapter !== undefined && adapter !== null) {
      m.fail('invalid_value', ['adapter'], `adapter ${JSON.stringify(adapter)} is not modelled (lora or qlora)`);
    } else m.set('/training/method', 'full', '');
    if (adapter) {
      const rank = m.positiveInt(['lora_r']);
      if (rank) m.set('/training/lora/rank', rank, ['lora_r']);
      const dropout = m.take(['lora_dropout']);
      if (typeof dropout === 'number') m.set('/training/lora/dropout', dropout, ['lora_dropout']);
      if (m.bool(['lora_target_linear'])) m.set('/training/lora/targets', 'all-linear', ['lora_target_linear']);
      else if (m.has(['lora_target_modules'])) setLoraTargets(m, ['lora_target_modules'], m.take(['lora_target_modules']));
      setModulesToSave(m, ['lora_modules_to_save']);
    }
    intField(m, ['sequence_len'], '/training/seq_len');
    const packing = m.bool(['sample_packing']);
    if (packing !== undefined) m.set('/training/packed', packing, ['sample_packing']);
    intField(m, ['micro_batch_size'], '/training/micro_batch');
    intField(m, ['gradient_accumulation_steps'], '/training/grad_accum');
    setOptimizer(m, ['optimizer']);
    // resolve_dtype (axolotl @ 067b021c src/axolotl/utils/config/__init__.py): bf16 (default
    // "auto": bf16 on a bf16 GPU) -> bf16 weights, fp16 or load_in_8bit -> fp16, bf16: false without fp16 -> fp32.
    const bf16 = m.take(['bf16']);
    const fp16 = m.take(['fp16']);
    const auto = bf16 === undefined || bf16 === null || bf16 === 'auto';
    const bf16On = bf16 === true || (auto && fp16 !== true);  // bf16 "auto" with fp16: true turns bf16 off
    const precision = bf16On ? 'bf16' : in8 || fp16 === true ? 'fp16' : 'fp32';
    m.set('/training/precision', precision, !bf16On && fp16 === true ? ['fp16'] : bf16 !== undefined ? ['bf16'] : '',
      precision === 'fp32' ? 'bf16: false and no fp16: Axolotl loads the weights in fp32' : bf16 === undefined ? 'bf16 defaults to auto' : undefined);
    if (auto && bf16On) m.note('bf16: auto is taken as bf16 (a GPU with bf16 support)');
    const gc = m.take(['gradient_checkpointing']);
    if (gc === true || gc === false) m.set('/training/activation_checkpointing', gc ? 'full' : 'none', ['gradient_checkpointing']);
    else if (gc !== undefined && gc !== null) { m.note(`gradient_checkpointing: ${gc} is not modelled`); m.unread(['gradient_checkpointing']); }
    setAttention(m, ['attn_implementation']);
    if (m.bool(['flash_attention'])) m.set('/training/attention', 'flash', ['flash_attention']);
    else if (m.bool(['sdp_attention'])) m.set('/training/attention', 'sdpa', ['sdp_attention']);
    else if (m.bool(['eager_attention'])) m.set('/training/attention', 'eager', ['eager_attention']);
    if (m.bool(['liger_fused_linear_cross_entropy'])) m.set('/training/loss', own ? 'liger_flce' : 'fused', ['liger_fused_linear_cross_entropy'], 'Liger fused linear cross-entropy');
    else if (m.bool(['cut_cross_entropy'])) m.set('/training/loss', own ? 'cut_ce' : 'fused', ['cut_cross_entropy'], 'Cut Cross-Entropy');
    // Liger's RMSNorm and SwiGLU (axolotl integrations/liger: liger_rms_norm, liger_glu_activation).
    if (own && m.bool(['liger_rms_norm']) && m.bool(['liger_glu_activation'])) m.set('/training/liger_kernels', true, ['liger_glu_activation'], 'Liger RMSNorm and SwiGLU');
    if (own && m.has(['plugins'])) m.take(['plugins']);
    if (m.bool(['activation_offloading'])) m.set('/training/offload', 'activations', ['activation_offloading']);
    const compile = m.bool(['torch_compile']);
    if (compile !== undefined) m.set('/training/compile', compile, ['torch_compile']);
    if (m.has(['deepspeed'])) deepspeedByPath(m, ['deepspeed'], ctx);
    mapFsdpBlock(m, ['fsdp_config'], ['fsdp']);
  }

  function intField(m, parts, field) {
    const v = m.positiveInt(parts);
    if (v !== undefined) m.set(field, v, parts);
  }

  const ACCELERATE_FSDP_FRAMEWORKS = ['hf_trainer', 'trl', 'transformers_loop'];

  /// FSDP as Axolotl, the HF Trainer (`fsdp`, `fsdp_config`) and accelerate (`fsdp_config`) spell it.
  function mapFsdpBlock(m, configParts, listParts) {
    const list = listParts && m.take(listParts);
    const words = typeof list === 'string' ? list.split(/\s+/) : Array.isArray(list) ? list.map(String) : [];
    let sharded = false;
    for (const w of words) sharded = setFsdpStrategy(m, listParts, w) || sharded;
    if (words.includes('offload')) m.set('/training/offload', 'params_optimizer', listParts);
    if (!m.has(configParts) && !sharded) return;
    const c = (k) => [...configParts, k];
    const get = (k) => (m.has(c(`fsdp_${k}`)) ? c(`fsdp_${k}`) : c(k));
    const strategy = m.take(get('sharding_strategy'));
    if (strategy !== undefined) sharded = setFsdpStrategy(m, get('sharding_strategy'), strategy) || sharded;
    const version = m.take(get('version'));
    const reshard = m.take(get('reshard_after_forward'));
    if (reshard !== undefined && !sharded) {
      m.set('/parallel/sharding', reshard === false || lower(reshard) === 'false' ? 'zero2' : 'zero3', get('reshard_after_forward'));
      sharded = true;
    }
    if (!sharded && m.has(configParts)) { m.set('/parallel/sharding', 'zero3', configParts, 'FSDP full sharding (its default)'); }
    // fsdp_version and the plugin's own checkpointing are request fields where accelerate's FSDP
    // plugin is the one memfit models (request.cpp fsdp_through_accelerate); elsewhere a note.
    const plugin = ACCELERATE_FSDP_FRAMEWORKS.includes(m.request.training.framework);
    const versionNumber = Number(version);
    if (version !== undefined && plugin && (versionNumber === 1 || versionNumber === 2)) m.set('/parallel/fsdp_version', versionNumber, get('version'));
    else if (version !== undefined) m.note(`FSDP version ${version}`);
    if (m.bool(get('offload_params'))) m.set('/training/offload', 'params_optimizer', get('offload_params'));
    if (m.bool(get('activation_checkpointing'))) {
      m.set('/training/activation_checkpointing', 'full', get('activation_checkpointing'));
      if (plugin) m.set('/parallel/fsdp_activation_checkpointing', true, get('activation_checkpointing'), 'the FSDP plugin\'s checkpointing: accelerate 1.8-1.14 under FSDP2 checkpoint each child of a block');
      else m.note('fsdp_activation_checkpointing is estimated as whole-block checkpointing (accelerate 1.8-1.14 under FSDP2 checkpoint each child of a block, which keeps more)');
    }
  }

  // LLaMA-Factory @ 99e0c3e src/llamafactory/model/adapter.py init_adapter: trainable weights are
  // cast to fp32 unless pure_bf16 or use_badam; @ 908cd68 src/llamafactory/model/model_utils/
  // checkpointing.py prepare_model_for_training: gradient checkpointing unless disable_gradient_checkpointing.
  function mapLlamaFactory(m, ctx) {
    const own = setFramework(m, ctx, 'llamafactory');
    setModel(m, ['model_name_or_path'], ctx.presets);
    const stage = m.take(['stage']);
    if (stage !== undefined && !['sft', 'pt'].includes(stage)) m.note(`stage ${stage}: memfit estimates one model's training step (no reference or reward model)`);
    const type = lower(m.take(['finetuning_type']) ?? 'lora');
    const bits = m.take(['quantization_bit']);
    const dora = m.bool(['use_dora']);
    if (!['lora', 'full', 'freeze'].includes(type)) m.fail('invalid_value', ['finetuning_type'], `finetuning_type must be lora, full or freeze, got ${JSON.stringify(type)}`);
    if (bits !== undefined && bits !== null) {
      if (type !== 'lora') m.fail('invalid_value', ['quantization_bit'], 'LLaMA-Factory quantises the base for LoRA only');
      if (![4, 8].includes(bits)) m.fail('invalid_value', ['quantization_bit'], `quantization_bit ${JSON.stringify(bits)} is not modelled (4 or 8)`);
      const method = m.take(['quantization_method']);
      if (method !== undefined && lower(method) !== 'bnb' && lower(method) !== 'bitsandbytes') m.note(`quantization_method ${method} is estimated as bitsandbytes`);
    }
    const method = type === 'lora' ? (dora ? 'dora' : bits === 4 ? 'qlora' : 'lora') : type;
    m.set('/training/method', method, ['finetuning_type']);
    if (bits === 4) m.set('/training/base_quant', 'nf4', ['quantization_bit']);
    if (bits === 8) m.set('/training/base_quant', 'int8', ['quantization_bit']);
    if (type === 'lora') {
      intField(m, ['lora_rank'], '/training/lora/rank');
      const dropout = m.take(['lora_dropout']);
      if (typeof dropout === 'number') m.set('/training/lora/dropout', dropout, ['lora_dropout']);
      if (m.has(['lora_target'])) setLoraTargets(m, ['lora_target'], m.take(['lora_target']));
      else m.set('/training/lora/targets', 'all-linear', '', 'lora_target defaults to all');
      // init_adapter: pissa_init sets PEFT's init_lora_weights "pissa" (or "pissa_niter_N"); training runs as LoRA's.
      if (m.bool(['pissa_init'])) m.set('/training/lora/init', 'pissa', ['pissa_init']);
      setModulesToSave(m, ['additional_target']);
    }
    if (type === 'freeze') intField(m, ['freeze_trainable_layers'], '/training/freeze_trainable_layers');
    intField(m, ['cutoff_len'], '/training/seq_len');
    const packing = m.bool(['packing']);
    const neat = m.bool(['neat_packing']);
    if (packing !== undefined || neat !== undefined) m.set('/training/packed', Boolean(packing || neat), neat ? ['neat_packing'] : ['packing']);
    intField(m, ['per_device_train_batch_size'], '/training/micro_batch');
    intField(m, ['gradient_accumulation_steps'], '/training/grad_accum');
    setOptimizer(m, ['optim']);
    // Full and freeze: the trainable weights are upcast to fp32 (under ZeRO-3 / FSDP they load in
    // fp32), so bf16/fp16 is autocast over fp32 weights; LoRA: the base stays 16-bit.
    const pure = m.bool(['pure_bf16']);
    const badam = m.bool(['use_badam']);
    const fp32Weights = type !== 'lora' && !pure && !badam;
    if (badam) mapLlamaFactoryBadam(m, type);
    if (pure) m.set('/training/precision', 'bf16', ['pure_bf16']);
    else setPrecision(m, ['bf16'], ['fp16'], fp32Weights, fp32Weights ? '' : null);
    const noGc = m.bool(['disable_gradient_checkpointing']);
    m.set('/training/activation_checkpointing', noGc ? 'none' : 'full', noGc === undefined ? '' : ['disable_gradient_checkpointing'],
      noGc === undefined ? 'LLaMA-Factory enables gradient checkpointing unless disable_gradient_checkpointing' : undefined);
    setAttention(m, ['flash_attn']);
    // model_utils/liger_kernel.py apply_liger_kernel: fused linear CE, RMSNorm, SwiGLU, RoPE.
    if (m.bool(['enable_liger_kernel'])) {
      if (own) m.set('/training/liger_kernels', true, ['enable_liger_kernel'], 'Liger fused linear cross-entropy, RMSNorm and SwiGLU');
      else m.set('/training/loss', 'fused', ['enable_liger_kernel'], 'Liger fused linear cross-entropy (its other kernels are not modelled)');
    }
    mapLlamaFactoryOptimizers(m);
    if (m.has(['deepspeed'])) deepspeedByPath(m, ['deepspeed'], ctx);
    if (m.has(['fsdp']) && m.doc.fsdp !== false && m.doc.fsdp !== '') mapFsdpBlock(m, ['fsdp_config'], ['fsdp']);
  }

  /// LLaMA-Factory's BAdam (@ 002f58ef train/trainer_utils.py _create_badam_optimizer): badam's
  /// BlockOptimizer in layer mode trains one decoder layer at a time, each for badam_switch_interval
  /// steps, whatever the start block and order: the estimate is the first's period, the run's peak.
  function mapLlamaFactoryBadam(m, type) {
    const mode = lower(m.take(['badam_mode']) ?? 'layer');
    if (type !== 'full' || mode !== 'layer') {
      m.note(`use_badam with finetuning_type ${type}, badam_mode ${mode}: not modelled (BAdam's layer mode on full fine-tuning is); estimated without BAdam`);
      return;
    }
    m.set('/training/badam/active_block', 'first', ['use_badam'], 'every decoder layer trains in turn; the first keeps the most activations (the run\'s peak)');
    for (const key of ['badam_start_block', 'badam_switch_mode', 'badam_switch_interval']) m.take([key]);
  }

  /// LLaMA-Factory's memory-efficient optimizers (hparams/finetuning_args.py: use_galore,
  /// galore_rank 16, galore_update_interval 200, galore_layerwise; use_apollo, apollo_rank 16,
  /// apollo_scale_type channel; use_adam_mini; train/trainer_utils.py create_custom_optimizer).
  function mapLlamaFactoryOptimizers(m) {
    const which = [['use_galore', 'galore'], ['use_apollo', 'apollo']].find(([flag]) => m.bool([flag]));
    if (which) {
      const [flag, prefix] = which;
      const mini = prefix === 'apollo' && lower(m.take(['apollo_scale_type']) ?? 'channel') === 'tensor' && m.doc.apollo_rank === 1;
      m.set('/training/optimizer', prefix === 'galore' ? 'galore_adamw' : mini ? 'apollo_mini' : 'apollo_adamw', [flag]);
      const rank = m.positiveInt([`${prefix}_rank`]);
      if (!mini) m.set('/training/projection/rank', rank ?? 16, rank ? [`${prefix}_rank`] : '', rank ? undefined : `${prefix}_rank defaults to 16`);
      const gap = m.positiveInt([`${prefix}_update_interval`]);
      if (gap) m.set('/training/projection/update_gap', gap, [`${prefix}_update_interval`]);
      const target = m.take([`${prefix}_target`]);
      if (target !== undefined && lower(target) !== 'all') m.note(`${prefix}_target ${target}: memfit projects every block linear (all)`);
      if (m.bool([`${prefix}_layerwise`])) m.set('/training/optimizer_in_backward', true, [`${prefix}_layerwise`], 'layer-wise: each parameter steps in its gradient hook');
    } else if (m.bool(['use_adam_mini'])) {
      m.set('/training/optimizer', 'adam_mini', ['use_adam_mini']);
    }
  }

  const TORCHTUNE_OPTIMIZERS = {
    'torch.optim.adamw': 'adamw', 'torch.optim.adam': 'adamw', 'bitsandbytes.optim.pagedadamw8bit': 'paged_adamw_8bit',
    'bitsandbytes.optim.adamw8bit': 'adamw_8bit', 'bitsandbytes.optim.pagedadamw': 'paged_adamw_32bit',
    'torchao.optim.adamw4bit': 'adamw_4bit', 'torchao.prototype.low_bit_optim.adamw4bit': 'adamw_4bit',
    'torchao.optim.adamw8bit': 'adamw_8bit', 'torchao.prototype.low_bit_optim.adamw8bit': 'adamw_8bit',
    'torch.optim.sgd': 'sgd',
  };
  const TORCHTUNE_LOSSES = { 'torchtune.modules.loss.cewithchunkedoutputloss': 'chunked', 'torchtune.modules.loss.linearcrossentropyloss': 'fused',
    'torch.nn.crossentropyloss': 'standard' };

  function mapTorchtune(m, ctx) {
    m.set('/training/framework', 'torchtune', '');
    const component = String(m.take(['model', '_component_']) ?? '');
    const builder = component.split('.').pop();
    const method = builder.startsWith('qlora_') ? 'qlora' : builder.startsWith('lora_') ? 'lora' : 'full';
    m.set('/training/method', m.bool(['model', 'use_dora']) && method !== 'full' ? 'dora' : method, ['model', '_component_']);
    if (method !== 'full') {
      intField(m, ['model', 'lora_rank'], '/training/lora/rank');
      const dropout = m.take(['model', 'lora_dropout']);
      if (typeof dropout === 'number') m.set('/training/lora/dropout', dropout, ['model', 'lora_dropout']);
      const modules = m.take(['model', 'lora_attn_modules']) ?? [];
      const names = [...(Array.isArray(modules) ? modules : [])];
      if (m.bool(['model', 'apply_lora_to_mlp'])) names.push('gate_proj', 'up_proj', 'down_proj');
      if (m.bool(['model', 'apply_lora_to_output'])) names.push('lm_head');
      setLoraTargets(m, ['model', 'lora_attn_modules'], names);
    }
    const dir = m.take(['checkpointer', 'checkpoint_dir']);
    if (typeof dir === 'string' && dir) {
      const name = dir.replace(/[\\/]+$/, '').split(/[\\/]/).pop();
      m.modelId = name;
      const match = matchPreset(name, ctx.presets);
      if (match) m.set('/model/preset', match, ['checkpointer', 'checkpoint_dir'], `the checkpoint directory ${name}`);
      else m.note(`model: the checkpoint directory ${name} (builder ${builder}) is not a memfit preset; give its config.json`);
    }
    intField(m, ['batch_size'], '/training/micro_batch');
    intField(m, ['gradient_accumulation_steps'], '/training/grad_accum');
    intField(m, ['tokenizer', 'max_seq_len'], '/training/seq_len');
    if (m.has(['tokenizer']) && !m.has(['tokenizer', 'max_seq_len'])) m.note('tokenizer.max_seq_len is not set (no truncation): set seq_len to the longest sample');
    const packed = m.bool(['dataset', 'packed']);
    if (packed !== undefined) m.set('/training/packed', packed, ['dataset', 'packed']);
    const opt = m.take(['optimizer', '_component_']);
    if (opt !== undefined) {
      let name = TORCHTUNE_OPTIMIZERS[lower(opt)];
      if (name === 'sgd' && Number(m.take(['optimizer', 'momentum']) ?? 0) > 0) name = 'sgd_momentum';
      if (name) m.set('/training/optimizer', name, ['optimizer', '_component_']);
      else { m.note(`optimizer ${opt} is not modelled`); m.unread(['optimizer', '_component_']); }
      const fused = m.bool(['optimizer', 'fused']);
      if (fused !== undefined) m.set('/training/optimizer_impl', fused ? 'fused' : 'foreach', ['optimizer', 'fused']);
    }
    const inBackward = m.bool(['optimizer_in_bwd']);
    if (inBackward !== undefined) m.set('/training/optimizer_in_backward', inBackward, ['optimizer_in_bwd']);
    const loss = m.take(['loss', '_component_']);
    if (loss !== undefined) {
      const kind = TORCHTUNE_LOSSES[lower(loss)];
      if (kind) m.set('/training/loss', kind, ['loss', '_component_']);
      else { m.note(`loss ${loss} is not modelled`); m.unread(['loss', '_component_']); }
      intField(m, ['loss', 'num_output_chunks'], '/training/loss_chunks');
    }
    const ac = m.bool(['enable_activation_checkpointing']);
    if (ac !== undefined) m.set('/training/activation_checkpointing', ac ? 'full' : 'none', ['enable_activation_checkpointing']);
    if (m.bool(['enable_activation_offloading'])) m.set('/training/offload', 'activations', ['enable_activation_offloading']);
    const compile = m.bool(['compile']);
    if (compile !== undefined) m.set('/training/compile', compile, ['compile']);
    const dtype = m.take(['dtype']);
    if (dtype !== undefined) {
      const p = { bf16: 'bf16', fp32: 'fp32' }[lower(dtype)];
      if (!p) m.fail('invalid_value', ['dtype'], `dtype must be bf16 or fp32, got ${JSON.stringify(dtype)}`);
      m.set('/training/precision', p, ['dtype']);
    }
    if (m.bool(['fsdp_cpu_offload'])) {
      m.set('/parallel/sharding', 'zero3', ['fsdp_cpu_offload'], 'the distributed recipes shard with FSDP2');
      m.set('/training/offload', 'params_optimizer', ['fsdp_cpu_offload']);
    }
    const reshard = m.bool(['fsdp_reshard_after_forward']);
    if (reshard !== undefined) m.set('/parallel/reshard_after_forward', reshard, ['fsdp_reshard_after_forward']);
    intField(m, ['tensor_parallel_dim'], '/parallel/tp');
  }

  function mapDeepspeedFile(m) {
    const auto = JSON.stringify(m.doc).includes('"auto"');
    m.set('/training/framework', auto ? 'hf_trainer' : 'deepspeed', '',
      auto ? '"auto" values: the HF Trainer / accelerate fills them in' : 'no "auto" values: the DeepSpeed engine run directly');
    mapDeepspeed(m, [], auto);
    if (auto) m.note(WRAPPED_DEEPSPEED);
    if (auto) m.note('"auto" values come from the trainer\'s arguments: give its config too for the batch size and precision');
  }

  /// accelerate's `dynamo_config` (accelerate v1.13.0 utils/dataclasses.py TorchDynamoPlugin): a backend
  /// other than NO compiles; `dynamo_use_regional_compilation` compiles each repeated block and leaf
  /// child only (utils/other.py compile_regions), leaving the model's forward and its loss eager.
  function mapAccelerateDynamo(m) {
    const d = (k) => ['dynamo_config', k];
    const backend = m.take(d('dynamo_backend'));
    if (backend === undefined || backend === null) return;
    // An unquoted NO reads as false in YAML 1.1 parsers: the same "no backend".
    if (typeof backend !== 'string' && backend !== false) m.fail('invalid_type', d('dynamo_backend'), `dynamo_backend must be a backend name, got ${JSON.stringify(backend)}`);
    const on = backend !== false && lower(backend) !== 'no';
    m.set('/training/compile', on, d('dynamo_backend'));
    const regional = m.bool(d('dynamo_use_regional_compilation'));
    if (on && regional) m.set('/training/compile_scope', 'regions', d('dynamo_use_regional_compilation'), 'regional compilation: the blocks compiled, the loss eager');
  }

  function mapAccelerate(m, ctx) {
    m.set('/training/framework', 'hf_trainer', '', 'accelerate launches the HF Trainer (or the script\'s own loop)');
    const gpus = m.positiveInt(['num_processes']);
    const machines = m.positiveInt(['num_machines']);
    if (gpus) m.set('/cluster/gpus', gpus, ['num_processes']);
    if (gpus && machines) {
      if (gpus % machines) m.fail('invalid_value', ['num_machines'], `num_processes ${gpus} is not a multiple of num_machines ${machines}`);
      m.set('/cluster/gpus_per_node', gpus / machines, ['num_machines']);
    }
    const mp = m.take(['mixed_precision']);
    if (mp !== undefined && mp !== null) {
      const p = { bf16: 'bf16', fp16: 'fp16', fp8: 'fp8', no: null }[lower(mp)];
      if (p === undefined) m.fail('invalid_value', ['mixed_precision'], `mixed_precision must be no, fp16, bf16 or fp8, got ${JSON.stringify(mp)}`);
      if (p) m.set('/training/precision', p, ['mixed_precision']);
    }
    mapAccelerateDynamo(m);
    const type = lower(m.take(['distributed_type']) ?? 'no');
    if (type === 'fsdp') mapFsdpBlock(m, ['fsdp_config'], null);
    if (type === 'deepspeed') {
      const c = (k) => ['deepspeed_config', k];
      m.set('/parallel/backend', 'deepspeed', ['distributed_type']);
      const stage = m.take(c('zero_stage'));
      if (stage !== undefined) {
        if (![0, 1, 2, 3].includes(stage)) m.fail('invalid_value', c('zero_stage'), `zero_stage must be 0-3, got ${JSON.stringify(stage)}`);
        m.set('/parallel/sharding', ['none', 'zero1', 'zero2', 'zero3'][stage], c('zero_stage'));
      }
      if (lower(m.take(c('offload_param_device')) ?? 'none') !== 'none') m.set('/training/offload', 'params_optimizer', c('offload_param_device'));
      else if (lower(m.take(c('offload_optimizer_device')) ?? 'none') !== 'none') m.set('/training/offload', 'optimizer', c('offload_optimizer_device'));
      intField(m, c('gradient_accumulation_steps'), '/training/grad_accum');
      if (m.has(c('deepspeed_config_file'))) deepspeedByPath(m, c('deepspeed_config_file'), ctx);
    }
  }

  function mapHfArgs(m, ctx) {
    const trl = ['max_seq_length', 'max_length', 'packing', 'dataset_text_field', 'use_peft', 'completion_only_loss', 'padding_free',
      'assistant_only_loss', 'model_init_kwargs'].some((k) => Object.hasOwn(m.doc, k));
    const framework = trl && ctx.frameworks?.includes('trl') ? 'trl' : 'hf_trainer';
    m.set('/training/framework', framework, '');
    if (trl && framework === 'hf_trainer') m.note('TRL SFTConfig: memfit has no trl profile here, so the HF Trainer\'s defaults apply to the keys not given');
    setModel(m, ['model_name_or_path'], ctx.presets);
    const peft = m.bool(['use_peft']);
    const in4 = m.bool(['load_in_4bit']);
    const in8 = m.bool(['load_in_8bit']);
    if (peft || in4 || in8) {
      m.set('/training/method', m.bool(['use_dora']) ? 'dora' : in4 ? 'qlora' : 'lora', peft !== undefined ? ['use_peft'] : in4 ? ['load_in_4bit'] : ['load_in_8bit']);
      if (in4) m.set('/training/base_quant', 'nf4', ['load_in_4bit']);
      else if (in8) m.set('/training/base_quant', 'int8', ['load_in_8bit']);
      intField(m, ['lora_r'], '/training/lora/rank');
      const dropout = m.take(['lora_dropout']);
      if (typeof dropout === 'number') m.set('/training/lora/dropout', dropout, ['lora_dropout']);
      if (m.has(['lora_target_modules'])) setLoraTargets(m, ['lora_target_modules'], m.take(['lora_target_modules']));
      setModulesToSave(m, ['lora_modules_to_save']);
    } else m.set('/training/method', 'full', '');
    intField(m, ['per_device_train_batch_size'], '/training/micro_batch');
    intField(m, ['gradient_accumulation_steps'], '/training/grad_accum');
    const lengthKey = m.has(['max_length']) ? 'max_length' : 'max_seq_length';
    intField(m, [lengthKey], '/training/seq_len');
    const packing = m.bool(['packing']);
    if (packing !== undefined) m.set('/training/packed', packing, ['packing']);
    setOptimizer(m, ['optim']);
    const dtypeKey = ['torch_dtype', 'dtype'].find((k) => m.has([k])) ?? ['model_init_kwargs', 'torch_dtype'];
    const dtypeParts = Array.isArray(dtypeKey) ? dtypeKey : [dtypeKey];
    const dtype = m.take(dtypeParts);
    setPrecision(m, ['bf16'], ['fp16'], ['float32', 'fp32'].includes(lower(dtype ?? '')), dtype !== undefined ? dtypeParts : null);
    const gc = m.bool(['gradient_checkpointing']);
    if (gc !== undefined) m.set('/training/activation_checkpointing', gc ? 'full' : 'none', ['gradient_checkpointing']);
    setAttention(m, ['attn_implementation']);
    if (m.bool(['use_flash_attention_2'])) m.set('/training/attention', 'flash', ['use_flash_attention_2']);
    if (m.bool(['use_liger_kernel'])) m.set('/training/loss', 'fused', ['use_liger_kernel'], 'Liger fused linear cross-entropy (its other kernels are not modelled)');
    const compile = m.bool(['torch_compile']);
    if (compile !== undefined) m.set('/training/compile', compile, ['torch_compile']);
    if (m.has(['deepspeed'])) deepspeedByPath(m, ['deepspeed'], ctx);
    if (m.has(['fsdp']) && m.take(['fsdp']) !== '' && m.doc.fsdp !== false) mapFsdpBlock(m, ['fsdp_config'], ['fsdp']);
  }

  // PEFT's `peft_type` (peft v0.21.2 `utils/peft_types.py`) -> memfit's method; the adapter's own keys each
  // method reads (tuners/<method>/config.py) are mapped in mapPeft.
  const PEFT_METHODS = { LORA: 'lora', LOHA: 'loha', LOKR: 'lokr', VERA: 'vera', IA3: 'ia3', OFT: 'oft', BOFT: 'boft',
    MISS: 'miss', GLORA: 'glora', LN_TUNING: 'ln_tuning', FOURIERFT: 'fourierft', WAVEFT: 'waveft', HIRA: 'hira',
    SHIRA: 'shira', C3A: 'c3a', DELORA: 'delora', GRALORA: 'gralora', PEANUT: 'peanut', PROMPT_TUNING: 'prompt_tuning',
    PREFIX_TUNING: 'prefix_tuning', P_TUNING: 'p_tuning', ADAPTION_PROMPT: 'adaption_prompt', LILY: 'lily',
    TINYLORA: 'tinylora', VBLORA: 'vblora', FROD: 'frod', ADAMSS: 'adamss', ROAD: 'road', OSF: 'osf', DEFT: 'deft',
    BEFT: 'beft', TRAINABLE_TOKENS: 'trainable_tokens', PVERA: 'pvera', UNILORA: 'unilora', ADALORA: 'adalora',
    PSOFT: 'psoft', RANDLORA: 'randlora' };
  // The shared-bank adapters' shape keys (peft v0.21.2 tuners/<method>/config.py) -> training.<method>.<field>.
  const SHARED_ADAPTER_KEYS = { lily: { stride_A: 'stride_a', num_B: 'num_b' }, tinylora: { u: 'u', weight_tying: 'weight_tying' },
    vblora: { num_vectors: 'num_vectors', vector_length: 'vector_length', topk: 'topk' },
    frod: { sparse_rate: 'sparse_rate', runtime_offload_base_weight: 'offload_base_weight' },
    adamss: { num_subspaces: 'subspaces', subspace_rank: 'subspace_rank' } };
  // LoraConfig `init_lora_weights` values that change nothing but the start (same memory) -> lora.init.
  const LORA_INITS = { true: 'default', false: 'default', gaussian: 'gaussian', pissa: 'pissa', olora: 'olora' };
  // Module names of the attention and MLP linears, as PEFT's regular-expression targets spell them.
  const MODULE_NAME = new RegExp(`\\b(${Object.keys(LORA_MODULES).join('|')})\\b`, 'g');

  /// PEFT target_modules: a list, "all-linear", or one regular expression (its module names are read).
  function setPeftTargets(m) {
    const parts = ['target_modules'];
    const v = m.take(parts);
    if (v === undefined || v === null) {
      m.note('target_modules is null: PEFT targets its default modules for the model type; memfit\'s default targets for the method apply');
      return;
    }
    if (typeof v === 'string' && !['all-linear', 'all_linear'].includes(lower(v)) && !/^[\w.,\s-]+$/.test(v)) {
      const names = [...new Set(v.match(MODULE_NAME) ?? [])];
      if (!names.length) return m.fail('invalid_value', parts, `target_modules ${JSON.stringify(v)} names none of ${Object.keys(LORA_MODULES).join(', ')}`);
      m.note(`target_modules is a regular expression: read as the modules it names (${names.join(', ')})`);
      return setLoraTargets(m, parts, names);
    }
    setLoraTargets(m, parts, v);
  }

  /// A whole number > 0 at a PEFT key, into `field`; 0 or null is "not set".
  function peftInt(m, key, field) {
    if (m.has([key]) && m.doc[key] === 0) { m.take([key]); return; }
    intField(m, [key], field);
  }

  function mapPeftMethod(m, method) {
    if (['lora', 'loha', 'lokr', 'vera', 'hira', 'shira', 'gralora', 'peanut', 'delora', 'miss', 'glora', 'lily', 'tinylora', 'vblora',
      'adamss', 'deft', 'pvera', 'unilora', 'psoft', 'randlora'].includes(method)) peftInt(m, 'r', '/training/lora/rank');
    for (const [key, field] of Object.entries(SHARED_ADAPTER_KEYS[method] ?? {})) {
      const v = m.take([key]);
      if (typeof v === 'number' || typeof v === 'boolean') m.set(`/training/${method}/${field}`, v, [key]);
    }
    if (method === 'lora') {
      const init = m.take(['init_lora_weights']);
      const name = init === undefined || init === null ? undefined : LORA_INITS[lower(init).replace(/_niter_\d+$/, '')];
      if (name && name !== 'default') m.set('/training/lora/init', name, ['init_lora_weights']);
      else if (init !== undefined && init !== null && !name) { m.unread(['init_lora_weights']); m.note(`init_lora_weights ${JSON.stringify(init)} is not modelled: the default initialisation's memory is estimated`); }
      m.take(['use_rslora']);
    }
    if (method === 'lora') {
      const dropout = m.take(['lora_dropout']);
      if (typeof dropout === 'number') m.set('/training/lora/dropout', dropout, ['lora_dropout']);
    }
    if (method === 'oft') {
      const r = m.take(['r']);
      const block = m.take(['oft_block_size']);
      if (Number.isInteger(block) && block > 0) m.set('/training/lora/block_size', block, ['oft_block_size']);
      else if (Number.isInteger(r) && r > 0) m.set('/training/lora/rank', r, ['r']);
    }
    if (method === 'boft') {
      const factor = m.take(['boft_n_butterfly_factor']);
      if (factor !== undefined && factor !== null && factor !== 1) m.fail('invalid_value', ['boft_n_butterfly_factor'], `memfit models BOFT with one butterfly factor; got ${JSON.stringify(factor)}`);
      const blocks = m.take(['boft_block_num']);
      if (Number.isInteger(blocks) && blocks > 0) m.fail('invalid_value', ['boft_block_num'], 'memfit models BOFT by boft_block_size; boft_block_num is not modelled');
      peftInt(m, 'boft_block_size', '/training/lora/block_size');
    }
    if (method === 'c3a') peftInt(m, 'block_size', '/training/lora/block_size');
    mapPeftOutputSide(m, method);
    if (method === 'fourierft' || method === 'waveft') peftInt(m, 'n_frequency', '/training/lora/n_frequency');
    if (method === 'miss') {
      const init = m.take(['init_weights']);
      if (init === 'bat' || init === 'mini') m.set('/training/miss/init', init, ['init_weights']);
      if (init === 'mini') intField(m, ['mini_r'], '/training/miss/mini_r');
      else m.take(['mini_r']);
    }
    if (method === 'glora') {
      const path = m.take(['config_A_B']);
      if (typeof path === 'string') m.set('/training/glora/a_b', lower(path), ['config_A_B']);
      for (const k of ['config_C', 'config_D_E']) if (m.has([k])) { m.take([k]); m.note(`${k}: GLoRA's bias paths are not counted (at most r·(in + 1) + 2·out parameters a linear)`); }
    }
    if (['prompt_tuning', 'prefix_tuning', 'p_tuning'].includes(method)) intField(m, ['num_virtual_tokens'], '/training/virtual_tokens');
    if (method === 'p_tuning') {
      const kind = m.take(['encoder_reparameterization_type']);
      if (typeof kind === 'string') m.set('/training/prompt_encoder', lower(kind), ['encoder_reparameterization_type']);
    }
    if (method === 'adaption_prompt') {
      intField(m, ['adapter_len'], '/training/adapter/prompt_length');
      intField(m, ['adapter_layers'], '/training/adapter/layers');
    }
    if (!['prompt_tuning', 'prefix_tuning', 'p_tuning', 'adaption_prompt', 'trainable_tokens'].includes(method)) {
      setPeftTargets(m);
      setModulesToSave(m, ['modules_to_save']);
      peftScope(m);
    }
  }

  /// RoAd's variant, DEFT's para, OSF's rank, trainable tokens' rows, UniLoRA's bank, AdaLoRA's init_r,
  /// PSOFT's and RandLoRA's shape-neutral keys (peft v0.21.2
  /// tuners/{road,deft,osf,trainable_tokens,unilora,adalora,psoft,randlora}/config.py).
  function mapPeftOutputSide(m, method) {
    if (method === 'road') {
      const variant = m.take(['variant']);
      if (typeof variant === 'string') m.set('/training/road/variant', lower(variant), ['variant']);
      m.take(['group_size']);
    }
    if (method === 'deft') {
      const para = m.bool(['para']);
      if (para !== undefined) m.set('/training/deft/para', para, ['para']);
      const how = m.take(['decomposition_method']);
      if (how !== undefined && how !== null && lower(how) !== 'relu') { m.unread(['decomposition_method']); m.note(`decomposition_method ${how}: memfit models DEFT's relu decomposition`); }
    }
    if (method === 'osf') {
      // memfit's lora.rank is OSF's trainable rank; PEFT's effective_rank is the frozen one, per module.
      const effective = m.take(['effective_rank']);
      if (effective !== undefined && effective !== null) {
        m.fail('invalid_value', ['effective_rank'], 'effective_rank sets the frozen rank per module; memfit takes one trainable rank: set training.lora.rank in the request');
      }
      m.take(['target_svd_config']);
    }
    if (method === 'trainable_tokens') {
      const indices = m.take(['token_indices']);
      if (!Array.isArray(indices) || !indices.length) return m.fail('invalid_value', ['token_indices'], 'token_indices must list the token rows that train');
      m.set('/training/trainable_tokens/count', indices.length, ['token_indices']);
      m.take(['target_modules']);
    }
    if (method === 'adalora') {
      // init_r is the rank A, E and B keep; the allocator's schedule and the regulariser's weight change no shape.
      peftInt(m, 'init_r', '/training/lora/rank');
      for (const k of ['r', 'target_r', 'tinit', 'tfinal', 'deltaT', 'beta1', 'beta2', 'orth_reg_weight', 'total_step', 'lora_alpha', 'lora_dropout']) m.take([k]);
    }
    if (method === 'psoft') {
      // peft v0.21.2 tuners/psoft/config.py: the SVD mode and the Cayley-Neumann series change only r x r work.
      for (const k of ['psoft_alpha', 'psoft_dropout', 'ab_svd_init', 'psoft_svd', 'psoft_svd_lowrank_niter', 'use_cayley_neumann',
        'num_cayley_neumann_terms', 'cayley_neumann_eps', 'init_weights']) m.take([k]);
      for (const k of ['psoft_orth', 'psoft_mag_a', 'psoft_mag_b']) {
        if (m.bool([k]) === false) { m.unread([k]); m.note(`${k} false: memfit counts PSOFT's default trained R (skew entries and both magnitude vectors; at most r² + 2r a linear)`); }
      }
    }
    if (method === 'randlora') {
      for (const k of ['randlora_alpha', 'randlora_dropout', 'projection_prng_key', 'save_projection', 'init_weights']) m.take([k]);
      for (const k of ['sparse', 'very_sparse']) m.bool([k]);  // ternary bases, stored dense as the default's
    }
    if (method === 'unilora') {
      const length = m.take(['theta_d_length']);
      if (length !== undefined && length !== 256) { m.unread(['theta_d_length']); m.note(`theta_d_length ${length}: memfit counts PEFT's default bank of 256 (a few KiB)`); }
    }
  }

  /// Keys that narrow or widen the adapter where memfit adapts every layer's targets at one rank: null
  /// or empty is read; a value is listed as ignored, with a note of which way the estimate errs.
  function peftScope(m) {
    const empty = (v) => v === null || v === undefined || (isObject(v) && !Object.keys(v).length) || (Array.isArray(v) && !v.length);
    const unset = { layers_to_transform: 'adapts only some layers: memfit adapts every layer (an upper bound)',
      layers_pattern: null, exclude_modules: 'excludes modules: memfit adapts every target (an upper bound)',
      rank_pattern: 'sets other ranks for some modules: memfit uses r everywhere', alpha_pattern: null };
    for (const [key, note] of Object.entries(unset)) {
      if (!Object.hasOwn(m.doc, key)) continue;
      if (empty(m.doc[key]) || note === null) { m.take([key]); continue; }
      m.note(`${key} ${note}`);
    }
    const bias = m.take(['bias']);
    if (bias !== undefined && bias !== null && lower(bias) !== 'none') { m.unread(['bias']); m.note(`bias ${bias}: the trained biases are not counted (a few parameters a linear)`); }
    if (m.bool(['inference_mode'])) m.note('inference_mode is true: a saved adapter; estimated as if training it');
  }

  /// PEFT's adapter_config.json (what `save_pretrained` writes): the method and its shape. It holds no
  /// batch, sequence, precision or quantisation: those stay memfit's defaults (the framework's).
  function mapPeft(m, ctx) {
    const type = m.take(['peft_type']);
    if (typeof type !== 'string' || !type) return m.fail('invalid_value', ['peft_type'], 'an adapter_config.json names its method in peft_type');
    const method = PEFT_METHODS[type.toUpperCase()];
    if (!method) return m.fail('invalid_value', ['peft_type'], `PEFT method ${type} is not modelled by memfit (it models ${Object.keys(PEFT_METHODS).join(', ')})`);
    m.set('/training/framework', 'hf_trainer', '', 'a PEFT adapter is usually trained by the HF Trainer (or TRL): its defaults apply');
    setModel(m, ['base_model_name_or_path'], ctx.presets);
    const dora = method === 'lora' && m.bool(['use_dora']);
    m.set('/training/method', dora ? 'dora' : method, dora ? ['use_dora'] : ['peft_type']);
    mapPeftMethod(m, method);
    m.note('adapter_config.json holds the adapter only: batch, sequence length, precision and a 4/8-bit base (QLoRA: training.method qlora) are set in the request');
  }

  const MEGATRON_PARALLEL = [['tensor-model-parallel-size', '/parallel/tp'], ['pipeline-model-parallel-size', '/parallel/pp'],
    ['context-parallel-size', '/parallel/cp'], ['expert-model-parallel-size', '/parallel/ep'],
    ['virtual-pipeline-model-parallel-size', '/parallel/vpp']];

  function mapMegatron(m) {
    m.set('/training/framework', 'megatron', '');
    const nprocKey = Object.hasOwn(m.doc, 'nproc_per_node') ? 'nproc_per_node' : 'nproc-per-node';
    const nproc = m.positiveInt([nprocKey]);
    const nodes = m.positiveInt(['nnodes']);
    if (nproc) {
      m.set('/cluster/gpus', nproc * (nodes ?? 1), [nprocKey], nodes ? 'GPUs per node × nnodes' : undefined);
      m.set('/cluster/gpus_per_node', nproc, [nprocKey]);
    }
    const degree = {};
    for (const [flag, field] of MEGATRON_PARALLEL) {
      const v = m.positiveInt([flag]);
      if (v !== undefined) { m.set(field, v, [flag]); degree[flag] = v; }
    }
    // megatron/training/arguments.py validate_args turns sequence parallelism off at tp 1.
    if (m.take(['sequence-parallel']) === true) {
      if ((degree['tensor-model-parallel-size'] ?? 1) > 1) m.set('/parallel/sequence_parallel', true, ['sequence-parallel']);
      else m.note('--sequence-parallel at tensor-parallel size 1: Megatron turns it off');
    }
    if (m.take(['use-distributed-optimizer']) === true) m.set('/parallel/sharding', 'zero1', ['use-distributed-optimizer']);
    const micro = m.positiveInt(['micro-batch-size']);
    if (micro) m.set('/training/micro_batch', micro, ['micro-batch-size']);
    const global = m.positiveInt(['global-batch-size']);
    const gpus = m.request.cluster?.gpus;
    if (global && micro && gpus) {
      const dp = gpus / ((degree['tensor-model-parallel-size'] ?? 1) * (degree['pipeline-model-parallel-size'] ?? 1) * (degree['context-parallel-size'] ?? 1));
      const accum = global / (micro * dp);
      if (Number.isInteger(dp) && Number.isInteger(accum) && accum >= 1) m.set('/training/grad_accum', accum, ['global-batch-size'], `global-batch-size / (micro-batch-size × dp ${dp})`);
      else m.note(`global-batch-size ${global} is not a whole number of micro-batches per data-parallel rank: grad_accum not set`);
    } else if (global) {
      m.note('global-batch-size gives grad_accum only with the GPU count (--nproc-per-node): not set');
    }
    intField(m, ['seq-length'], '/training/seq_len');
    const bf16 = m.take(['bf16']) === true;
    if (m.take(['fp8-format']) !== undefined) m.set('/training/precision', 'fp8', ['fp8-format'], bf16 ? 'over --bf16: fp32 main params and grads' : undefined);
    else if (bf16) m.set('/training/precision', 'amp_bf16', ['bf16'], 'bf16 weights, fp32 main params and grads');
    else if (m.take(['fp16']) === true) m.set('/training/precision', 'amp_fp16', ['fp16']);
    else m.set('/training/precision', 'fp32', '', 'neither --bf16 nor --fp16');
    const granularity = m.take(['recompute-granularity']);
    if (granularity === 'full' || granularity === 'selective') m.set('/training/activation_checkpointing', granularity, ['recompute-granularity']);
    else if (m.take(['recompute-activations']) === true) m.set('/training/activation_checkpointing', 'selective', ['recompute-activations']);
    if (m.take(['use-flash-attn']) === true) m.set('/training/attention', 'flash', ['use-flash-attn']);
    const backend = m.take(['attention-backend']);
    const kernel = { flash: 'flash', fused: 'flash', auto: 'flash', unfused: 'eager', local: 'eager' }[lower(backend ?? '')];
    if (kernel) m.set('/training/attention', kernel, ['attention-backend'], backend === 'fused' ? "cuDNN fused attention: flash attention's memory" : undefined);
    else if (backend !== undefined) m.unread(['attention-backend']);
    mapMegatronModel(m);
  }

  /// A llama-style HF config from Megatron's model flags (SwiGLU, RMSNorm, RoPE), when all are there.
  function mapMegatronModel(m) {
    const need = ['num-layers', 'hidden-size', 'num-attention-heads', 'ffn-hidden-size', 'vocab-size'];
    const llama = m.has(['swiglu']) && lower(m.doc.normalization ?? '') === 'rmsnorm' && lower(m.doc['position-embedding-type'] ?? '') === 'rope';
    if (!llama || !need.every((k) => Number.isInteger(m.doc[k]))) {
      m.note('model: give its config.json (memfit builds one from the model flags only for a llama-style model: --swiglu, --normalization RMSNorm, --position-embedding-type rope and the five sizes)');
      return;
    }
    const config = { model_type: 'llama', num_hidden_layers: m.take(['num-layers']), hidden_size: m.take(['hidden-size']),
      num_attention_heads: m.take(['num-attention-heads']), intermediate_size: m.take(['ffn-hidden-size']), vocab_size: m.take(['vocab-size']),
      tie_word_embeddings: m.take(['untie-embeddings-and-output-weights']) !== true };
    config.num_key_value_heads = m.take(['group-query-attention']) === true ? m.positiveInt(['num-query-groups']) ?? config.num_attention_heads : config.num_attention_heads;
    const kv = m.positiveInt(['kv-channels']);
    if (kv) config.head_dim = kv;
    const positions = m.positiveInt(['max-position-embeddings']);
    if (positions) config.max_position_embeddings = positions;
    for (const k of ['swiglu', 'normalization', 'position-embedding-type', 'disable-bias-linear']) m.take([k]);
    m.set('/model/config', config, ['num-layers'], 'a llama-style config.json from --num-layers, --hidden-size, --num-attention-heads, --num-query-groups, --ffn-hidden-size, --vocab-size');
  }

  /// On the DeepSpeed engine a bf16 / fp16 run keeps fp32 master partitions in DeepSpeed's
  /// optimizer whatever dtype the model was loaded in (deepspeed/runtime/engine.py, as memfit's
  /// deepspeed profile cites): memfit spells that amp_bf16 / amp_fp16 (docs/api.md, parallel.backend).
  function deepspeedMaster(m) {
    const precision = m.request.training.precision;
    if (m.request.parallel?.backend !== 'deepspeed' || !['bf16', 'fp16'].includes(precision)) return;
    const entry = m.mapped.find((x) => x.to === '/training/precision');
    m.set('/training/precision', `amp_${precision}`, entry.from, `${precision} on the DeepSpeed engine: 16-bit model, fp32 master in DeepSpeed's optimizer`);
  }

  const MAPPERS = { axolotl: mapAxolotl, llamafactory: mapLlamaFactory, torchtune: mapTorchtune, deepspeed: mapDeepspeedFile,
    accelerate: mapAccelerate, hf_args: mapHfArgs, megatron: mapMegatron, peft: mapPeft };

  /// The request filled from a config file. options: {yaml (the `yaml` package), fileName, format
  /// (skip detection), presets (model preset ids), frameworks (framework ids the core has), files
  /// ([{name, text}]: files a config names, e.g. its DeepSpeed JSON)}.
  /// Returns {ok: true, result: {format, format_name, request, model_id, mapped, ignored, notes}}
  /// or {ok: false, error: {code, message, path, line}}.
  function importConfig(text, options = {}) {
    try {
      return { ok: true, result: run(text, options) };
    } catch (e) {
      if (!(e instanceof ImportError)) throw e;
      return { ok: false, error: { code: e.code, message: e.message, path: e.path, line: e.line ?? null } };
    }
  }

  function run(text, options) {
    if (typeof text !== 'string' || !text.trim()) throw new ImportError('invalid_value', '', 'the file is empty', null);
    if (text.length > MAX_INPUT_CHARS) throw new ImportError('input_too_large', '', `the file is ${text.length} characters; at most ${MAX_INPUT_CHARS}`, null);
    if (options.format && !MAPPERS[options.format]) {
      throw new ImportError('invalid_value', '', `format must be one of ${Object.keys(MAPPERS).join(', ')}, got ${options.format}`, null);
    }
    const megatron = options.format === 'megatron' || (!options.format && !/^\s*[{[]/.test(text) && MEGATRON_FLAG.test(text));
    const parsed = megatron ? parseMegatronArgs(text) : parseStructured(text, options.yaml);
    const format = megatron ? 'megatron' : options.format || detectFormat(parsed.value, options.fileName);
    if (!format) {
      throw new ImportError('unknown_format', '', `not a config memfit can read: none of the keys of ${Object.values(FORMAT_NAMES).join(', ')} were found`, null);
    }
    const m = new Mapping(parsed.value, parsed.lines);
    MAPPERS[format](m, { presets: options.presets, frameworks: options.frameworks, files: options.files, YAML: options.yaml, readFile: options.readFile });
    if (m.request.training.method === 'full' || m.request.training.method === 'freeze') delete m.request.training.lora;
    deepspeedMaster(m);
    return { format, format_name: FORMAT_NAMES[format], request: m.request, model_id: m.modelId, mapped: [...m.mapped, ...m.readWithoutField()],
      ignored: [...m.ignored(), ...m.extraIgnored], notes: m.notes };
  }

  /// Several files at once (a config and the DeepSpeed JSON it names, dropped together): the main
  /// one is the first that no other names; the others are passed as `files`.
  function importFiles(files, options = {}) {
    const base = (f) => f.name.split(/[\\/]/).pop();
    const named = (f) => files.some((g) => g !== f && g.text.includes(base(f)));
    const main = files.find((f) => !named(f)) ?? files[0];
    const result = importConfig(main.text, { ...options, fileName: main.name, files: files.filter((f) => f !== main) });
    if (result.ok) result.result.file = main.name;
    return result;
  }

  return { importConfig, importFiles, FORMAT_NAMES };
});

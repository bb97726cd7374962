// Validation against published measurements: read the case CSV (tests/validation/FORMAT.md), turn
// every row into an estimate request, compare the estimate with the measured counter and summarise
// the errors. Everything here is pure apart from reading config.json files; the estimator is passed
// in (`estimate(requestText) -> envelopeText`), so the tests can run it without the WASM module.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const BYTES_PER_GIB = 2 ** 30;

/// Every column of the case format; a file without one of them is rejected.
const REQUIRED_COLUMNS = [
  'id', 'source', 'date', 'grade', 'model', 'gpu', 'n_gpus',
  'dp', 'tp', 'pp', 'vpp', 'cp', 'ep', 'sequence_parallel', 'sharding', 'offload',
  'method', 'lora_rank', 'lora_targets', 'base_quant', 'precision', 'optimizer',
  'optimizer_in_backward', 'micro_batch', 'grad_accum', 'seq_len', 'packed',
  'activation_checkpointing', 'attention', 'loss', 'compile', 'framework',
  'measured_gib', 'measured_kind', 'measured_scope', 'notes',
];

/// CSV column -> request `training` key, by how the cell is read. Order = the request's key order.
const TRAINING_FIELDS = [
  ['framework', 'text'], ['method', 'text'], ['base_quant', 'text'], ['precision', 'text'],
  ['optimizer', 'text'], ['optimizer_in_backward', 'bool'], ['micro_batch', 'int'],
  ['grad_accum', 'int'], ['seq_len', 'int'], ['packed', 'bool'],
  ['activation_checkpointing', 'text'], ['offload', 'text'], ['attention', 'text'],
  ['loss', 'text'], ['compile', 'bool'],
];
const PARALLEL_FIELDS = [
  ['dp', 'int'], ['tp', 'int'], ['pp', 'int'], ['vpp', 'int'], ['cp', 'int'], ['ep', 'int'],
  ['sequence_parallel', 'bool'], ['sharding', 'text'],
];
// Adapter methods whose rank and targets the lora_rank / lora_targets columns carry (training.lora).
// For oft the rank is PEFT's r (blocks per linear); `block_size=N` in the notes gives oft's, boft's or c3a's
// block size, `n_frequency=N` fourierft's or waveft's trained spectrum entries.
const LORA_METHODS = new Set(['lora', 'qlora', 'dora', 'loha', 'lokr', 'vera', 'ia3', 'oft', 'boft', 'miss', 'glora',
  'fourierft', 'waveft', 'hira', 'shira', 'c3a', 'delora', 'gralora', 'peanut', 'lily', 'tinylora', 'vblora', 'frod',
  'adamss', 'road', 'osf', 'deft', 'beft', 'pvera', 'unilora', 'adalora', 'psoft', 'randlora']);
/// PEFT config keywords of the shared-bank adapters -> their training.<method> settings (peft v0.21.2
/// tuners/<method>/config.py keys; docs/api.md).
const SHARED_ADAPTER_KWARGS = {
  lily: { stride_A: 'stride_a', num_B: 'num_b' },
  tinylora: { u: 'u', weight_tying: 'weight_tying' },
  vblora: { num_vectors: 'num_vectors', vector_length: 'vector_length', topk: 'topk' },
  frod: { sparse_rate: 'sparse_rate', runtime_offload_base_weight: 'offload_base_weight' },
  adamss: { num_subspaces: 'subspaces', subspace_rank: 'subspace_rank' },
};

/// measured_kind -> the estimate result field holding the same counter.
const COUNTER_FIELDS = {
  max_allocated: 'peak_allocated_bytes',
  tensor_bytes: 'peak_tensor_bytes',
  peak_active: 'peak_active_bytes',
  max_reserved: 'peak_reserved_bytes',
  nvidia_smi: 'device_total_bytes',
  // NVML's v1 `used` (pynvml, trackio, wandb): the device total and the driver's reservation.
  nvml_used: 'nvml_used_bytes',
  activations: 'activations_peak_bytes',
  model_states: 'model_states_bytes',
  layer_model_states: 'layer_model_states_bytes',
};

/// The counters a framework's own logging can report (result.framework.logged_counter).
const LOGGED_COUNTERS = new Set(['max_allocated', 'peak_active', 'max_reserved', 'nvidia_smi']);

/// The headline group and its targets (absolute error, percent).
const HEADLINE_GROUP = 'single_gpu_AB';
const TARGET_MEDIAN_ABS_ERROR_PCT = 5;
const TARGET_P90_ABS_ERROR_PCT = 12;
/// Multi-GPU grade A/B rows (issue 4's target) and Korthikanti et al.'s activation rows.
const MULTI_GPU_GROUP = 'multi_gpu_AB';
const MULTI_TARGET_MEDIAN_ABS_ERROR_PCT = 6;
const MULTI_TARGET_P90_ABS_ERROR_PCT = 15;
const ACTIVATION_GROUP = 'korthikanti_activations';
const ACTIVATION_TARGET_MAX_ABS_ERROR_PCT = 3;

/// Under-estimated by more than this (percent below the measurement) is the dangerous direction:
/// the calculator says "fits" and the job dies. Every summary leads with the share of such rows.
const UNDER_ESTIMATE_THRESHOLD_PCT = 10;

const OTHER_PEFT_REASON = 'PEFT method not modelled by memfit';

/// A problem with one row: the row goes to the error list, the file is still read. `code` is
/// invalid_row (a malformed cell; `path` = its column), invalid_config (the model's config.json is
/// not JSON) or bad_result (the estimate lacks what the comparison needs; `path` = JSON Pointer
/// into the result).
class RowError extends Error {
  constructor(path, message, code = 'invalid_row') {
    super(message);
    this.path = path;
    this.code = code;
  }
}

// ---------------------------------------------------------------------------------------------
// CSV

/// RFC 4180: fields separated by commas, records by CRLF or LF; a quoted field may hold commas,
/// line breaks and doubled quotes. Returns the records as arrays of strings (blank lines dropped).
/// Throws on an unterminated quote or a quote inside an unquoted field.
function parseCsv(text) {
  const records = [];
  let record = [];
  let field = '';
  let quoted = false; // inside a quoted field
  let wasQuoted = false; // the current field was quoted (only a separator may follow)
  let line = 1;
  const endField = () => {
    record.push(field);
    field = '';
    wasQuoted = false;
  };
  const endRecord = () => {
    endField();
    if (!(record.length === 1 && record[0] === '')) records.push(record);
    record = [];
  };
  const src = text.startsWith('\uFEFF') ? text.slice(1) : text;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (quoted) {
      if (c === '"' && src[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') {
        quoted = false;
        wasQuoted = true;
      } else {
        if (c === '\n') line++;
        field += c;
      }
    } else if (c === ',') {
      endField();
    } else if (c === '\n' || (c === '\r' && src[i + 1] === '\n')) {
      if (c === '\r') i++;
      endRecord();
      line++;
    } else if (c === '"') {
      if (field !== '' || wasQuoted) throw new Error(`line ${line}: quote inside an unquoted field`);
      quoted = true;
    } else {
      if (wasQuoted) throw new Error(`line ${line}: text after a closing quote`);
      field += c;
    }
  }
  if (quoted) throw new Error(`line ${line}: unterminated quoted field`);
  if (field !== '' || wasQuoted || record.length > 0) endRecord();
  return records;
}

/// The case rows of a CSV text as objects keyed by the header. Throws (with a message for the user)
/// when required columns are missing, a record has the wrong number of fields, or ids repeat.
function readCases(text) {
  const records = parseCsv(text);
  if (records.length === 0) throw new Error('empty file: no header row');
  const header = records[0].map((name) => name.trim());
  const missing = REQUIRED_COLUMNS.filter((name) => !header.includes(name));
  if (missing.length > 0) throw new Error(`missing required column(s): ${missing.join(', ')}`);
  const seen = new Set();
  return records.slice(1).map((fields, index) => {
    if (fields.length !== header.length) {
      throw new Error(`record ${index + 1}: ${fields.length} fields, the header has ${header.length}`);
    }
    const row = Object.fromEntries(header.map((name, i) => [name, fields[i].trim()]));
    if (row.id === '') throw new Error(`record ${index + 1}: empty id`);
    if (seen.has(row.id)) throw new Error(`record ${index + 1}: duplicate id '${row.id}'`);
    seen.add(row.id);
    return row;
  });
}

// ---------------------------------------------------------------------------------------------
// Row -> request

/// One cell read as `kind` (text, int, bool from 0/1); undefined for an empty cell.
function readCell(row, column, kind) {
  const cell = row[column];
  if (cell === undefined || cell === '') return undefined;
  if (kind === 'int') {
    if (!/^[0-9]+$/.test(cell)) throw new RowError(column, `${column} must be an integer, got '${cell}'`);
    return Number(cell);
  }
  if (kind === 'bool') {
    if (cell !== '0' && cell !== '1') throw new RowError(column, `${column} must be 0 or 1, got '${cell}'`);
    return cell === '1';
  }
  return cell;
}

/// An object of the non-empty cells of `fields` ([column, kind] pairs), keyed by column.
function readCells(row, fields) {
  const out = {};
  for (const [column, kind] of fields) {
    const value = readCell(row, column, kind);
    if (value !== undefined) out[column] = value;
  }
  return out;
}

/// Why a row is not sent to the estimator at all, or null.
function skipReason(row) {
  if (row.method !== 'other_peft') return null;
  const named = /PEFT method ([A-Za-z0-9_]+)/.exec(row.notes || '');
  return named ? `${OTHER_PEFT_REASON} (${named[1]})` : OTHER_PEFT_REASON;
}

/// `peft_kwargs={...}` in the notes: the PEFT config's keywords as JSON (PEFT method_comparison's
/// adapter_config.json settings), or null. Throws RowError when the JSON does not parse.
function peftKwargsOf(row) {
  const m = /(^|[\s;,(])peft_kwargs=(\{[^}]*\})/.exec(row.notes || '');
  if (!m) return null;
  try {
    return JSON.parse(m[2]);
  } catch (err) {
    throw new RowError('notes', `peft_kwargs is not JSON: ${err.message}`);
  }
}

/// The request fields a method's PEFT keywords set: MiSS's r, init_weights and mini_r (training.miss);
/// GLoRA's r and config_A_B (training.glora.a_b); RoAd's variant (training.road); DEFT's r and para
/// (training.deft); PSOFT's r; trainable tokens' token_indices, counted (training.trainable_tokens); the
/// shared-bank adapters' r and shapes (SHARED_ADAPTER_KWARGS).
function applyPeftKwargs(training, kwargs) {
  if (training.method === 'road' && kwargs.variant !== undefined) training.road = { variant: kwargs.variant };
  if (training.method === 'deft' && kwargs.para !== undefined) training.deft = { para: kwargs.para };
  if (training.method === 'trainable_tokens' && Array.isArray(kwargs.token_indices)) {
    training.trainable_tokens = { count: kwargs.token_indices.length };
  }
  if ((training.method === 'deft' || training.method === 'psoft') && kwargs.r !== undefined) {
    training.lora = { ...(training.lora ?? {}), rank: kwargs.r };
  }
  const shared = SHARED_ADAPTER_KWARGS[training.method];
  if (shared) {
    if (kwargs.r !== undefined && training.method !== 'frod') training.lora = { ...(training.lora ?? {}), rank: kwargs.r };
    const settings = {};
    for (const [key, field] of Object.entries(shared)) if (kwargs[key] !== undefined) settings[field] = kwargs[key];
    if (Object.keys(settings).length > 0) training[training.method] = settings;
    return;
  }
  if (training.method !== 'miss' && training.method !== 'glora') return;
  if (kwargs.r !== undefined) training.lora = { ...(training.lora ?? {}), rank: kwargs.r };
  if (training.method === 'glora') {
    if (kwargs.config_A_B !== undefined) training.glora = { a_b: kwargs.config_A_B };
    return;
  }
  const init = kwargs.init_weights === true || kwargs.init_weights === undefined ? 'default' : kwargs.init_weights;
  training.miss = { init };
  if (init === 'mini' && kwargs.mini_r !== undefined) training.miss.mini_r = kwargs.mini_r;
}

/// The `lora` block for adapter methods with a rank or targets stated; undefined otherwise.
function loraOf(row) {
  if (!LORA_METHODS.has(row.method)) return undefined;
  const lora = {};
  const rank = readCell(row, 'lora_rank', 'int');
  if (rank !== undefined) lora.rank = rank;
  const targets = readCell(row, 'lora_targets', 'text');
  if (targets !== undefined) {
    lora.targets = targets === 'all-linear'
      ? targets
      : targets.split(',').map((t) => t.trim()).filter((t) => t !== '');
  }
  const block = /(^|[\s;,(])block_size=(\d+)\b/.exec(row.notes || '');
  if (block) lora.block_size = Number(block[2]);
  const frequencies = /(^|[\s;,(])n_frequency=(\d+)\b/.exec(row.notes || '');
  if (frequencies) lora.n_frequency = Number(frequencies[2]);
  // `init_lora_weights=NAME` in the notes: LoRA's initialisation (PiSSA, OLoRA, ...).
  const init = /(^|[\s;,(])init_lora_weights=([a-z]+)\b/.exec(row.notes || '');
  if (init) lora.init = init[2];
  return Object.keys(lora).length > 0 ? lora : undefined;
}

/// The estimate request (schema_version 1) for one row. `config` is the parsed config.json of the
/// row's model, or null to use the preset of that id. Throws RowError on a malformed cell.
function rowToRequest(row, config) {
  if (!row.model) throw new RowError('model', 'model is empty');
  const training = {};
  for (const [column, kind] of TRAINING_FIELDS) {
    const value = readCell(row, column, kind);
    if (value !== undefined) training[column] = value;
    if (column === 'method') {
      const lora = loraOf(row);
      if (lora !== undefined) training.lora = lora;
    }
  }

  // The run's date selects the framework's behaviour of that time (FORMAT.md: the framework and
  // library versions of that date apply).
  const date = readCell(row, 'date', 'text');
  if (training.framework !== undefined && date !== undefined && /^\d{4}-\d{2}$/.test(date)) {
    training.framework_version = date;
  }
  // `framework_version=YYYY-MM` in the notes: a run on libraries pinned to an earlier date than the run's own.
  const pinned = /(^|[\s;,(])framework_version=(\d{4}-\d{2})\b/.exec(row.notes || '');
  if (training.framework !== undefined && pinned) training.framework_version = pinned[2];

  const cluster = {};
  const gpu = readCell(row, 'gpu', 'text');
  if (gpu !== undefined) cluster.gpu = { preset: gpu };
  const gpus = readCell(row, 'n_gpus', 'int');
  if (gpus !== undefined) cluster.gpus = gpus;

  const request = {
    schema_version: 1,
    model: config ? { config } : { preset: row.model },
    training,
  };
  if (Object.keys(cluster).length > 0) request.cluster = cluster;
  const parallel = readCells(row, PARALLEL_FIELDS);
  // `virtual_tokens=N` in the notes: PEFT prompt / prefix tuning's num_virtual_tokens.
  const tokens = /(^|[\s;,(])virtual_tokens=(\d+)\b/.exec(row.notes || '');
  if (tokens) training.virtual_tokens = Number(tokens[2]);
  // `encoder_reparameterization_type=lstm` (or mlp) in the notes: P-tuning's prompt encoder.
  const encoder = /(^|[\s;,(])encoder_reparameterization_type=(mlp|lstm)\b/i.exec(row.notes || '');
  if (encoder) training.prompt_encoder = encoder[2].toLowerCase();
  // `adapter_len=N` and `adapter_layers=N` in the notes: PEFT adaption prompt's (LLaMA-Adapter's) settings.
  const adapterLen = /(^|[\s;,(])adapter_len=(\d+)\b/.exec(row.notes || '');
  const adapterLayers = /(^|[\s;,(])adapter_layers=(\d+)\b/.exec(row.notes || '');
  if (adapterLen || adapterLayers) {
    training.adapter = {};
    if (adapterLen) training.adapter.prompt_length = Number(adapterLen[2]);
    if (adapterLayers) training.adapter.layers = Number(adapterLayers[2]);
  }
  // `modules_to_save=embedding,head` in the notes: PEFT's trainable copies (training.lora.modules_to_save).
  const saved = /(^|[\s;,(])modules_to_save=([a-z_]+(?:,[a-z_]+)*)/.exec(row.notes || '');
  if (saved) training.lora = { ...(training.lora ?? {}), modules_to_save: saved[2].split(',') };
  // `badam_block=first|last` in the notes: BAdam's active decoder layer (training.badam).
  const badam = /(^|[\s;,(])badam_block=(first|last)\b/.exec(row.notes || '');
  if (badam) training.badam = { active_block: badam[2] };
  const peftKwargs = peftKwargsOf(row);
  if (peftKwargs) applyPeftKwargs(training, peftKwargs);
  // `optimizer_impl=foreach` (or fused, forloop) in the notes: the optimizer implementation the run's config picked.
  const impl = /(^|[\s;,(])optimizer_impl=(foreach|fused|forloop)\b/.exec(row.notes || '');
  if (impl) training.optimizer_impl = impl[2];
  // `liger_kernels` in the notes: Liger's RMSNorm / SwiGLU / RoPE were patched in (training.liger_kernels).
  if (/(^|[\s;,(])liger_kernels\b/.test(row.notes || '')) training.liger_kernels = true;
  // `compile_scope=regions` in the notes, or accelerate's regional compilation named there (TorchDynamoPlugin
  // use_regional_compilation): only the repeated blocks and leaf children are compiled (training.compile_scope).
  if (training.compile && /(^|[\s;,(])compile_scope=regions\b|accelerate regional compilation/.test(row.notes || '')) {
    training.compile_scope = 'regions';
  }
  // `alloc_conf=expandable_segments:True` in the notes (the run's PYTORCH_CUDA_ALLOC_CONF): training.expandable_segments.
  if (/(^|[\s;,(])alloc_conf=expandable_segments:True\b/.test(row.notes || '')) training.expandable_segments = true;
  // `backend=deepspeed` in the notes: the wrapper ran the DeepSpeed engine (parallel.backend).
  if (/(^|[\s;,(])backend=deepspeed\b/.test(row.notes || '')) parallel.backend = 'deepspeed';
  // `zero3_init=false` in the notes: the model was built outside deepspeed.zero.Init (parallel.zero3_init).
  if (/(^|[\s;,(])zero3_init=false\b/.test(row.notes || '')) parallel.zero3_init = false;
  // `accumulate_allreduce_grads_in_fp32=true`: Megatron's fp32 main_grad under --fp16 (parallel.accumulate_allreduce_grads_in_fp32).
  if (/(^|[\s;,(])accumulate_allreduce_grads_in_fp32=true\b/.test(row.notes || '')) parallel.accumulate_allreduce_grads_in_fp32 = true;
  // `cp_kind=ulysses` in the notes: the cp column holds DeepSpeed Ulysses sequence parallelism.
  if (/(^|[\s;,(])cp_kind=ulysses\b/.test(row.notes || '')) parallel.cp_kind = 'ulysses';
  // `fsdp_version=2` (or accelerate's YAML spelling `fsdp_version 2`) in the notes: accelerate ran FSDP2
  // (fully_shard) under the HF Trainer.
  if (/(^|[\s;,(])fsdp_version[= ]2\b/.test(row.notes || '')) parallel.fsdp_version = 2;
  // `cpu_ram_efficient_loading=true` in the notes: accelerate's fsdp_cpu_ram_efficient_loading (rank 0 loads on the
  // host, FSDP1 builds each unit on the GPU from there: parallel.cpu_ram_efficient_loading).
  if (/(^|[\s;,(])cpu_ram_efficient_loading=true\b/.test(row.notes || '')) parallel.cpu_ram_efficient_loading = true;
  // The FSDP plugin's own checkpointing (accelerate's fsdp_activation_checkpointing), as the notes say it.
  if (/activation checkpointing by the FSDP plugin|(^|[\s;,(])fsdp_activation_checkpointing[= ]true\b/.test(row.notes || '')) {
    parallel.fsdp_activation_checkpointing = true;
  }
  if (Object.keys(parallel).length > 0) request.parallel = parallel;
  return request;
}

/// A config finder over directories: model id -> parsed `<org>__<name>.json` from the first
/// directory that has it, or null. Results are cached; a file that is not JSON throws RowError.
function configFinder(configDirs) {
  const cache = new Map();
  return (model) => {
    if (cache.has(model)) return cache.get(model);
    const name = `${model.replaceAll('/', '__')}.json`;
    let config = null;
    for (const dir of configDirs) {
      const file = path.join(dir, name);
      if (!fs.existsSync(file)) continue;
      try {
        config = JSON.parse(fs.readFileSync(file, 'utf8'));
      } catch (e) {
        throw new RowError('model', `${file}: not valid JSON (${e.message})`, 'invalid_config');
      }
      break;
    }
    cache.set(model, config);
    return config;
  };
}

// ---------------------------------------------------------------------------------------------
// Comparing

/// Which result field to compare for a measured_kind: {kind, field}. `unknown` resolves through
/// the counter the framework logs (result.framework.logged_counter). Throws RowError if neither
/// names a known counter.
function counterFor(measuredKind, result) {
  let kind = measuredKind;
  if (kind === 'unknown') {
    kind = result && result.framework ? result.framework.logged_counter : undefined;
    if (!LOGGED_COUNTERS.has(kind)) {
      throw new RowError('/framework/logged_counter',
        'measured_kind unknown: the result names no logged counter '
        + `(framework.logged_counter = ${JSON.stringify(kind)})`, 'bad_result');
    }
  }
  if (!Object.hasOwn(COUNTER_FIELDS, kind)) {
    throw new RowError('measured_kind', `unknown measured_kind '${measuredKind}'`);
  }
  return { kind, field: COUNTER_FIELDS[kind] };
}

/// The measured value of a row in GiB (> 0). Throws RowError otherwise.
function measuredGib(row) {
  const value = Number(row.measured_gib);
  if (row.measured_gib === '' || !Number.isFinite(value) || value <= 0) {
    throw new RowError('measured_gib', `measured_gib must be a positive number, got '${row.measured_gib}'`);
  }
  return value;
}

/// How many GPUs the measurement covers: 1 per GPU, n_gpus for a total.
function scopeFactor(row) {
  if (row.measured_scope === 'per_gpu') return 1;
  if (row.measured_scope === 'total') return readCell(row, 'n_gpus', 'int') || 1;
  throw new RowError('measured_scope', `measured_scope must be per_gpu or total, got '${row.measured_scope}'`);
}

/// The id prefix naming the source: "TT-001" -> "TT".
function sourceOf(id) {
  const dash = id.indexOf('-');
  return dash < 0 ? id : id.slice(0, dash);
}

/// The counters an `unknown` measurement may be: every counter the framework's memory log prints
/// (result.framework.logged_counters), else its default one. [{kind, field}], at least one.
function unknownCounters(result) {
  const logged = result && result.framework && Array.isArray(result.framework.logged_counters)
    ? result.framework.logged_counters.filter((kind) => LOGGED_COUNTERS.has(kind)) : [];
  if (logged.length < 2) return [counterFor('unknown', result)];
  const seen = new Set();
  return logged.map((kind) => ({ kind, field: COUNTER_FIELDS[kind] }))
    .filter(({ field }) => !seen.has(field) && seen.add(field));
}

/// The compared row for one estimate result. A setting the row leaves unknown — the counter (a
/// framework that logs several), or one the estimate spans with `ranges` — makes the estimate a
/// range: the row is compared on its high end, as the verdict is judged (issue 32), and carries the
/// low end and what drives the range.
function compareRow(row, result) {
  const measured_gib = measuredGib(row);
  const factor = scopeFactor(row);
  const counters = row.measured_kind === 'unknown' ? unknownCounters(result) : [counterFor(row.measured_kind, result)];
  const ranges = result.ranges && typeof result.ranges === 'object' ? result.ranges : null;
  let low = Infinity;
  let high = -Infinity;
  let highField = counters[0].field;
  for (const { field } of counters) {
    const bytes = result[field];
    if (typeof bytes !== 'number' || !Number.isFinite(bytes)) {
      throw new RowError(`/${field}`, `the estimate has no numeric '${field}'`, 'bad_result');
    }
    const span = ranges && ranges[field] && Number.isFinite(ranges[field].low) ? ranges[field] : { low: bytes, high: bytes };
    low = Math.min(low, span.low, bytes);
    if (Math.max(span.high, bytes) > high) {
      high = Math.max(span.high, bytes);
      highField = field;
    }
  }
  const estimate_gib = (high * factor) / BYTES_PER_GIB;
  const compared = {
    id: row.id,
    grade: row.grade,
    source: sourceOf(row.id),
    model: row.model,
    n_gpus: readCell(row, 'n_gpus', 'int') || 1,
    measured_kind: row.measured_kind,
    measured_scope: row.measured_scope,
    counter: highField,
    estimate_gib,
    measured_gib,
    error_pct: ((estimate_gib - measured_gib) / measured_gib) * 100,
  };
  const unknown = [];
  if (counters.length > 1) unknown.push('counter');
  if (ranges && Array.isArray(ranges.unknown)) unknown.push(...ranges.unknown);
  if (unknown.length > 0) {
    compared.range = {
      unknown,
      counters: counters.map(({ field }) => field),
      low_gib: (low * factor) / BYTES_PER_GIB,
      low_error_pct: (((low * factor) / BYTES_PER_GIB - measured_gib) / measured_gib) * 100,
    };
  }
  return compared;
}

/// Runs every row through the estimator. Options: `estimate(requestText) -> envelopeText`,
/// `configDirs` (directories of `<org>__<name>.json`) or `findConfig(model) -> object|null`.
/// Returns {rows, skipped: [{id, reason}], errors: [{id, code, path, message}], summary}.
function validate(cases, options) {
  const estimate = options.estimate;
  const findConfig = options.findConfig || configFinder(options.configDirs || []);
  const rows = [];
  const skipped = [];
  const errors = [];
  for (const row of cases) {
    const reason = skipReason(row);
    if (reason) {
      skipped.push({ id: row.id, reason });
      continue;
    }
    try {
      const request = rowToRequest(row, findConfig(row.model));
      measuredGib(row); // bad measurement cells are reported before the estimate runs
      scopeFactor(row);
      if (row.measured_kind !== 'unknown') counterFor(row.measured_kind, null);
      const envelope = parseEnvelope(estimate(JSON.stringify(request)));
      if (envelope.ok) {
        rows.push(compareRow(row, envelope.result));
      } else if (envelope.error.code === 'unsupported') {
        skipped.push({ id: row.id, reason: envelope.error.message });
      } else {
        const { code, path: where = '', message = '' } = envelope.error;
        errors.push({ id: row.id, code, path: where, message });
      }
    } catch (e) {
      if (!(e instanceof RowError)) throw e;
      errors.push({ id: row.id, code: e.code, path: e.path, message: e.message });
    }
  }
  return { rows, skipped, errors, summary: summarize(rows, skipped.length, errors.length) };
}

/// The envelope of an estimate call; a reply that is not an envelope becomes an error envelope.
function parseEnvelope(text) {
  try {
    const envelope = JSON.parse(text);
    if (envelope && envelope.ok === true && envelope.result) return envelope;
    if (envelope && envelope.ok === false && envelope.error) return envelope;
  } catch (_) {
    // reported below
  }
  const message = `not an envelope: ${String(text).slice(0, 200)}`;
  return { ok: false, error: { code: 'bad_envelope', path: '', message } };
}

// ---------------------------------------------------------------------------------------------
// Statistics

/// Median of numbers (mean of the middle two for an even count); null when empty.
function median(values) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/// 90th percentile by nearest rank: sorted[ceil(0.9 n) - 1]; null when empty.
function p90(values) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((9 * sorted.length) / 10); // exact in integers, no 0.9 rounding
  return sorted[rank - 1];
}

/// Count, the share under-estimated by more than 10 % (first: the dangerous direction), median
/// and p90 of |error|, mean signed error (percent) of compared rows.
function groupStats(rows) {
  const signed = rows.map((r) => r.error_pct);
  const abs = signed.map(Math.abs);
  const under = signed.filter((e) => e < -UNDER_ESTIMATE_THRESHOLD_PCT).length;
  return {
    count: rows.length,
    under_10_share_pct: rows.length ? (100 * under) / rows.length : null,
    under_10_count: under,
    median_abs_error_pct: median(abs),
    p90_abs_error_pct: p90(abs),
    mean_error_pct: rows.length ? signed.reduce((a, b) => a + b, 0) / rows.length : null,
  };
}

/// Rows grouped by key(row) -> stats, keys sorted.
function statsBy(rows, key) {
  const groups = new Map();
  for (const row of rows) {
    const k = key(row);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(row);
  }
  const keys = [...groups.keys()].sort();
  return Object.fromEntries(keys.map((k) => [k, groupStats(groups.get(k))]));
}

/// The headline group: single GPU, grade A or B.
function isHeadlineRow(row) {
  return row.n_gpus === 1 && (row.grade === 'A' || row.grade === 'B');
}

/// The multi-GPU group: more than one GPU, grade A or B.
function isMultiGpuRow(row) {
  return row.n_gpus > 1 && (row.grade === 'A' || row.grade === 'B');
}

/// Stats of `rows` with a median/p90 target and whether it is met.
function targetStats(rows, medianTarget, p90Target) {
  const stats = groupStats(rows);
  stats.target_median_abs_error_pct = medianTarget;
  stats.target_p90_abs_error_pct = p90Target;
  stats.meets_target = stats.count > 0 && stats.median_abs_error_pct <= medianTarget && stats.p90_abs_error_pct <= p90Target;
  return stats;
}

/// Overall, headline, multi-GPU, per-source and per-grade statistics, plus the skipped and error counts.
function summarize(rows, skippedCount, errorCount) {
  const headline = targetStats(rows.filter(isHeadlineRow), TARGET_MEDIAN_ABS_ERROR_PCT, TARGET_P90_ABS_ERROR_PCT);
  const multi = targetStats(rows.filter(isMultiGpuRow), MULTI_TARGET_MEDIAN_ABS_ERROR_PCT, MULTI_TARGET_P90_ABS_ERROR_PCT);
  const kort = rows.filter((r) => r.source === 'KORT' && r.measured_kind === 'activations');
  const activations = groupStats(kort);
  activations.max_abs_error_pct = kort.length ? Math.max(...kort.map((r) => Math.abs(r.error_pct))) : null;
  activations.target_max_abs_error_pct = ACTIVATION_TARGET_MAX_ABS_ERROR_PCT;
  activations.meets_target = kort.length > 0 && activations.max_abs_error_pct <= ACTIVATION_TARGET_MAX_ABS_ERROR_PCT;
  return {
    [HEADLINE_GROUP]: headline,
    [MULTI_GPU_GROUP]: multi,
    [ACTIVATION_GROUP]: activations,
    overall: groupStats(rows),
    by_source: statsBy(rows, (r) => r.source),
    by_grade: statsBy(rows, (r) => r.grade || '?'),
    skipped: skippedCount,
    errors: errorCount,
  };
}

// ---------------------------------------------------------------------------------------------
// Output (the table and --json of one file; cli/validation_report.js builds the markdown and the
// blind comparisons on these pieces)

/// The --json document: rows reduced to the compared fields.
function toJson(report) {
  const rows = report.rows.map((r) => ({
    id: r.id, grade: r.grade, source: r.source, measured_kind: r.measured_kind, counter: r.counter,
    estimate_gib: r.estimate_gib, measured_gib: r.measured_gib, error_pct: r.error_pct,
  }));
  return { rows, skipped: report.skipped, errors: report.errors, summary: report.summary };
}

const fixed = (value, digits) => (value === null || value === undefined ? '-' : value.toFixed(digits));
const signed = (value, digits) =>
  (value === null || value === undefined ? '-' : (value >= 0 ? '+' : '') + value.toFixed(digits));
const shortModel = (model) => (model ? model.slice(model.indexOf('/') + 1) : '');

/// "20.0% (3)": the share under-estimated by more than 10 % and its count; '-' without rows.
const underCell = (s, space = '') =>
  (s.count === 0 ? '-' : `${fixed(s.under_10_share_pct, 1)}${space}% (${s.under_10_count})`);

/// One summary line, the dangerous direction first:
/// "n=12  under >10% 8.3% (1)  median |err| 4.1%  p90 |err| 9.0%  mean err +1.2%".
function statsLine(s) {
  return `n=${s.count}  under >10% ${underCell(s)}  median |err| ${fixed(s.median_abs_error_pct, 1)}%  `
    + `p90 |err| ${fixed(s.p90_abs_error_pct, 1)}%  mean err ${signed(s.mean_error_pct, 1)}%`;
}

/// The line every text report starts with: the dangerous direction, then median and p90.
function dangerLine(label, s) {
  return `${label}: ${s.under_10_count} of ${s.count} rows under-estimated by more than `
    + `${UNDER_ESTIMATE_THRESHOLD_PCT}% (${fixed(s.under_10_share_pct, 1)}%); `
    + `median |err| ${fixed(s.median_abs_error_pct, 1)}%, p90 |err| ${fixed(s.p90_abs_error_pct, 1)}%`;
}

/// A fixed-width text table; columns in `numeric` are right-aligned.
function textTable(header, cells, numeric) {
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((v, i) => (numeric.has(i) ? v.padStart(widths[i]) : v.padEnd(widths[i])))
    .join('  ').trimEnd();
  return [line(header), ...cells.map(line)];
}

/// The skipped and error lists of a report, as text lines.
function skippedAndErrorLines(report) {
  const out = [`skipped (${report.skipped.length}):`];
  for (const s of report.skipped) out.push(`  ${s.id}  ${s.reason}`);
  out.push('', `errors (${report.errors.length}):`);
  for (const e of report.errors) out.push(`  ${e.id}  ${e.code}  ${e.path}  ${e.message}`);
  return out;
}

/// The named groups of a summary, in report order: [label, stats, target text or null].
function summaryGroups(s) {
  const h = s[HEADLINE_GROUP];
  const m = s[MULTI_GPU_GROUP];
  const k = s[ACTIVATION_GROUP];
  const met = (g) => (g.meets_target ? 'met' : 'NOT met');
  return [
    ['single GPU, grade A/B', h,
      `target median <= ${h.target_median_abs_error_pct}%, p90 <= ${h.target_p90_abs_error_pct}%: ${met(h)}`],
    ['multi GPU, grade A/B', m,
      `target median <= ${m.target_median_abs_error_pct}%, p90 <= ${m.target_p90_abs_error_pct}%: ${met(m)}`],
    ['Korthikanti activations', k,
      `max |err| ${fixed(k.max_abs_error_pct, 1)}%  target <= ${k.target_max_abs_error_pct}%: ${met(k)}`],
    ['overall', s.overall, null],
    ...Object.entries(s.by_source).map(([name, v]) => [`source ${name}`, v, null]),
    ...Object.entries(s.by_grade).map(([name, v]) => [`grade ${name}`, v, null]),
  ];
}

/// The default output: the dangerous-direction line, a fixed-width table, skipped rows, error
/// rows, summary lines.
function formatTable(report) {
  const header = ['id', 'grade', 'model', 'measured_kind', 'estimate_GiB', 'measured_GiB', 'error_%'];
  const cells = report.rows.map((r) => [
    r.id, r.grade, shortModel(r.model).slice(0, 32), r.measured_kind,
    fixed(r.estimate_gib, 2), fixed(r.measured_gib, 2), signed(r.error_pct, 1),
  ]);
  const out = [dangerLine('all compared rows', report.summary.overall), ''];
  out.push(...textTable(header, cells, new Set([4, 5, 6])), '', ...skippedAndErrorLines(report));
  out.push('', 'summary:');
  for (const [label, stats, target] of summaryGroups(report.summary)) {
    out.push(`  ${label}: ${statsLine(stats)}${target ? `  ${target}` : ''}`);
  }
  out.push(`  skipped: ${report.summary.skipped}  errors: ${report.summary.errors}`);
  return out.join('\n') + '\n';
}

/// A markdown table cell: pipes escaped, line breaks flattened.
const mdCell = (value) => String(value).replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');

/// A markdown table; `align` has one letter per column, 'l' or 'r' (numbers).
function mdTable(header, align, rows) {
  return [
    `| ${header.join(' | ')} |`,
    `|${[...align].map((a) => (a === 'r' ? '---:' : '---')).join('|')}|`,
    ...rows.map((r) => `| ${r.map(mdCell).join(' | ')} |`),
  ].join('\n');
}

module.exports = {
  BYTES_PER_GIB,
  REQUIRED_COLUMNS,
  COUNTER_FIELDS,
  HEADLINE_GROUP,
  MULTI_GPU_GROUP,
  ACTIVATION_GROUP,
  TARGET_MEDIAN_ABS_ERROR_PCT,
  TARGET_P90_ABS_ERROR_PCT,
  UNDER_ESTIMATE_THRESHOLD_PCT,
  RowError,
  parseCsv,
  readCases,
  skipReason,
  rowToRequest,
  configFinder,
  counterFor,
  sourceOf,
  compareRow,
  validate,
  median,
  p90,
  groupStats,
  summarize,
  toJson,
  fixed,
  signed,
  shortModel,
  underCell,
  statsLine,
  dangerLine,
  textTable,
  skippedAndErrorLines,
  summaryGroups,
  formatTable,
  mdCell,
  mdTable,
};

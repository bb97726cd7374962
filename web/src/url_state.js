// The calculator's state: a flat map of strings, kept in the URL hash (every result is a link)
// or in a custom element's attributes, and turned into the core's request JSON. An empty value
// means "the framework's default": the field is left out and the core's profile decides.
'use strict';
(function (ns) {
  const DEFAULTS = Object.freeze({
    model: 'meta-llama/Llama-3.1-8B', config: '', hf: '',
    framework: 'hf_trainer', fw_version: '', method: 'full', lora_rank: '16', lora_targets: 'all-linear', lora_saved: '', badam: '', prompt_encoder: '', tokens: '2',
    precision: '', optimizer: '', micro_batch: '', grad_accum: '', seq_len: '4096',
    ckpt: '', attention: '', loss: '', compile: '',
    gpu: 'H100-80GB', gpu_mem: '', gpus: '8', per_node: '8', gpu2: '', gpus2: '8', host_mem: '', train_tokens: '', pick: '', units: 'GiB',
  });
  const KEYS = Object.keys(DEFAULTS);

  /// Only the keys that differ from the defaults, so links stay short.
  function encode(state) {
    const params = new URLSearchParams();
    for (const key of KEYS) {
      if (state[key] !== undefined && state[key] !== DEFAULTS[key]) params.set(key, state[key]);
    }
    return params.toString();
  }

  /// Known keys only, as strings; anything else in the hash is ignored.
  function decode(text) {
    const params = new URLSearchParams(text.replace(/^#/, ''));
    const state = { ...DEFAULTS };
    for (const key of KEYS) {
      if (params.has(key)) state[key] = params.get(key);
    }
    return state;
  }

  /// A form value for the request: integers as numbers; anything else is passed as typed so
  /// that the core answers with a coded error at the field's pointer.
  function number(text) {
    const t = String(text).trim();
    return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(t) ? Number(t) : t;
  }

  const TRAINING_FIELDS = [
    ['precision', 'precision'], ['optimizer', 'optimizer'], ['ckpt', 'activation_checkpointing'],
    ['attention', 'attention'], ['loss', 'loss'],
  ];
  const NUMERIC_TRAINING = [['micro_batch', 'micro_batch'], ['grad_accum', 'grad_accum'], ['seq_len', 'seq_len']];
  const LORA_TARGETS = { 'all-linear': 'all-linear', attention: ['q', 'k', 'v', 'o'], qv: ['q', 'v'] };

  /// The request's JSON text. A pasted config is spliced in as the text the core already
  /// accepted (`configText`), so the core reports errors inside it at /model/config/...
  function requestText(state, configText, extra = {}) {
    const { training: chosen, ...rest } = extra;
    const training = { framework: state.framework, method: state.method };
    if (state.fw_version) training.framework_version = state.fw_version;
    if (state.method === 'lora' || state.method === 'qlora' || state.method === 'dora') {
      training.lora = { rank: number(state.lora_rank), targets: LORA_TARGETS[state.lora_targets] || state.lora_targets };
      if (state.lora_saved) training.lora.modules_to_save = state.lora_saved.split(',');
    }
    if (state.method === 'full' && state.badam) training.badam = { active_block: state.badam };
    if (state.method === 'p_tuning' && state.prompt_encoder) training.prompt_encoder = state.prompt_encoder;
    if (state.method === 'trainable_tokens') training.trainable_tokens = { count: number(state.tokens) };
    for (const [key, field] of TRAINING_FIELDS) if (state[key]) training[field] = state[key];
    for (const [key, field] of NUMERIC_TRAINING) if (state[key] !== '') training[field] = number(state[key]);
    if (state.compile) training.compile = state.compile === 'true';
    Object.assign(training, chosen);
    const gpu = { preset: state.gpu };
    if (state.gpu_mem !== '') gpu.memory_gib = number(state.gpu_mem);
    // A second kind of GPU makes a mixed cluster: the first kind's GPUs come first in rank order.
    const cluster = state.gpu2
      ? { gpu_mix: [{ gpu, count: number(state.gpus) }, { gpu: { preset: state.gpu2 }, count: number(state.gpus2) }],
        gpus_per_node: number(state.per_node) }
      : { gpu, gpus: number(state.gpus), gpus_per_node: number(state.per_node) };
    // The node's CPU memory, when set (else the GPU preset's reference node); the core decides host OOM.
    if (state.host_mem !== '' && Number(state.host_mem) > 0) cluster.host_memory_gib_per_node = number(state.host_mem);
    const request = {
      model: configText ? { config: '@CONFIG@' } : { preset: state.model },
      training,
      cluster,
      ...rest,
    };
    const text = JSON.stringify(request);
    return configText ? text.replace('"@CONFIG@"', () => configText) : text;
  }

  /// The estimate request for one search candidate: its layout and the training fields it chose.
  function candidateExtra(candidate) {
    const p = candidate.parallel;
    const t = candidate.training;
    return {
      parallel: { dp: p.dp, tp: p.tp, pp: p.pp, vpp: p.vpp, cp: p.cp, ep: p.ep, ...(p.etp && p.etp !== p.tp ? { etp: p.etp } : {}),
        sequence_parallel: p.sequence_parallel, sharding: p.sharding, schedule: p.schedule },
      training: { micro_batch: t.micro_batch, grad_accum: t.grad_accum,
        activation_checkpointing: t.activation_checkpointing, offload: t.offload },
    };
  }

  ns.urlState = { DEFAULTS, KEYS, encode, decode, requestText, candidateExtra, number };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});

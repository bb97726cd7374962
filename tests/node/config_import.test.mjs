// web/src/config_import.js: each framework's config file (keys re-typed from the projects' own
// examples, tests/node/fixtures/import/SOURCES.md) into the request, and every bad input as a coded
// error with the field's JSON Pointer and line. Needs no build (the CLI and page tests run the
// requests through the core).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { root } from './helpers.mjs';

const require = createRequire(import.meta.url);
const YAML = require('yaml');
const { importConfig, importFiles } = require('../../web/src/config_import.js');
const FIXTURES = `${root}tests/node/fixtures/import/`;
const PRESETS = readdirSync(`${root}presets/models`).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5).replace('__', '/'));

function fixture(...names) {
  const answer = importFiles(names.map((name) => ({ name, text: readFileSync(FIXTURES + name, 'utf8') })), { yaml: YAML, presets: PRESETS });
  assert.ok(answer.ok, JSON.stringify(answer.error));
  return answer.result;
}
const ignoredKeys = (r) => r.ignored.map((x) => x.key);
const mappedFrom = (r, to) => r.mapped.find((x) => x.to === to);
function fails(text, options = {}) {
  const answer = importConfig(text, { yaml: YAML, ...options });
  assert.equal(answer.ok, false, JSON.stringify(answer.result?.request));
  return answer.error;
}

test('Axolotl QLoRA: adapter, 4-bit base, LoRA shape, batch, packing, optimizer, dtype, checkpointing, attention', () => {
  const r = fixture('axolotl_qlora.yml');
  assert.equal(r.format, 'axolotl');
  assert.deepEqual(r.request.model, { preset: 'meta-llama/Meta-Llama-3-8B' });
  assert.deepEqual(r.request.training, {
    framework: 'axolotl', method: 'qlora', base_quant: 'nf4', lora: { rank: 32, dropout: 0.05, targets: 'all-linear' },
    seq_len: 4096, packed: true, micro_batch: 2, grad_accum: 4, optimizer: 'paged_adamw_32bit', precision: 'bf16',
    activation_checkpointing: 'full', attention: 'flash' });
  assert.deepEqual(ignoredKeys(r), ['/model_type', '/datasets', '/val_set_size', '/output_dir', '/pad_to_sequence_len', '/lora_alpha',
    '/wandb_project', '/num_epochs', '/lr_scheduler', '/learning_rate', '/tf32', '/special_tokens']);
  assert.equal(mappedFrom(r, '/training/lora/rank').line, 16);
  assert.equal(r.ignored.find((x) => x.key === '/lora_alpha').line, 17);
  assert.ok(r.mapped.some((x) => x.from === '/load_in_8bit' && x.to === null), 'load_in_8bit: false is read, not dropped');
  assert.ok(r.notes.some((n) => /framework axolotl/.test(n)), 'says that the axolotl profile supplies the rest');
  const old = importFiles([{ name: 'axolotl_qlora.yml', text: readFileSync(`${FIXTURES}axolotl_qlora.yml`, 'utf8') }],
    { yaml: YAML, presets: PRESETS, frameworks: ['hf_trainer', 'trl'] }).result;
  assert.equal(old.request.training.framework, 'hf_trainer', 'a core without the axolotl profile gets hf_trainer');
  assert.ok(old.notes.some((n) => /no axolotl profile/.test(n)));
});

test('Axolotl full fine-tune with Liger and FSDP: Liger FLCE, RMSNorm and SwiGLU, ZeRO-3 sharding, parameter offload', () => {
  const r = fixture('axolotl_fft_liger_fsdp.yaml');
  const t = r.request.training;
  assert.equal(t.method, 'full');
  assert.equal(t.loss, 'liger_flce');
  assert.equal(t.liger_kernels, true);
  assert.equal(t.offload, 'params_optimizer');
  assert.equal(t.optimizer_impl, 'fused');
  assert.deepEqual(r.request.parallel, { sharding: 'zero3' });
  assert.equal(r.request.model.preset, 'meta-llama/Llama-3.1-8B', 'Meta-Llama-3.1-8B is the renamed Llama-3.1-8B');
  assert.ok(r.ignored.find((x) => x.key === '/liger_rope').may_change_memory, 'Liger RoPE (no memory change) is listed');
});

test('Axolotl precision as resolve_dtype sets it: bf16 auto by default, fp16 turns auto off, bf16: false alone is fp32', () => {
  const precision = (text) => importConfig(`base_model: x/y\nmicro_batch_size: 1\n${text}`, { yaml: YAML }).result.request.training.precision;
  assert.equal(precision(''), 'bf16');
  assert.equal(precision('fp16: true\n'), 'fp16');
  assert.equal(precision('bf16: false\nload_in_8bit: true\nadapter: lora\n'), 'fp16');
  assert.equal(precision('bf16: false\n'), 'fp32');
});

test('Axolotl examples (fft-8b, lora-1b): attn_implementation, paged 8-bit optimizer, packing, LoRA modules', () => {
  const full = fixture('axolotl_fft_8b.yaml');
  assert.deepEqual(full.request.training, { framework: 'axolotl', method: 'full', seq_len: 8192, packed: true, micro_batch: 1,
    grad_accum: 8, optimizer: 'paged_adamw_8bit', precision: 'bf16', activation_checkpointing: 'full', attention: 'flash' });
  assert.ok(ignoredKeys(full).includes('/gradient_checkpointing_kwargs'), 'use_reentrant is listed, not modelled');
  const lora = fixture('axolotl_lora_1b.yml');
  assert.deepEqual(lora.request.training.lora, { rank: 16, dropout: 0.05, targets: ['gate', 'down', 'up', 'q', 'v', 'k', 'o'] });
  assert.equal(lora.request.training.optimizer, 'adamw_8bit');
  assert.equal(lora.request.model.preset, 'meta-llama/Llama-3.2-1B-Instruct');
  assert.ok(ignoredKeys(lora).includes('/eval_sample_packing'));
});

test('Axolotl GaLore / APOLLO through optim_args; APOLLO rank 1 with a tensor scale is APOLLO-Mini', () => {
  const t = (text) => importConfig(`base_model: x/y\n${text}`, { yaml: YAML }).result.request.training;
  assert.deepEqual(t('optimizer: galore_adamw\noptim_args: rank=64, update_proj_gap=100\n').projection, { rank: 64, update_gap: 100 });
  const mini = t('optimizer: apollo_adamw_layerwise\noptim_args: {rank: 1, scale_type: tensor}\n');
  assert.equal(mini.optimizer, 'apollo_mini');
  assert.equal(mini.optimizer_in_backward, true);
  assert.equal(mini.projection?.rank, undefined);
  const bad = fails('base_model: x/y\noptimizer: galore_adamw\noptim_args: rank=0\n');
  assert.equal(bad.code, 'invalid_value');
  assert.equal(bad.path, '/optim_args');
});

test('LLaMA-Factory LoRA with the ZeRO-3 file it names: DeepSpeed backend and sharding; its "auto" values listed', () => {
  const r = fixture('llamafactory_lora_sft_ds3.yaml', 'ds_z3_config.json');
  assert.equal(r.format, 'llamafactory');
  assert.equal(r.file, 'llamafactory_lora_sft_ds3.yaml');
  assert.deepEqual(r.request.training, { framework: 'llamafactory', method: 'lora', lora: { rank: 8, targets: 'all-linear' },
    seq_len: 2048, micro_batch: 1, grad_accum: 2, precision: 'amp_bf16', activation_checkpointing: 'full' });
  assert.deepEqual(r.request.parallel, { backend: 'deepspeed', sharding: 'zero3' });
  assert.match(mappedFrom(r, '/training/precision').note, /fp32 master in DeepSpeed's optimizer/);
  assert.equal(mappedFrom(r, '/training/precision').from, '/bf16');
  assert.equal(mappedFrom(r, '/parallel/sharding').from, 'ds_z3_config.json:/zero_optimization/stage');
  assert.equal(mappedFrom(r, '/parallel/sharding').line, 11);
  assert.ok(ignoredKeys(r).includes('ds_z3_config.json:/train_micro_batch_size_per_gpu'), '"auto" is listed, not dropped');
  assert.equal(r.request.model.preset, 'meta-llama/Meta-Llama-3-8B');
});

test('LLaMA-Factory LoRA without the DeepSpeed file: the backend is set and the missing file is said', () => {
  const r = fixture('llamafactory_lora_sft_ds3.yaml');
  assert.equal(r.request.parallel.backend, 'deepspeed');
  assert.equal(r.request.parallel.sharding, undefined);
  assert.ok(r.notes.some((n) => /ds_z3_config\.json: give that file too/.test(n)));
});

test('LLaMA-Factory pissa_init is LoRA initialised by PiSSA', () => {
  const text = readFileSync(`${FIXTURES}llamafactory_lora_sft_ds3.yaml`, 'utf8').replace(/^deepspeed:.*$/m, '');
  const r = importConfig(`${text}\npissa_init: true\n`, { yaml: YAML, presets: PRESETS });
  assert.ok(r.ok, JSON.stringify(r.error));
  assert.equal(r.result.request.training.lora.init, 'pissa');
  assert.equal(mappedFrom(r.result, '/training/lora/init').from, '/pissa_init');
  const plain = importConfig(text, { yaml: YAML, presets: PRESETS });
  assert.equal(plain.result.request.training.lora.init, undefined);
});

test('LLaMA-Factory full fine-tune: fp32 trainable weights under bf16 autocast and gradient checkpointing by default', () => {
  const t = fixture('llamafactory_full_sft.yaml').request.training;
  assert.equal(t.method, 'full');
  assert.equal(t.precision, 'amp_bf16');
  assert.equal(t.activation_checkpointing, 'full');
  const pure = importConfig('stage: sft\nfinetuning_type: full\npure_bf16: true\ndisable_gradient_checkpointing: true\n', { yaml: YAML });
  assert.equal(pure.result.request.training.precision, 'bf16');
  assert.equal(pure.result.request.training.activation_checkpointing, 'none');
  const badam = importConfig('stage: sft\nfinetuning_type: full\nuse_badam: true\nbadam_mode: layer\nbadam_start_block: 8\nbf16: true\n', { yaml: YAML }).result;
  assert.equal(badam.request.training.precision, 'bf16', 'BAdam keeps the 16-bit weights');
  assert.deepEqual(badam.request.training.badam, { active_block: 'first' }, 'the run\'s peak, whatever the start block');
  const ratio = importConfig('stage: sft\nfinetuning_type: full\nuse_badam: true\nbadam_mode: ratio\n', { yaml: YAML }).result;
  assert.equal(ratio.request.training.badam, undefined);
  assert.ok(ratio.notes.some((n) => /badam_mode ratio: not modelled/.test(n)));
});

test('LLaMA-Factory GaLore, APOLLO and Adam-mini examples: optimizer, rank, layer-wise step, pure bf16', () => {
  const galore = fixture('llamafactory_galore_full_sft.yaml').request.training;
  assert.deepEqual([galore.optimizer, galore.projection, galore.optimizer_in_backward, galore.precision],
    ['galore_adamw', { rank: 128 }, true, 'bf16']);
  const apollo = fixture('llamafactory_apollo_full_sft.yaml');
  assert.deepEqual([apollo.request.training.optimizer, apollo.request.training.projection], ['apollo_adamw', { rank: 128 }]);
  assert.ok(ignoredKeys(apollo).includes('/apollo_scale'), 'the scale (no memory effect) is listed');
  const mini = fixture('llamafactory_adam_mini_full_sft.yaml');
  assert.deepEqual([mini.request.training.optimizer, mini.request.training.precision], ['adam_mini', 'amp_bf16']);
  assert.equal(mini.request.model.preset, 'Qwen/Qwen2-1.5B-Instruct');
  const rankDefault = importConfig('stage: sft\nfinetuning_type: full\nuse_galore: true\n', { yaml: YAML }).result;
  assert.deepEqual(rankDefault.request.training.projection, { rank: 16 });
  assert.match(rankDefault.mapped.find((x) => x.to === '/training/projection/rank').note, /defaults to 16/);
  const apolloMini = importConfig('stage: sft\nfinetuning_type: full\nuse_apollo: true\napollo_rank: 1\napollo_scale_type: tensor\n', { yaml: YAML });
  assert.equal(apolloMini.result.request.training.optimizer, 'apollo_mini');
});

test('LLaMA-Factory 4-bit LoRA is QLoRA; 8-bit is LoRA over an int8 base', () => {
  const q4 = importConfig('stage: sft\nfinetuning_type: lora\nquantization_bit: 4\nlora_target: q_proj,v_proj\n', { yaml: YAML }).result.request.training;
  assert.equal(q4.method, 'qlora');
  assert.equal(q4.base_quant, 'nf4');
  assert.deepEqual(q4.lora.targets, ['q', 'v']);
  const q8 = importConfig('stage: sft\nfinetuning_type: lora\nquantization_bit: 8\n', { yaml: YAML }).result.request.training;
  assert.equal(q8.method, 'lora');
  assert.equal(q8.base_quant, 'int8');
});

test('torchtune QLoRA recipe: the builder, LoRA modules, chunked loss, fused AdamW, checkpointing; the model from the checkpoint directory', () => {
  const r = fixture('torchtune_8b_qlora_single_device.yaml');
  assert.equal(r.format, 'torchtune');
  assert.deepEqual(r.request.training, { framework: 'torchtune', method: 'qlora',
    lora: { rank: 8, dropout: 0, targets: ['q', 'v', 'k', 'o', 'gate', 'up', 'down'] }, micro_batch: 2, grad_accum: 16,
    optimizer: 'adamw', optimizer_impl: 'fused', loss: 'chunked', activation_checkpointing: 'full', compile: false, precision: 'bf16' });
  assert.equal(r.request.model.preset, 'meta-llama/Llama-3.1-8B');
  assert.ok(r.notes.some((n) => /max_seq_len/.test(n)), 'max_seq_len null: says seq_len is not known');
  assert.ok(ignoredKeys(r).includes('/model/lora_alpha'));
});

test('DeepSpeed JSON with "auto" values: HF Trainer on the DeepSpeed engine, ZeRO-3 with parameter offload', () => {
  const r = fixture('ds_z3_offload_config.json');
  assert.equal(r.format, 'deepspeed');
  assert.deepEqual(r.request, { training: { framework: 'hf_trainer', offload: 'params_optimizer' }, parallel: { backend: 'deepspeed', sharding: 'zero3' } });
  assert.ok(ignoredKeys(r).includes('/bf16'), '"auto" precision is listed');
  assert.equal(r.ignored.find((x) => x.key === '/zero_optimization/overlap_comm').line, 23);
});

test('DeepSpeed JSON without "auto": the DeepSpeed engine itself, its numbers read', () => {
  const text = JSON.stringify({ train_micro_batch_size_per_gpu: 4, gradient_accumulation_steps: 8, bf16: { enabled: true },
    zero_optimization: { stage: 2, offload_optimizer: { device: 'cpu' } } }, null, 2);
  const r = importConfig(text, { yaml: YAML }).result;
  assert.deepEqual(r.request, { training: { framework: 'deepspeed', offload: 'optimizer', micro_batch: 4, grad_accum: 8, precision: 'amp_bf16' },
    parallel: { sharding: 'zero2' } });
});

test('accelerate FSDP and DeepSpeed configs: GPUs, sharding, offload', () => {
  const fsdp = fixture('accelerate_fsdp.yaml');
  assert.equal(fsdp.format, 'accelerate');
  assert.deepEqual(fsdp.request, { training: { framework: 'hf_trainer', precision: 'bf16' }, cluster: { gpus: 2 }, parallel: { sharding: 'zero3' } });
  const ds = fixture('accelerate_deepspeed.yaml');
  assert.deepEqual(ds.request, { training: { framework: 'hf_trainer', offload: 'optimizer' }, cluster: { gpus: 2 },
    parallel: { backend: 'deepspeed', sharding: 'zero2' } });
  assert.deepEqual(ignoredKeys(ds), ['/deepspeed_config/zero3_init_flag']);
});

test('accelerate dynamo_config: a backend compiles; regional compilation leaves the loss eager (compile_scope regions)', () => {
  const yaml = (extra) => `distributed_type: FSDP\nnum_processes: 8\ndynamo_config:\n  dynamo_backend: INDUCTOR\n${extra}`;
  const regional = importConfig(yaml('  dynamo_use_regional_compilation: true\n'), { yaml: YAML }).result;
  assert.equal(regional.format, 'accelerate');
  assert.equal(regional.request.training.compile, true);
  assert.equal(regional.request.training.compile_scope, 'regions');
  const whole = importConfig(yaml(''), { yaml: YAML }).result;
  assert.equal(whole.request.training.compile, true);
  assert.equal(whole.request.training.compile_scope, undefined);
  const off = importConfig('distributed_type: NO\ndynamo_config:\n  dynamo_backend: NO\n  dynamo_use_regional_compilation: true\n', { yaml: YAML }).result;
  assert.equal(off.request.training.compile, false);
  assert.equal(off.request.training.compile_scope, undefined);
  const quoted = importConfig('distributed_type: NO\ndynamo_config:\n  dynamo_backend: \'NO\'\n', { yaml: YAML }).result;
  assert.equal(quoted.request.training.compile, false);
  const bad = importConfig('distributed_type: FSDP\ndynamo_config:\n  dynamo_backend: 3\n', { yaml: YAML });
  assert.equal(bad.ok, false);
  assert.equal(bad.error.code, 'invalid_type');
  assert.equal(bad.error.path, '/dynamo_config/dynamo_backend');
});

test('TRL SFTConfig + ModelConfig (alignment-handbook QLoRA recipe): QLoRA over a bf16 model, hf_trainer unless the core has trl', () => {
  const r = fixture('trl_sft_qlora.yaml');
  assert.equal(r.format, 'hf_args');
  assert.deepEqual(r.request.training, { framework: 'hf_trainer', method: 'qlora', base_quant: 'nf4',
    lora: { rank: 16, dropout: 0.05, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] }, micro_batch: 4, grad_accum: 2,
    seq_len: 2048, precision: 'bf16', activation_checkpointing: 'full', attention: 'flash' });
  assert.ok(r.notes.some((n) => /no trl profile/.test(n)));
  const text = readFileSync(`${FIXTURES}trl_sft_qlora.yaml`, 'utf8');
  const withTrl = importConfig(text, { yaml: YAML, frameworks: ['trl'] }).result;
  assert.equal(withTrl.request.training.framework, 'trl');
});

test('HF TrainingArguments JSON: full fine-tune, batch, checkpointing, bf16 weights', () => {
  const r = fixture('training_args_full.json');
  assert.equal(r.format, 'hf_args');
  assert.deepEqual(r.request.training, { framework: 'hf_trainer', method: 'full', micro_batch: 32, grad_accum: 2, precision: 'bf16',
    activation_checkpointing: 'full' });
  const fp32 = importConfig('{"per_device_train_batch_size": 2, "bf16": true, "torch_dtype": "float32", "output_dir": "o"}', { yaml: YAML });
  assert.equal(fp32.result.request.training.precision, 'amp_bf16');
});

test('Megatron-LM launch script: shell variables substituted, layout, batch, fp8, distributed optimizer, a llama config', () => {
  const r = fixture('megatron_llama3_8b_fp8.sh');
  assert.equal(r.format, 'megatron');
  assert.deepEqual(r.request.training, { framework: 'megatron', micro_batch: 1, grad_accum: 16, seq_len: 8192, precision: 'fp8', attention: 'flash' });
  assert.deepEqual(r.request.cluster, { gpus: 8, gpus_per_node: 8 });
  assert.deepEqual(r.request.parallel, { tp: 1, cp: 1, sharding: 'zero1' });
  assert.deepEqual(r.request.model.config, { model_type: 'llama', num_hidden_layers: 32, hidden_size: 4096, num_attention_heads: 32,
    intermediate_size: 14336, vocab_size: 128256, tie_word_embeddings: false, num_key_value_heads: 8, head_dim: 128, max_position_embeddings: 8192 });
  assert.ok(r.notes.some((n) => /sequence-parallel/.test(n)), '--sequence-parallel at tp 1 is said to be off');
  assert.equal(mappedFrom(r, '/training/micro_batch').line, 37);
  assert.ok(!ignoredKeys(r).includes('/pipeline-model-parallel-size'), 'a commented-out flag is not read');
  assert.ok(r.ignored.find((x) => x.key === '/cross-entropy-loss-fusion').may_change_memory);
});

test('the format is forced with options.format, and detected from a DeepSpeed file name', () => {
  const text = '{"gradient_accumulation_steps": 4}';
  assert.equal(importConfig(text, { yaml: YAML, fileName: 'ds_config.json' }).result.format, 'deepspeed');
  assert.equal(importConfig(text, { yaml: YAML, format: 'hf_args' }).result.format, 'hf_args');
});

// ---- bad input: a code, the field's pointer and line; never an exception --------------------

test('bad input: YAML syntax, duplicate key, JSON syntax: invalid_yaml with the line', () => {
  let e = fails('base_model: x\nadapter: [lora\nlora_r: 8\n');
  assert.equal(e.code, 'invalid_yaml');
  assert.equal(e.line, 3);
  e = fails('base_model: x\nmicro_batch_size: 1\nmicro_batch_size: 2\n');
  assert.equal(e.code, 'invalid_yaml');
  assert.equal(e.line, 3);
  e = fails('{\n  "zero_optimization": {"stage": 3,\n}\n');
  assert.equal(e.code, 'invalid_yaml');
  assert.ok(e.line >= 2);
});

test('bad input: empty, a list, a scalar, an unknown format, too large', () => {
  assert.equal(fails('').code, 'invalid_value');
  assert.equal(fails('   \n').code, 'invalid_value');
  assert.equal(fails('- a\n- b\n').code, 'invalid_type');
  assert.equal(fails('just text').code, 'invalid_type');
  assert.equal(fails('foo: 1\nbar: 2\n').code, 'unknown_format');
  assert.equal(fails(`a: ${'x'.repeat(1 << 20)}`).code, 'input_too_large');
  assert.equal(fails('foo: 1', { format: 'nope' }).code, 'invalid_value');
});

test('bad input: an alias bomb is refused, not expanded', () => {
  const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 0; i < 8; i += 1) bomb.push(`${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9).fill(`*${String.fromCharCode(97 + i)}`).join(',')}]`);
  bomb.push('base_model: x');
  const e = fails(bomb.join('\n'));
  assert.equal(e.code, 'invalid_yaml');
});

test('bad input: wrong values at their pointer and line', () => {
  let e = fails('base_model: x\nadapter: lora\nmicro_batch_size: -1\n');
  assert.deepEqual([e.code, e.path, e.line], ['invalid_value', '/micro_batch_size', 3]);
  e = fails('base_model: x\nsample_packing: maybe\nsequence_len: 2048\n');
  assert.deepEqual([e.code, e.path, e.line], ['invalid_type', '/sample_packing', 2]);
  e = fails('base_model: x\nadapter: prefix\nsequence_len: 2048\n');
  assert.deepEqual([e.code, e.path, e.line], ['invalid_value', '/adapter', 2]);
  e = fails('{\n  "zero_optimization": {\n    "stage": 5\n  },\n  "train_batch_size": 8\n}');
  assert.deepEqual([e.code, e.path, e.line], ['invalid_value', '/zero_optimization/stage', 3]);
  e = fails('stage: sft\nfinetuning_type: prefix\ncutoff_len: 1024\n');
  assert.deepEqual([e.code, e.path], ['invalid_value', '/finetuning_type']);
  e = fails('dtype: fp16\nbatch_size: 2\ncheckpointer:\n  checkpoint_dir: /tmp/x\nenable_activation_checkpointing: true\n');
  assert.deepEqual([e.code, e.path, e.line], ['invalid_value', '/dtype', 1]);
  e = fails('distributed_type: MULTI_GPU\nnum_processes: 6\nnum_machines: 4\n');
  assert.deepEqual([e.code, e.path, e.line], ['invalid_value', '/num_machines', 3]);
  e = fails('torchrun pretrain_gpt.py \\\n  --num-layers 32 \\\n  --micro-batch-size two\n');
  assert.deepEqual([e.code, e.path, e.line], ['invalid_value', '/micro-batch-size', 3]);
});

test('bad input: a broken DeepSpeed file named by the config is reported in that file', () => {
  const answer = importFiles([{ name: 'lf.yaml', text: 'stage: sft\nfinetuning_type: lora\ndeepspeed: ds.json\n' },
    { name: 'ds.json', text: '{"zero_optimization": {"stage": 3,,}}' }], { yaml: YAML });
  assert.equal(answer.ok, false);
  assert.equal(answer.error.code, 'invalid_yaml');
  assert.match(answer.error.path, /^ds\.json:/);
});

test('YAML 1.1 booleans (PyYAML reads yes and on as true); an unresolved shell variable is noted, not an error', () => {
  const r = importConfig('base_model: x/y\nadapter: lora\nload_in_8bit: yes\nsample_packing: on\nmicro_batch_size: 2\n', { yaml: YAML }).result;
  assert.equal(r.request.training.base_quant, 'int8');
  assert.equal(r.request.training.packed, true);
  const m = importConfig('torchrun pretrain_gpt.py --micro-batch-size 2 --pipeline-model-parallel-size $((PP * 2))\n', { yaml: YAML }).result;
  assert.equal(m.request.parallel, undefined);
  assert.ok(m.ignored.some((x) => x.key === '/pipeline-model-parallel-size'));
  assert.ok(m.notes.some((n) => /expression memfit does not evaluate/.test(n)));
});

test('bad input: 3,000 mutations of the example configs (values swapped for wrong types) never throw', () => {
  const values = [null, true, false, 0, -1, 2.5, 'x', 'auto', '$X', [], [1, 'a'], {}, { a: 1 }, { _component_: 5 }, { device: 'cpu' }];
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const mutate = (o) => {
    if (o && typeof o === 'object' && !Array.isArray(o)) {
      for (const k of Object.keys(o)) o[k] = random() < 0.3 ? structuredClone(values[Math.floor(random() * values.length)]) : mutate(o[k]);
    }
    return o;
  };
  const formats = [undefined, 'axolotl', 'llamafactory', 'torchtune', 'deepspeed', 'accelerate', 'hf_args', 'peft'];
  const bases = readdirSync(FIXTURES).filter((f) => /\.(ya?ml|json)$/.test(f)).map((f) => YAML.parse(readFileSync(FIXTURES + f, 'utf8'), { version: '1.1' }));
  let errors = 0;
  for (let i = 0; i < 3000; i += 1) {
    const text = JSON.stringify(mutate(structuredClone(bases[i % bases.length])));
    const answer = importConfig(text, { yaml: YAML, format: formats[i % formats.length], presets: PRESETS });
    if (answer.ok) assert.ok(answer.result.request.training, text);
    else {
      errors += 1;
      assert.match(answer.error.code, /^(invalid_value|invalid_type|invalid_yaml|unknown_format)$/, text);
      assert.equal(typeof answer.error.path, 'string');
    }
  }
  assert.ok(errors > 0 && errors < 3000, `${errors} errors`);
});

test('PEFT adapter_config.json: peft_type is the method, r the rank, each method\'s own shape keys; the adapter\'s scope keys are read or noted', () => {
  const lora = fixture('peft_lora_rank32.json');
  assert.equal(lora.format, 'peft');
  assert.deepEqual(lora.request.training, { framework: 'hf_trainer', method: 'lora', lora: { rank: 32, dropout: 0 } });
  assert.ok(lora.notes.some((n) => /target_modules is null/.test(n)), 'null targets: the method\'s default targets, said');
  assert.ok(lora.notes.some((n) => /holds the adapter only/.test(n)));
  assert.deepEqual(ignoredKeys(lora), ['/lora_alpha', '/task_type'], 'every other key is read (null scope keys, use_rslora, init)');
  assert.deepEqual(fixture('peft_oft_rank32.json').request.training.lora, { rank: 32, targets: ['q', 'v'] }, 'oft_block_size 0: r blocks');
  assert.deepEqual(fixture('peft_boft.json').request.training.lora, { block_size: 4 });
  const fourier = fixture('peft_fourierft_5000.json').request.training;
  assert.equal(fourier.method, 'fourierft');
  assert.deepEqual(fourier.lora, { n_frequency: 5000, targets: ['v', 'q'] });
  const glora = fixture('peft_glora_vector.json');
  assert.deepEqual(glora.request.training.glora, { a_b: 'vector' });
  assert.ok(glora.notes.some((n) => /config_C: GLoRA's bias paths are not counted/.test(n)));
  const ptuning = fixture('peft_ptuning.json').request.training;
  assert.deepEqual([ptuning.method, ptuning.virtual_tokens, ptuning.prompt_encoder, ptuning.lora], ['p_tuning', 20, 'mlp', undefined]);
});

test('PEFT adapter_config.json: the shared-bank adapters read their shape keys (LiLy stride_A / num_B, FRoD sparse_rate / offload)', () => {
  const lily = fixture('peft_lily_rank896.json');
  assert.equal(lily.request.training.method, 'lily');
  assert.deepEqual(lily.request.training.lily, { stride_a: 14, num_b: 2 });
  assert.deepEqual(lily.request.training.lora, { rank: 896, targets: ['q', 'v'] });
  assert.ok(ignoredKeys(lily).includes('/scaling'));  // a multiplier: no memory
  const frod = fixture('peft_frod_sparse002.json').request.training;
  assert.equal(frod.method, 'frod');
  assert.deepEqual(frod.frod, { sparse_rate: 0.02, offload_base_weight: true });
  assert.equal(frod.lora?.rank, undefined);
});

test('PEFT adapter_config.json: DoRA, PiSSA, regular-expression targets, MiSS mini, a narrower scope noted, unmodelled methods refused', () => {
  const read = (o) => importConfig(JSON.stringify({ task_type: 'CAUSAL_LM', ...o }), { yaml: YAML, presets: PRESETS });
  const dora = read({ peft_type: 'LORA', r: 16, use_dora: true, init_lora_weights: 'pissa_niter_16', target_modules: '.*\\.(q_proj|v_proj|down_proj)$',
    base_model_name_or_path: 'meta-llama/Llama-3.2-3B' }).result;
  assert.equal(dora.request.training.method, 'dora');
  assert.deepEqual(dora.request.training.lora, { rank: 16, init: 'pissa', targets: ['q', 'v', 'down'] });
  assert.deepEqual(dora.request.model, { preset: 'meta-llama/Llama-3.2-3B' });
  assert.ok(dora.notes.some((n) => /regular expression/.test(n)));
  const mini = read({ peft_type: 'MISS', r: 64, init_weights: 'mini', mini_r: 4 }).result.request.training;
  assert.deepEqual(mini.miss, { init: 'mini', mini_r: 4 });
  const narrow = read({ peft_type: 'LORA', r: 8, target_modules: ['q_proj'], layers_to_transform: [0, 1], rank_pattern: { q_proj: 4 } }).result;
  assert.ok(narrow.notes.some((n) => /layers_to_transform adapts only some layers/.test(n)));
  assert.ok(narrow.notes.some((n) => /rank_pattern/.test(n)));
  assert.ok(ignoredKeys(narrow).includes('/layers_to_transform'), 'a narrower scope is listed as ignored, not dropped');
  const hra = read({ peft_type: 'HRA', r: 8 });
  assert.equal(hra.ok, false);
  assert.deepEqual([hra.error.code, hra.error.path], ['invalid_value', '/peft_type']);
  const butterfly = read({ peft_type: 'BOFT', boft_block_size: 4, boft_n_butterfly_factor: 2 });
  assert.deepEqual([butterfly.error.code, butterfly.error.path], ['invalid_value', '/boft_n_butterfly_factor']);
  const regexNone = read({ peft_type: 'LORA', r: 8, target_modules: '.*mlp\\.fc[12]$' });
  assert.deepEqual([regexNone.error.code, regexNone.error.path], ['invalid_value', '/target_modules']);
});

test('PEFT adapter_config.json of the output-side adapters: RoAd\'s variant, DEFT\'s para and r, trainable tokens\' rows, OSF\'s frozen rank refused', () => {
  const read = (o) => importConfig(JSON.stringify({ task_type: 'CAUSAL_LM', ...o }), { yaml: YAML, presets: PRESETS });
  assert.deepEqual(read({ peft_type: 'ROAD', variant: 'road_2', group_size: 64, target_modules: ['q_proj', 'v_proj'] }).result.request.training,
    { framework: 'hf_trainer', method: 'road', road: { variant: 'road_2' }, lora: { targets: ['q', 'v'] } });
  const deft = read({ peft_type: 'DEFT', r: 32, para: true, decomposition_method: 'relu' }).result.request.training;
  assert.deepEqual([deft.deft, deft.lora.rank], [{ para: true }, 32]);
  const tokens = read({ peft_type: 'TRAINABLE_TOKENS', token_indices: [128000, 128001], target_modules: ['embed_tokens'] }).result;
  assert.deepEqual(tokens.request.training.trainable_tokens, { count: 2 });
  assert.ok(!tokens.notes.some((n) => /not modelled/.test(n)), 'embed_tokens is its own target, not a LoRA target');
  const osf = read({ peft_type: 'OSF', effective_rank: 16 });
  assert.deepEqual([osf.error.code, osf.error.path], ['invalid_value', '/effective_rank']);
  assert.equal(read({ peft_type: 'PVERA', r: 64 }).result.request.training.lora.rank, 64);
});

test('PEFT adapter_config.json of AdaLoRA (init_r is the trained rank), PSOFT and RandLoRA (r); their shape-neutral keys read', () => {
  const ada = fixture('peft_adalora_rank32.json');
  assert.equal(ada.request.training.method, 'adalora');
  assert.equal(ada.request.training.lora.rank, 64);  // init_r, not r 8 or target_r 32
  for (const k of ['/r', '/target_r', '/tinit', '/tfinal', '/total_step', '/orth_reg_weight']) assert.ok(!ignoredKeys(ada).includes(k), k);
  const psoft = fixture('peft_psoft_fast.json');
  assert.deepEqual([psoft.request.training.method, psoft.request.training.lora.rank], ['psoft', 256]);
  for (const k of ['/psoft_svd', '/use_cayley_neumann', '/psoft_alpha']) assert.ok(!ignoredKeys(psoft).includes(k), k);
  const rand = fixture('peft_randlora.json');
  assert.deepEqual([rand.request.training.method, rand.request.training.lora.rank], ['randlora', 32]);
  assert.ok(!ignoredKeys(rand).includes('/randlora_alpha'));
  const read = (o) => importConfig(JSON.stringify({ task_type: 'CAUSAL_LM', ...o }), { yaml: YAML, presets: PRESETS });
  const unorth = read({ peft_type: 'PSOFT', r: 64, psoft_orth: false }).result;
  assert.ok(ignoredKeys(unorth).includes('/psoft_orth'));
  assert.ok(unorth.notes.some((n) => /psoft_orth false/.test(n)));
});

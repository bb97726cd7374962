// `memfit import`: a training framework's config file as memfit's request (web/src/config_import.js,
// shared with the page). The request goes to stdout; what was read, what was ignored and the notes
// go to stderr (or all of it to stdout as JSON with --json).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');
const { importFiles } = require('../web/src/config_import.js');

const OPTIONS_WITH_VALUE = ['--format', '--model', '--gpu', '--gpus'];

/// {files, format, model, gpu, gpus, json} from the arguments, or {error}.
function parseArgs(args) {
  const out = { files: [], json: false };
  for (let i = 0; i < args.length; i += 1) {
    const a = args[i];
    if (a === '--json') out.json = true;
    else if (OPTIONS_WITH_VALUE.includes(a)) {
      if (i + 1 >= args.length) return { error: `${a} takes a value` };
      out[a.slice(2)] = args[++i];
    } else if (a.startsWith('--')) return { error: `unknown option ${a}` };
    else out.files.push(a);
  }
  if (!out.files.length) return { error: 'import takes a config file (and the files it names, e.g. its DeepSpeed JSON)' };
  if (out.gpus !== undefined && !/^[1-9]\d*$/.test(out.gpus)) return { error: `--gpus takes a whole number ≥ 1, got ${out.gpus}` };
  return out;
}

/// A file the config names (e.g. `deepspeed: examples/deepspeed/ds_z3_config.json`), looked for
/// as given, then beside the config, then by its name beside the config.
function fileReader(configPath) {
  return (ref) => {
    const dir = path.dirname(configPath);
    for (const p of [ref, path.join(dir, ref), path.join(dir, path.basename(ref))]) {
      if (fs.existsSync(p) && fs.statSync(p).isFile()) return fs.readFileSync(p, 'utf8');
    }
    return null;
  };
}

/// Whether the core knows a framework id (a framework it lacks is an error at /training/framework).
function hasFramework(M, id) {
  const probe = { model: { preset: 'openai-community/gpt2' }, training: { framework: id }, cluster: { gpu: { preset: 'H100-80GB' } },
    options: { timeline: false, max_micro_batch: false } };
  const envelope = JSON.parse(M.estimate(JSON.stringify(probe)));
  return envelope.ok || envelope.error.path !== '/training/framework';
}

const presetIds = (M) => JSON.parse(M.presets()).result.models.map((p) => p.id);

/// --model (a preset id or a config.json path), --gpu and --gpus into the request.
function applyOverrides(request, opts, M) {
  if (opts.model) {
    if (fs.existsSync(opts.model) && fs.statSync(opts.model).isFile()) {
      try {
        request.model = { config: JSON.parse(fs.readFileSync(opts.model, 'utf8')) };
      } catch (e) {
        return { code: 'invalid_json', message: `--model ${opts.model}: ${e.message}`, path: '/model/config' };
      }
    } else if (presetIds(M).includes(opts.model)) request.model = { preset: opts.model };
    else return { code: 'unknown_preset', message: `--model: no such file or model preset '${opts.model}'`, path: '/model/preset' };
  }
  if (opts.gpu) request.cluster = { ...request.cluster, gpu: { preset: opts.gpu } };
  if (opts.gpus) request.cluster = { ...request.cluster, gpus: Number(opts.gpus) };
  return null;
}

function describe(result, request) {
  const at = (x) => (x.line ? ` (line ${x.line})` : '');
  const lines = [`memfit import: ${result.format_name} (${result.file})`];
  for (const x of result.mapped) {
    if (x.to) lines.push(`  read     ${x.from || '(the format)'}${at(x)} -> ${x.to} = ${JSON.stringify(x.value)}${x.note ? `  [${x.note}]` : ''}`);
  }
  for (const x of result.mapped) if (!x.to) lines.push(`  read     ${x.from}${at(x)} = ${JSON.stringify(x.value)}: no field to set`);
  const scalar = (v) => (v === null || typeof v !== 'object' ? ` = ${JSON.stringify(v)}` : '');
  for (const x of result.ignored) lines.push(`  ignored  ${x.key}${at(x)}${scalar(x.value)}${x.may_change_memory ? '  (may change memory; not modelled)' : ''}`);
  for (const n of result.notes) lines.push(`  note     ${n}`);
  const missing = [!request.model && 'model (--model <preset | config.json>)', !request.cluster?.gpu && 'cluster.gpu (--gpu <preset>)'].filter(Boolean);
  if (missing.length) lines.push(`  missing  ${missing.join(', ')}: add them before \`memfit estimate\``);
  return `${lines.join('\n')}\n`;
}

/// Runs the command; `fail(code, message, path)` reports a usage error (exit 2).
async function runImport(args, loadModule, fail) {
  const opts = parseArgs(args);
  if (opts.error) return fail(opts.error);
  const files = [];
  for (const f of opts.files) {
    if (!fs.existsSync(f) || !fs.statSync(f).isFile()) return fail(`import: no such file '${f}'`);
    files.push({ name: f, text: fs.readFileSync(f, 'utf8') });
  }
  const M = await loadModule();
  const presets = presetIds(M);
  const frameworks = ['trl', 'axolotl', 'llamafactory'].filter((id) => hasFramework(M, id));
  const answer = importFiles(files, { yaml: YAML, format: opts.format, presets, frameworks, readFile: fileReader(files[0].name) });
  if (!answer.ok) {
    process.stdout.write(`${JSON.stringify({ ok: false, schema_version: 1, error: answer.error })}\n`);
    process.exitCode = 2;
    return;
  }
  const { result } = answer;
  const request = result.request;
  const bad = applyOverrides(request, opts, M);
  if (bad) return fail(bad.message, bad.code, bad.path);
  if (opts.json) process.stdout.write(`${JSON.stringify({ ...result, request }, null, 2)}\n`);
  else {
    process.stderr.write(describe(result, request));
    process.stdout.write(`${JSON.stringify(request, null, 2)}\n`);
  }
}

module.exports = { runImport };

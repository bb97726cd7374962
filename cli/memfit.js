#!/usr/bin/env node
// memfit command line: the same WASM module the page runs, driven from Node.
//   memfit params <config.json | preset id> [--tensors]
//   memfit estimate <request.json>
//   memfit search <request.json> [--top N]
//   memfit launch <request.json>
//   memfit validate <cases.csv | dir>... [--configs DIR[,DIR...]] [--json | --markdown]
//                   [--freeze FILE [--force | --add] | --blind FILE] [--blind-dir DIR]
//   memfit import <config file>... [--format F] [--model ID | config.json] [--gpu ID] [--gpus N] [--json]
//   memfit presets
//   memfit version
// Exit 0 on success; on bad input exit 2 with the error envelope on stdout.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const validation = require('./validate.js');
const blind = require('./blind.js');
const reports = require('./validation_report.js');
const { runImport } = require('./import.js');

// A reader that stops early (`memfit search r.json | head`) closes the pipe: end quietly instead
// of an uncaught EPIPE (which the WASM runtime's handler would rethrow with its whole source).
process.stdout.on('error', (e) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

const USAGE = `usage: memfit <command> [args]
  params <config.json | preset id> [--tensors]   architecture and exact parameter counts
  estimate <request.json>                         peak memory of one training setup
  search <request.json> [--top N]                 fastest layouts that fit (every method counted)
  launch <request.json>                           launch configs for the request's layout
  validate <cases.csv | dir>... [--configs DIR[,DIR...]] [--json | --markdown]
           [--freeze FILE [--force | --add] | --blind FILE] [--blind-dir DIR]
                                                  estimates vs published measurements
                                                  (table; --json data; --markdown docs/validation.md);
                                                  --freeze records the predictions (blind record;
                                                  --add: only the rows a freeze lacks),
                                                  --blind (or <blind dir>/<csv name>.json, default
                                                  tests/validation/blind) reports frozen vs current
  import <config>... [--format F] [--model M] [--gpu ID] [--gpus N] [--json]
                                                  a training config (Axolotl, LLaMA-Factory, torchtune,
                                                  DeepSpeed, accelerate, HF TrainingArguments / TRL
                                                  SFTConfig, Megatron-LM args, PEFT adapter_config.json)
                                                  as a request (stdout;
                                                  what was read and ignored on stderr; --json: all);
                                                  give the DeepSpeed JSON it names too, or beside it
  presets                                         model and GPU presets
  version                                         module version`;

function loadModule() {
  const candidates = [
    process.env.MEMFIT_WASM_JS,
    path.join(__dirname, '..', 'build-wasm', 'site', 'memfit_single.js'),
    path.join(__dirname, '..', 'dist', 'memfit_single.js'),
  ].filter(Boolean);
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) {
    process.stderr.write('memfit: the WASM module is not built; run `npm run build` first\n');
    process.exit(3);
  }
  return require(found)();
}

function usageError(message, code = 'invalid_usage', pointer = '') {
  const envelope = { ok: false, schema_version: 1, error: { code, message, path: pointer } };
  process.stdout.write(JSON.stringify(envelope) + '\n');
  process.stderr.write(USAGE + '\n');
  process.exit(2);
}

function emit(envelopeText) {
  const envelope = JSON.parse(envelopeText);
  process.stdout.write(JSON.stringify(envelope.ok ? envelope.result : envelope, null, 2) + '\n');
  // Let a large result drain to a pipe before exiting (process.exit would cut it short).
  process.exitCode = envelope.ok ? 0 : 2;
}

/// The text of a file named on the command line; a missing one is a usage error.
function readInputFile(file, what) {
  if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    usageError(`${what}: no such file '${file || ''}'`);
  }
  return fs.readFileSync(file, 'utf8');
}

/// validate's arguments: {casesPaths, configDirs, format: 'table' | 'json' | 'markdown', freezePath,
/// force, add, blindPath, blindDir}.
function parseValidateArgs(args) {
  const options = {
    casesPaths: [], configDirs: [], format: 'table', freezePath: null, force: false, add: false,
    blindPath: null, blindDir: path.join(__dirname, '..', 'tests', 'validation', 'blind'),
  };
  const setFormat = (format) => {
    if (options.format !== 'table') usageError('validate: give at most one of --json and --markdown');
    options.format = format;
  };
  const VALUE_OPTIONS = {
    '--configs': (value) => options.configDirs.push(...value.split(',').filter((d) => d !== '')),
    '--freeze': (value) => { options.freezePath = value; },
    '--blind': (value) => { options.blindPath = value; },
    '--blind-dir': (value) => { options.blindDir = value; },
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const equals = arg.startsWith('--') ? arg.indexOf('=') : -1; // --name=value
    const name = equals < 0 ? arg : arg.slice(0, equals);
    const inline = equals < 0 ? undefined : arg.slice(equals + 1);
    if (arg === '--json') setFormat('json');
    else if (arg === '--markdown') setFormat('markdown');
    else if (arg === '--force') options.force = true;
    else if (arg === '--add') options.add = true;
    else if (Object.hasOwn(VALUE_OPTIONS, name)) {
      const value = inline === undefined ? args[++i] : inline;
      if (!value) usageError(`validate: ${name} needs a value`);
      VALUE_OPTIONS[name](value);
    } else if (arg.startsWith('--')) usageError(`validate: unknown option '${arg}'`);
    else options.casesPaths.push(arg);
  }
  if (options.casesPaths.length === 0) usageError('validate takes case files: .csv files or directories of them');
  if (options.freezePath && options.blindPath) usageError('validate: give one of --freeze and --blind');
  if ((options.force || options.add) && !options.freezePath) usageError('validate: --force and --add go with --freeze');
  if (options.force && options.add) usageError('validate: give one of --force and --add');
  return options;
}

/// The case files named: a file as it is, a directory as its *.csv files by name (none is fine).
function caseFiles(paths) {
  return paths.flatMap((p) => {
    if (!fs.existsSync(p)) usageError(`validate: no such file or directory '${p}'`);
    if (!fs.statSync(p).isDirectory()) return [p];
    return fs.readdirSync(p).filter((name) => name.endsWith('.csv')).sort().map((name) => path.join(p, name));
  });
}

/// The rows of a case file; a malformed file is a usage error (invalid_csv).
function readCaseFile(casesPath) {
  const text = readInputFile(casesPath, 'validate');
  try {
    return validation.readCases(text);
  } catch (e) {
    return usageError(`${casesPath}: ${e.message}`, 'invalid_csv');
  }
}

/// The freeze a case file is compared with: --blind, else `<blind dir>/<name>.json` if it exists;
/// null when there is none or when freezing.
function blindFileFor(casesPath, options) {
  if (options.freezePath) return null;
  if (options.blindPath) {
    readInputFile(options.blindPath, 'validate --blind'); // a missing file is a usage error
    return options.blindPath;
  }
  const found = path.join(options.blindDir, `${path.basename(casesPath, '.csv')}.json`);
  if (!fs.existsSync(found)) return null;
  const relative = path.relative(process.cwd(), found); // as the report names it
  return relative.startsWith('..') || path.isAbsolute(relative) ? found : relative;
}

/// Says on stderr when a freeze was made with other --configs than this run: the current numbers
/// would then differ from the blind ones for that reason, not for a model change.
function warnOnOtherConfigs(freeze, blindPath, configDirs) {
  const frozenWith = Array.isArray(freeze.configs) ? freeze.configs : [];
  if (JSON.stringify(frozenWith) === JSON.stringify(configDirs)) return;
  process.stderr.write(`memfit: warning: ${blindPath} was frozen with --configs ${frozenWith.join(',') || '(none)'}, `
    + `this run has ${configDirs.join(',') || '(none)'}\n`);
}

/// The checked freeze of `blindPath` for a case file; a bad one is a usage error with its code
/// (invalid_freeze, freeze_mismatch) and the JSON Pointer of the field at fault.
function readFreezeFor(blindPath, casesPath, cases, options) {
  try {
    const freeze = blind.parseFreeze(fs.readFileSync(blindPath, 'utf8'));
    blind.checkFreezeMatches(freeze, path.basename(casesPath), cases);
    warnOnOtherConfigs(freeze, blindPath, options.configDirs);
    return freeze;
  } catch (e) {
    if (!(e instanceof blind.FreezeError)) throw e;
    return usageError(`${blindPath}: ${e.message}`, e.code, e.path);
  }
}

/// The commit checked out where this CLI lives, or null outside a git checkout.
function gitCommit() {
  const r = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: path.join(__dirname, '..'), encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/// Writes the freeze of one validated case file (runValidate has refused to overwrite one without
/// --force). With `addTo` (the existing freeze, --add), records only the rows it lacks.
function writeFreeze(options, file, cases, version, addTo) {
  const info = {
    casesName: path.basename(file.casesPath), version, gitCommit: gitCommit(),
    date: new Date().toISOString().slice(0, 10), configDirs: options.configDirs,
  };
  if (addTo) {
    const { freeze, added } = blind.addToFreeze(addTo, cases, file.report, info);
    if (added.length > 0) writeFileAtomically(options.freezePath, blind.serializeFreeze(freeze));
    process.stderr.write(`memfit: added ${added.length} rows to ${options.freezePath}`
      + `${added.length > 0 ? `: ${added.join(', ')}` : ' (every row is frozen already)'}\n`);
    return;
  }
  const freeze = blind.buildFreeze(cases, file.report, info);
  writeFileAtomically(options.freezePath, blind.serializeFreeze(freeze));
  const { rows, skipped, errors } = file.report;
  process.stderr.write(`memfit: froze ${freeze.rows.length} rows of ${file.casesPath} in ${options.freezePath} `
    + `(${rows.length} compared, ${skipped.length} skipped, ${errors.length} rejected)\n`);
}

/// Writes `text` to `file` (making its directory) through a temporary file, so that a reader
/// never sees half a file.
function writeFileAtomically(file, text) {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, text);
  fs.renameSync(temporary, file);
}

/// `memfit validate`: the report on stdout, exit 0 whether or not the targets are met. With
/// --freeze, also records the predictions; with a freeze (--blind or found), reports blind and
/// current side by side.
async function runValidate(args) {
  const options = parseValidateArgs(args);
  const paths = caseFiles(options.casesPaths);
  if ((options.freezePath || options.blindPath) && paths.length !== 1) {
    usageError('validate: --freeze and --blind take exactly one case file');
  }
  if (options.freezePath && fs.existsSync(options.freezePath) && !options.force && !options.add) {
    usageError(`validate: '${options.freezePath}' exists; a freeze records what the model said before it `
      + 'was changed, so it is not overwritten (--add records only rows it lacks; --force overwrites)',
    'freeze_exists');
  }
  for (const dir of options.configDirs) {
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) usageError(`--configs: no such directory '${dir}'`);
  }
  const inputs = paths.map((casesPath) => {
    const cases = readCaseFile(casesPath);
    const blindPath = blindFileFor(casesPath, options);
    return { casesPath, cases, blindPath, freeze: blindPath && readFreezeFor(blindPath, casesPath, cases, options) };
  });
  const addTo = options.add && fs.existsSync(options.freezePath)
    ? readFreezeFor(options.freezePath, inputs[0].casesPath, inputs[0].cases, options) : null;
  const M = await loadModule();
  if (typeof M.estimate !== 'function') {
    process.stderr.write('memfit: this build of the WASM module has no estimate(); run `npm run build`\n');
    process.exit(3);
  }
  const version = JSON.parse(M.version()).result.version;
  const files = inputs.map(({ casesPath, cases, blindPath, freeze }) => {
    const report = validation.validate(cases, {
      estimate: (requestText) => M.estimate(requestText),
      configDirs: options.configDirs,
    });
    return { casesPath, report, blindPath, blind: freeze ? blind.compareWithFreeze(cases, report, freeze) : null };
  });
  if (options.freezePath) writeFreeze(options, files[0], inputs[0].cases, version, addTo);
  if (options.format === 'json') {
    process.stdout.write(JSON.stringify(reports.toJson(files), null, 2) + '\n');
  } else if (options.format === 'markdown') {
    process.stdout.write(reports.formatMarkdown(files, { version }));
  } else {
    process.stdout.write(reports.formatText(files));
  }
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h') {
    process.stdout.write(USAGE + '\n');
    return;
  }
  if (command === 'validate') return runValidate(rest); // checks its input before loading the module
  if (command === 'import') return runImport(rest, loadModule, usageError);
  if (command === 'estimate') {
    if (rest.length !== 1 || rest[0].startsWith('--')) usageError('estimate takes one argument: a request .json file');
    const text = readInputFile(rest[0], 'estimate');
    return emit((await loadModule()).estimate(text));
  }
  if (command === 'search') {
    const args = [...rest];
    let top = null;
    const at = args.indexOf('--top');
    if (at >= 0) {
      top = Number(args[at + 1]);
      if (!Number.isInteger(top) || top < 1 || top > 1000) usageError('--top takes an integer 1 … 1000');
      args.splice(at, 2);
    }
    if (args.length !== 1 || args[0].startsWith('--')) usageError('search takes one argument: a request .json file');
    let text = readInputFile(args[0], 'search');
    if (top !== null) {
      let request;
      try {
        request = JSON.parse(text);
      } catch (e) {
        request = null; // the module reports the parse error with its position
      }
      if (request && typeof request === 'object' && !Array.isArray(request)) {
        const search = request.search && typeof request.search === 'object' ? request.search : {};
        request.search = { ...search, top };
        text = JSON.stringify(request);
      }
    }
    return emit((await loadModule()).search(text));
  }
  if (command === 'launch') {
    if (rest.length !== 1 || rest[0].startsWith('--')) usageError('launch takes one argument: a request .json file');
    return emit((await loadModule()).launch(readInputFile(rest[0], 'launch')));
  }
  const M = await loadModule();
  switch (command) {
    case 'version':
      return emit(M.version());
    case 'presets':
      return emit(M.presets());
    case 'params': {
      const args = rest.filter((a) => !a.startsWith('--'));
      if (args.length !== 1) usageError('params takes one argument: a config.json path or a preset id');
      const target = args[0];
      const tensors = rest.includes('--tensors');
      if (fs.existsSync(target) && fs.statSync(target).isFile()) {
        const text = fs.readFileSync(target, 'utf8');
        return emit(M.inspectConfig(text, tensors));
      }
      return emit(M.inspect(JSON.stringify({ model: { preset: target }, include_tensors: tensors })));
    }
    default:
      usageError(`unknown command '${command}'`);
  }
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`memfit: internal error: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});

#!/usr/bin/env node
// memfit command line: the same WASM module the page runs, driven from Node.
//   memfit params <config.json | preset id> [--tensors]
//   memfit estimate <request.json>
//   memfit search <request.json> [--top N]
//   memfit launch <request.json>
//   memfit validate <cases.csv> [--configs DIR[,DIR...]] [--json | --markdown]
//   memfit presets
//   memfit version
// Exit 0 on success; on bad input exit 2 with the error envelope on stdout.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const validation = require('./validate.js');

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
  validate <cases.csv> [--configs DIR[,DIR...]] [--json | --markdown]
                                                  estimates vs published measurements
                                                  (table; --json data; --markdown docs/validation.md)
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

function usageError(message, code = 'invalid_usage') {
  const envelope = { ok: false, schema_version: 1, error: { code, message, path: '' } };
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

/// validate's arguments: {casesPath, configDirs, format: 'table' | 'json' | 'markdown'}.
function parseValidateArgs(args) {
  const options = { casesPath: null, configDirs: [], format: 'table' };
  const setFormat = (format) => {
    if (options.format !== 'table') usageError('validate: give at most one of --json and --markdown');
    options.format = format;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--json') setFormat('json');
    else if (arg === '--markdown') setFormat('markdown');
    else if (arg === '--configs' || arg.startsWith('--configs=')) {
      const value = arg === '--configs' ? args[++i] : arg.slice('--configs='.length);
      if (!value) usageError('validate: --configs needs a directory (or a comma-separated list)');
      options.configDirs.push(...value.split(',').filter((d) => d !== ''));
    } else if (arg.startsWith('--')) usageError(`validate: unknown option '${arg}'`);
    else if (options.casesPath === null) options.casesPath = arg;
    else usageError('validate takes one case file');
  }
  if (options.casesPath === null) usageError('validate takes one argument: a cases .csv file');
  return options;
}

/// `memfit validate`: the report on stdout, exit 0 whether or not the targets are met.
async function runValidate(args) {
  const options = parseValidateArgs(args);
  const text = readInputFile(options.casesPath, 'validate');
  let cases;
  try {
    cases = validation.readCases(text);
  } catch (e) {
    usageError(`${options.casesPath}: ${e.message}`, 'invalid_csv');
  }
  for (const dir of options.configDirs) {
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) usageError(`--configs: no such directory '${dir}'`);
  }
  const M = await loadModule();
  if (typeof M.estimate !== 'function') {
    process.stderr.write('memfit: this build of the WASM module has no estimate(); run `npm run build`\n');
    process.exit(3);
  }
  const report = validation.validate(cases, {
    estimate: (requestText) => M.estimate(requestText),
    configDirs: options.configDirs,
  });
  if (options.format === 'json') {
    process.stdout.write(JSON.stringify(validation.toJson(report), null, 2) + '\n');
  } else if (options.format === 'markdown') {
    const version = JSON.parse(M.version()).result.version;
    process.stdout.write(validation.formatMarkdown(report, { casesPath: options.casesPath, version }));
  } else {
    process.stdout.write(validation.formatTable(report));
  }
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h') {
    process.stdout.write(USAGE + '\n');
    return;
  }
  if (command === 'validate') return runValidate(rest); // checks its input before loading the module
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

#!/usr/bin/env node
// memfit command line: the same WASM module the page runs, driven from Node.
//   memfit params <config.json | preset id> [--tensors]
//   memfit presets
//   memfit version
// Exit 0 on success; on bad input exit 2 with the error envelope on stdout.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const USAGE = `usage: memfit <command> [args]
  params <config.json | preset id> [--tensors]   architecture and exact parameter counts
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

function usageError(message) {
  const envelope = { ok: false, schema_version: 1, error: { code: 'invalid_usage', message, path: '' } };
  process.stdout.write(JSON.stringify(envelope) + '\n');
  process.stderr.write(USAGE + '\n');
  process.exit(2);
}

function emit(envelopeText) {
  const envelope = JSON.parse(envelopeText);
  process.stdout.write(JSON.stringify(envelope.ok ? envelope.result : envelope, null, 2) + '\n');
  process.exit(envelope.ok ? 0 : 2);
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h') {
    process.stdout.write(USAGE + '\n');
    return;
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

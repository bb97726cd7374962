// Shared helpers for the Node tests: load the built WASM module both ways.
import { readFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));
export const site = `${root}build-wasm/site/`;

/// The ES-module build (what the served page loads). Node >= 18 has fetch, which the 3.1.6 glue
/// would use for the .wasm path, so the bytes are handed over directly.
export async function loadEs() {
  const { default: create } = await import(`${site}memfit.mjs`);
  return create({ wasmBinary: readFileSync(`${site}memfit.wasm`) });
}

/// The classic single-file build (what the CLI and file:// pages load).
export async function loadSingle() {
  return createRequire(import.meta.url)(`${site}memfit_single.js`)();
}

export function envelope(text) {
  return JSON.parse(text);
}

export const built = existsSync(`${site}memfit.mjs`);

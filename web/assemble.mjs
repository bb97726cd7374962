// Assembles the calculator from web/ and the built module into self-contained files:
//   index.html, memfit_offline.html  the page, with CSS, JS, uPlot and the gzipped wasm inlined:
//                                    served, opened from file://, or saved with "Save page as"
//   memfit-element.js                one classic script defining <memfit-calculator>
//   embed.html                       a page embedding the element and the iframe (?embed=1)
//   memfit-import.js                 the config importer and its YAML parser, loaded by the page
//                                    only when a config is imported (the first load stays small)
// Usage: node web/assemble.mjs <web dir> <site dir>
import { readFileSync, writeFileSync, readdirSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createHash } from 'node:crypto';
import { gzipAsync } from '@gfx/zopfli';

const [webDir, siteDir] = process.argv.slice(2);
const read = (p) => readFileSync(p, 'utf8');
const uplot = join(webDir, '..', 'node_modules', 'uplot', 'dist');
// Load order: the library, then the page's files (each adds to globalThis.memfitWeb); boot.js
// (loading the module, starting the page) goes first in the page and last in the element.
const SOURCES = ['format.js', 'url_state.js', 'models.js', 'levers.js', 'estimator.js', 'charts.js', 'calculator.js'];

const css = `${read(join(uplot, 'uPlot.min.css'))}\n${read(join(webDir, 'style.css'))}`;
// Indentation is insignificant in the markup (no <pre> or <textarea> in it holds text).
const page = read(join(webDir, 'page.html')).split('\n').map((line) => line.trimStart()).join('\n');
/// A page source without its whole-line comments and indentation (the shipped page stays under
/// its size budget; the sources keep them). Safe only while no template literal spans lines.
function compact(file) {
  const text = read(join(webDir, 'src', file));
  let inTemplate = false;  // toggled by every unescaped backtick: errs on the safe side
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === '`' && text[i - 1] !== '\\') inTemplate = !inTemplate;
    if (text[i] === '\n' && inTemplate) throw new Error(`${file}: a template literal spans lines; compact() would change it`);
  }
  return text.split('\n').map((line) => line.trimStart()).filter((line) => line && !line.startsWith('//')).join('\n');
}
// uPlot is run on the first chart (memfitWeb.plotLibrary()), after the first result: its top
// level (and the Intl.NumberFormat it builds) is ~15-45 ms of CPU that the first estimate need not wait for.
const uplotDeferred = `/* uPlot 1.6.32, MIT licence, (c) Leon Sorokin: https://github.com/leeoniya/uPlot */
(globalThis.memfitWeb = globalThis.memfitWeb || {}).loadUplot = function () {\n${read(join(uplot, 'uPlot.iife.min.js'))}\nreturn uPlot;\n};`;
const library = [uplotDeferred, ...SOURCES.map(compact)].join('\n');
const boot = compact('boot.js');
const glue = read(join(siteDir, 'memfit_web.js'));

/// The wasm as gzip from Zopfli (a standard deflate stream, ~5 % smaller than zlib's level 9;
/// DecompressionStream('gzip') reads it), cached outside the site with the module's hash: Zopfli
/// takes ~20 s, and a change to the page alone reuses it.
async function packedWasm() {
  const wasm = readFileSync(join(siteDir, 'memfit_web.wasm'));
  const hash = createHash('sha256').update(wasm).digest('hex');
  const cached = join(siteDir, '..', 'memfit_web.wasm.zopfli.gz');
  if (existsSync(cached) && existsSync(`${cached}.sha256`) && read(`${cached}.sha256`) === hash) return readFileSync(cached);
  const packed = Buffer.from(await gzipAsync(wasm, { numiterations: 5 }));
  writeFileSync(cached, packed);
  writeFileSync(`${cached}.sha256`, hash);
  return packed;
}
const wasmBase64 = (await packedWasm()).toString('base64');

// Inline <script> text must not contain "</script" (it would end the element early); a function
// replacement keeps "$&"-style patterns in the inlined code literal.
const inline = (js) => `<script>\n${js.replace(/<\/script/gi, '<\\/script')}\n</script>`;
const shell = read(join(webDir, 'shell.html'));
// The page: the wasm travels as data (base64 in a non-script <script> element, never parsed as
// JavaScript) at the top of the document, and its compilation starts there, on background
// threads, while the styles, the markup and the rest of the code are parsed and laid out.
const html = shell.replace('<!--STYLE-->', () => `<style>\n${css}</style>`)
  .replace('<!--WASM-->', () => [`<script type="application/octet-stream" id="memfit-wasm">${wasmBase64}</script>`,
    inline(`${boot}\nglobalThis.memfitWeb.compileModule(document.getElementById('memfit-wasm').textContent);`)].join('\n'))
  .replace('<!--PAGE-->', () => page)
  .replace('<!--SCRIPTS-->', () => [inline(`${glue}\nglobalThis.memfitWeb.loadModule();`),
    inline(library), inline('globalThis.memfitWeb.bootPage();')].join('\n'));
writeFileSync(join(siteDir, 'index.html'), html);
writeFileSync(join(siteDir, 'memfit_offline.html'), html);

const element = [library, boot, `globalThis.memfitWeb.wasmGzBase64 = "${wasmBase64}";`, `globalThis.memfitWeb.css = ${JSON.stringify(css)};`,
  `globalThis.memfitWeb.pageHtml = ${JSON.stringify(page)};`, glue,
  compact('element.js')].join('\n');
writeFileSync(join(siteDir, 'memfit-element.js'), element);
writeFileSync(join(siteDir, 'embed.html'), read(join(webDir, 'embed.html')));

/// The `yaml` package's CommonJS build as one classic script setting memfitWeb.YAML: each file a
/// function in a table, its relative require()s resolved against it; its two Node built-ins are
/// stubbed (it reads process.env for debug logging and uses Buffer only when it is a function).
function yamlBundle() {
  const dist = join(webDir, '..', 'node_modules', 'yaml', 'dist');
  const files = (function list(dir) {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? list(join(dir, e.name))
      : e.name.endsWith('.js') ? [join(dir, e.name)] : []));
  })(dist);
  const table = files.map((f) => `${JSON.stringify(relative(dist, f))}: function (module, exports, require) {\n${read(f)}\n}`);
  const { version } = JSON.parse(read(join(dist, '..', 'package.json')));
  return `/* yaml ${version}, ISC licence, (c) Eemeli Aro: https://github.com/eemeli/yaml */
(function () {
  const files = {${table.join(',\n')}};
  const builtins = { process: { env: {} }, buffer: {} };
  const cache = {};
  function load(name) {
    if (!cache[name]) {
      const module = { exports: {} };
      cache[name] = module;
      const base = name.includes('/') ? name.slice(0, name.lastIndexOf('/') + 1) : '';
      files[name](module, module.exports, (spec) => {
        if (builtins[spec]) return builtins[spec];
        const parts = [];
        for (const part of (base + spec).split('/')) {
          if (part === '..') parts.pop();
          else if (part !== '.') parts.push(part);
        }
        const path = parts.join('/');
        return load(path.endsWith('.js') ? path : path + '.js');
      });
    }
    return cache[name].exports;
  }
  (globalThis.memfitWeb = globalThis.memfitWeb || {}).YAML = load('index.js');
})();`;
}
writeFileSync(join(siteDir, 'memfit-import.js'), [yamlBundle(), compact('config_import.js'), compact('import_view.js')].join('\n'));

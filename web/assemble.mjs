// Assembles the page from web/ and the built module: index.html (served; ES module + .wasm) and
// memfit_offline.html (one self-contained file: CSS, JS and the wasm inlined; works from file://).
// Usage: node web/assemble.mjs <web dir> <site dir>
import { readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';

const [webDir, siteDir] = process.argv.slice(2);
const read = (p) => readFileSync(p, 'utf8');
const shell = read(join(webDir, 'shell.html'));
const page = read(join(webDir, 'page.html'));
const css = read(join(webDir, 'style.css'));
const app = read(join(webDir, 'app.js'));
const single = read(join(siteDir, 'memfit_single.js'));

// A function replacement keeps '$&'-style patterns in the inlined code literal.
const fill = (parts) => shell.replace('<!--STYLE-->', () => parts.style)
  .replace('<!--PAGE-->', () => page).replace('<!--SCRIPTS-->', () => parts.scripts);
// Inline <script> text must not contain "</script" (it would end the element early).
const inline = (code) => code.replace(/<\/script/gi, '<\\/script');

writeFileSync(join(siteDir, 'index.html'), fill({
  style: '<link rel="stylesheet" href="style.css">',
  scripts: '<script src="app.js"></script>\n<script type="module">\nimport createMemfit from \'./memfit.mjs\';\nwindow.memfitStart(await createMemfit());\n</script>',
}));
writeFileSync(join(siteDir, 'memfit_offline.html'), fill({
  style: `<style>\n${css}</style>`,
  scripts: `<script>\n${inline(app)}</script>\n<script>\n${inline(single)}</script>\n<script>createMemfit().then(window.memfitStart);</script>`,
}));
copyFileSync(join(webDir, 'style.css'), join(siteDir, 'style.css'));
copyFileSync(join(webDir, 'app.js'), join(siteDir, 'app.js'));

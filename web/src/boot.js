// Starting the calculator: the WebAssembly module is inlined (gzip, base64) so that the page and
// the element bundle need no server, no network and no second file; the served page, the
// offline file and a page saved with "Save page as" are the same document.
'use strict';
(function (ns) {
  /// The base64 text as bytes (natively where the browser can).
  function decodeBase64(base64) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(base64);
    const text = atob(base64);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i += 1) bytes[i] = text.charCodeAt(i);
    return bytes;
  }

  /// The gzipped wasm (`base64`) compiling while it is inflated (a streamed Response); started
  /// once per document, by the page's first script, before the rest of the page is parsed.
  function compileModule(base64 = ns.wasmGzBase64) {
    ns.compiled ??= (async () => WebAssembly.compileStreaming(new Response(
      new Blob([decodeBase64(base64)]).stream().pipeThrough(new DecompressionStream('gzip')),
      { headers: { 'Content-Type': 'application/wasm' } })).then((module) => {
      performance.mark('memfit-compiled');
      return module;
    }))();
    return ns.compiled;
  }

  /// One module per document, shared by every calculator on it (the glue's createMemfit defined).
  function loadModule(base64 = ns.wasmGzBase64) {
    ns.modulePromise ??= compileModule(base64).then((module) => new Promise((resolve, reject) => {
      createMemfit({
        instantiateWasm(imports, receiveInstance) {
          WebAssembly.instantiate(module, imports).then((instance) => {
            performance.mark('memfit-instantiated');
            receiveInstance(instance, module);
          }, reject);
          return {};
        },
      }).then(resolve, reject);
    }));
    return ns.modulePromise;
  }

  /// The full page (or, with ?embed=1, its compact view for an iframe). State lives in the hash.
  async function bootPage() {
    const body = document.body;
    // A saved copy of the page carries these attributes: start over.
    for (const key of ['ready', 'firstResultMs', 'moduleMs', 'updateMs', 'searchMs']) delete body.dataset[key];
    const embed = new URLSearchParams(location.search).get('embed') === '1';
    document.documentElement.classList.toggle('embed', embed);
    const app = document.getElementById('app');
    app.replaceChildren(document.getElementById('memfit-page').content.cloneNode(true));
    const status = document.getElementById('status');
    let api = null;
    let written = location.hash.replace(/^#/, '');
    // The form is built (and laid out) while the module compiles; the first estimate follows it.
    const calculator = new ns.Calculator(app, null, {
      state: ns.urlState.decode(location.hash),
      onState: (state) => {
        written = ns.urlState.encode(state);
        history.replaceState(null, '', `${location.pathname}${location.search}#${written}`);
      },
      onUpdate: (ms) => {
        body.dataset.updateMs = ms.toFixed(2);
        // The first result on screen: the frame that draws it (the search waits for it).
        requestAnimationFrame(() => { body.dataset.firstResultMs ??= performance.now().toFixed(1); });
      },
      onSearch: (ms) => {
        body.dataset.searchMs = ms.toFixed(2);
        // After the first result: nothing the first estimate does not need runs before it.
        if (!body.dataset.ready) status.textContent = `memfit ${api.version().version} · runs in this browser`;
        body.dataset.ready = '1';
      },
    });
    try {
      api = ns.estimator.wrap(await loadModule());
      body.dataset.moduleMs = performance.now().toFixed(1);
      calculator.start(api);
      window.addEventListener('hashchange', () => {
        if (location.hash.replace(/^#/, '') !== written) calculator.setState(ns.urlState.decode(location.hash));
      });
    } catch (error) {
      status.textContent = `could not start: ${error.message}`;
      throw error;
    }
  }

  ns.compileModule = compileModule;
  ns.loadModule = loadModule;
  ns.bootPage = bootPage;
})(globalThis.memfitWeb = globalThis.memfitWeb || {});

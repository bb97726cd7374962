// <memfit-calculator model="Qwen/Qwen3-8B" gpu="A100-80GB" gpus="8" seq-len="4096">: the
// calculator in a shadow root, for documentation pages. Every state key is an attribute (dashes
// for underscores); changing one updates the result. Fires "memfit-ready" once the first result is shown.
'use strict';
(function (ns) {
  const attributeOf = (key) => key.replace(/_/g, '-');
  // The importer (memfit-import.js) is loaded from beside this script, when a config is imported.
  if (document.currentScript?.src) ns.importerUrl ??= new URL('memfit-import.js', document.currentScript.src).href;

  class MemfitCalculatorElement extends HTMLElement {
    static get observedAttributes() { return ns.urlState.KEYS.map(attributeOf); }

    state() {
      const state = {};
      for (const key of ns.urlState.KEYS) {
        const value = this.getAttribute(attributeOf(key));
        if (value !== null) state[key] = value;
      }
      return state;
    }

    connectedCallback() {
      if (this.shadowRoot) return;
      const shadow = this.attachShadow({ mode: 'open' });
      const style = document.createElement('style');
      style.textContent = ns.css;
      const app = document.createElement('div');
      app.className = 'app in-element';
      const template = document.createElement('template');
      template.innerHTML = ns.pageHtml;  // the build's own markup, never user text
      app.append(template.content);
      shadow.append(style, app);
      // The form is built while the module compiles; start() computes once it is ready.
      this.calculator = new ns.Calculator(app, null, {
        state: this.state(),
        onSearch: () => {
          if (this.hasAttribute('ready')) return;
          this.setAttribute('ready', '');
          this.dispatchEvent(new CustomEvent('memfit-ready'));
        },
      });
      ns.loadModule().then((M) => this.calculator.start(ns.estimator.wrap(M)));
    }

    attributeChangedCallback() {
      this.calculator?.setState(this.state());
    }
  }

  if (!customElements.get('memfit-calculator')) customElements.define('memfit-calculator', MemfitCalculatorElement);
})(globalThis.memfitWeb = globalThis.memfitWeb || {});

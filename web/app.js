// memfit page controller: wires the form to the WASM module and renders its JSON. It never
// computes memory or parameters itself: every number shown comes from the core.
// Works with the ES-module build (served page) and the classic single-file build (file://).
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const fmtInt = (n) => Number(n).toLocaleString('en-US');

  function unwrap(text) {
    const env = JSON.parse(text);
    if (env.ok) return { result: env.result };
    return { error: env.error };
  }

  function renderError(err) {
    $('config-error').textContent = err ? `${err.code}${err.path ? ' at ' + err.path : ''}: ${err.message}` : '';
  }

  function row(table, label, value) {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.textContent = label;
    const td = document.createElement('td');
    td.className = 'num';
    td.textContent = value;
    tr.append(th, td);
    table.append(tr);
  }

  function render(result) {
    $('total-params').textContent = fmtInt(result.total_params);
    $('model-name').textContent = `${result.model.id || '(pasted config)'} · ${result.architecture.model_type}`;
    const kinds = $('by-kind');
    kinds.replaceChildren();
    for (const [kind, n] of Object.entries(result.params_by_kind)) {
      if (n > 0) row(kinds, kind, fmtInt(n));
    }
    const arch = $('arch');
    arch.replaceChildren();
    const a = result.architecture;
    for (const key of ['kind', 'hidden_size', 'num_layers', 'num_attention_heads', 'num_key_value_heads',
      'head_dim', 'attention', 'intermediate_size', 'mlp', 'vocab_size', 'position', 'norm', 'tie_word_embeddings']) {
      row(arch, key, String(a[key]));
    }
    if (a.moe) row(arch, 'experts (top-k)', `${a.moe.num_experts} (${a.moe.top_k})`);
    $('warnings').textContent = (result.warnings || []).join('\n');
  }

  function start(M) {
    const version = unwrap(M.version()).result;
    $('status').textContent = `ready · memfit ${version.version}`;
    const presets = unwrap(M.presets()).result;
    const select = $('preset');
    for (const p of presets.models) {
      const opt = document.createElement('option');
      opt.value = p.id;
      opt.textContent = p.id;
      select.append(opt);
    }
    const gpuList = $('gpu-count');
    gpuList.textContent = `${presets.gpus.length} GPU presets, ${presets.models.length} model presets`;

    function fromHash() {
      const params = new URLSearchParams(location.hash.slice(1));
      return params.get('model');
    }
    function update() {
      const pasted = $('config').value.trim();
      let out;
      if (pasted) {
        out = unwrap(M.inspectConfig(pasted, false));
      } else {
        out = unwrap(M.inspect(JSON.stringify({ model: { preset: select.value } })));
        history.replaceState(null, '', '#' + new URLSearchParams({ model: select.value }).toString());
      }
      renderError(out.error);
      if (out.result) render(out.result);
    }
    const initial = fromHash();
    if (initial && presets.models.some((p) => p.id === initial)) select.value = initial;
    else select.value = 'meta-llama/Llama-3.1-8B';
    select.addEventListener('change', () => { $('config').value = ''; update(); });
    $('config').addEventListener('input', update);
    update();
    document.body.dataset.ready = '1';
  }

  window.memfitStart = start;
})();

// The page's side of config import (loaded with the importer, memfit-import.js, only when a user
// imports): the imported request as the form's state, and the list of what was set, what the form
// cannot hold and what was ignored. Text from the file is only ever set as textContent.
'use strict';
(function (ns) {
  // Request fields the form holds, by their state key.
  const FIELDS = {
    '/model/preset': 'model', '/training/framework': 'framework', '/training/method': 'method', '/training/lora/rank': 'lora_rank',
    '/training/lora/targets': 'lora_targets', '/training/lora/modules_to_save': 'lora_saved', '/training/badam/active_block': 'badam', '/training/prompt_encoder': 'prompt_encoder', '/training/trainable_tokens/count': 'tokens', '/training/precision': 'precision', '/training/optimizer': 'optimizer',
    '/training/micro_batch': 'micro_batch', '/training/grad_accum': 'grad_accum', '/training/seq_len': 'seq_len',
    '/training/activation_checkpointing': 'ckpt', '/training/attention': 'attention', '/training/loss': 'loss',
    '/training/compile': 'compile', '/cluster/gpus': 'gpus', '/cluster/gpus_per_node': 'per_node',
  };
  // The form's LoRA target choices, by their sorted module list.
  const TARGETS = { 'k,o,q,v': 'attention', 'q,v': 'qv', 'down,gate,k,o,q,up,v': 'all-linear' };
  // Training keys an import replaces (a key the file does not give goes back to its default).
  const TRAINING_KEYS = ['framework', 'method', 'lora_rank', 'lora_targets', 'lora_saved', 'badam', 'prompt_encoder', 'tokens', 'precision', 'optimizer', 'micro_batch', 'grad_accum',
    'seq_len', 'ckpt', 'attention', 'loss', 'compile'];

  function leaves(value, prefix, out) {
    if (value && typeof value === 'object' && !Array.isArray(value) && prefix !== '/model/config') {
      for (const [k, v] of Object.entries(value)) leaves(v, `${prefix}/${k}`, out);
    } else out.push([prefix, value]);
    return out;
  }

  function formValue(key, value) {
    if (key === 'lora_saved') return Array.isArray(value) ? [...value].sort().join(',') : String(value);
    if (key !== 'lora_targets') return String(value);
    if (!Array.isArray(value)) return value;
    return TARGETS[[...value].sort().join(',')];
  }

  /// The form's state from an imported request. `accepts(key, value)`: whether the form can show
  /// it (a select with that option). Returns {state, shown: [{ptr, key, value}], notShown: [{ptr, value}]}.
  function toState(request, state, defaults, accepts) {
    const next = { ...state };
    for (const key of TRAINING_KEYS) next[key] = defaults[key];
    const shown = [];
    const notShown = [];
    for (const [ptr, value] of leaves(request, '', [])) {
      if (ptr === '/model/config') {
        Object.assign(next, { config: JSON.stringify(value, null, 2), hf: '' });
        shown.push({ ptr, key: 'config', value: 'config.json' });
        continue;
      }
      const key = FIELDS[ptr];
      const v = key && formValue(key, value);
      if (key && v !== undefined && accepts(key, v)) {
        next[key] = v;
        if (key === 'model') Object.assign(next, { config: '', hf: '' });
        shown.push({ ptr, key, value: v });
      } else notShown.push({ ptr, value });
    }
    return { state: next, shown, notShown };
  }

  function el(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (className) e.className = className;
    return e;
  }
  const at = (x) => (x.line ? ` (line ${x.line})` : '');
  const show = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

  function list(items) {
    const ul = el('ul', undefined, 'small');
    ul.append(...items.map((text) => el('li', text)));
    return ul;
  }

  function section(title, items, open) {
    const d = el('details');
    d.open = open;
    d.append(el('summary', title), list(items));
    return d;
  }

  /// What the import did, into `box`: the format, the fields set, those the form cannot hold, the
  /// keys ignored (those that may change memory marked), and the notes.
  function render(box, result, view) {
    const from = (ptr) => result.mapped.find((x) => x.to === ptr);
    const source = (ptr) => {
      const m = from(ptr);
      return m ? `${m.from || result.format_name}${at(m)}` : result.format_name;
    };
    const memory = result.ignored.filter((x) => x.may_change_memory).length;
    box.replaceChildren(
      el('p', `${result.format_name}${result.file ? ` · ${result.file}` : ''}: ${view.shown.length} fields set in the form.`),
      list(view.shown.map((s) => `${s.ptr} = ${show(s.value)} ← ${source(s.ptr)}`)));
    if (view.notShown.length) {
      box.append(section(`Not in the page's form (${view.notShown.length}): \`npx memfit import\` keeps them in the request`,
        view.notShown.map((s) => `${s.ptr} = ${show(s.value)} ← ${source(s.ptr)}`), true));
    }
    if (result.ignored.length) {
      box.append(section(`Keys memfit ignores (${result.ignored.length}${memory ? `, ${memory} may change memory` : ''})`,
        result.ignored.map((x) => `${x.key}${at(x)}${x.may_change_memory ? ': may change memory, not modelled' : ''}`), memory > 0));
    }
    if (result.notes.length) box.append(list(result.notes.map((n) => `Note: ${n}`)));
  }

  /// Files (a config and the DeepSpeed JSON it names) into a calculator's form: errors beside the
  /// box, else the form's new state and the list of what happened.
  function importInto(calc, files, defaults) {
    const $ = calc.$;
    if (!files.some((f) => f.text.trim())) return void ($('err-import').textContent = 'invalid_value: nothing to import: paste or drop a config file');
    const frameworks = [...$('framework').options].map((o) => o.value);
    const answer = ns.configImport.importFiles(files, { yaml: ns.YAML, presets: calc.presets.models.map((p) => p.id), frameworks });
    if (!answer.ok) {
      const e = answer.error;
      $('err-import').textContent = `${e.code}${e.path ? ` at ${e.path}` : ''}${e.line ? ` (line ${e.line})` : ''}: ${e.message}`;
      return;
    }
    const accepts = (key, value) => {
      const input = calc.root.querySelector(`[data-key="${key}"]`);
      return key === 'model' || (input?.tagName === 'SELECT' ? [...input.options].some((o) => o.value === value) : Boolean(input));
    };
    const view = toState(answer.result.request, calc.state, defaults, accepts);
    render($('import-result'), answer.result, view);
    calc.state = view.state;
    $('config').value = calc.state.config;
    calc.writeForm();
    calc.modelChanged();
    calc.update();
  }

  ns.importView = { toState, render, importInto };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});

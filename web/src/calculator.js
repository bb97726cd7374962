// The calculator: one instance per page or custom element. It reads the form into the state,
// asks the core (search, then estimate and launch for the chosen method) and renders the JSON.
// Every number shown comes from the core; text from the user or a config is only ever set as
// textContent, never parsed as HTML.
'use strict';
(function (ns) {
  const { format, urlState, charts, EstimatorError } = { ...ns, EstimatorError: ns.estimator.EstimatorError };
  const ROWS_SHOWN = 8;
  const MAX_CONFIG_IN_LINK = 64 * 1024;  // longer pasted configs are not put in the URL
  // Where a core error's JSON Pointer is shown: the first prefix that matches.
  const ERROR_SLOTS = [
    ['/model', 'err-config'], ['/training/seq_len', 'err-seq_len'], ['/training/micro_batch', 'err-micro_batch'],
    ['/training/grad_accum', 'err-grad_accum'], ['/training', 'err-training'], ['/cluster/gpus_per_node', 'err-per_node'],
    ['/cluster/gpus', 'err-gpus'], ['/cluster/gpu/memory_gib', 'err-gpu_mem'], ['/cluster/gpu_mix/0/count', 'err-gpus'],
    ['/cluster/gpu_mix/0/gpu/memory_gib', 'err-gpu_mem'], ['/cluster/gpu_mix/1/count', 'err-gpus2'], ['/cluster', 'err-cluster'],
  ];
  // Resolved training fields shown as the "default" choice of a select.
  const RESOLVED = { precision: 'precision', optimizer: 'optimizer', attention: 'attention', loss: 'loss', compile: 'compile' };

  function el(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (className) e.className = className;
    return e;
  }

  class Calculator {
    /// root: an element (or shadow root) holding the page template; api: estimator.wrap(M);
    /// options: {state, onState(state, {configInLink}), onUpdate(ms), onSearch(ms)}.
    constructor(root, api, options) {
      this.root = root;
      this.api = api;
      this.options = options;
      this.state = { ...urlState.DEFAULTS, ...options.state };
      this.showAll = false;
      this.search = null;
      this.picked = null;
      this.estimate = null;
      this.launch = null;
      this.requestText = '';
      this.$ = (id) => root.querySelector(`#${id}`);
      this.presets = api.presets();
      this.breakdownChart = new charts.Chart(this.$('breakdown-chart'), 220);
      this.timelineChart = new charts.Chart(this.$('timeline-chart'), 260);
      this.fillLists();
      this.writeForm();
      this.wire();
      this.update();
    }

    /// New state from outside (a changed hash or element attribute).
    setState(state) {
      this.state = { ...urlState.DEFAULTS, ...state };
      this.$('config').value = '';
      this.writeForm();
      this.update();
    }

    fillLists() {
      const preset = this.$('preset');
      preset.replaceChildren(...this.presets.models.map((p) => {
        const o = el('option', `${p.id}${p.synthetic ? ' (synthetic)' : ''}`);
        o.value = p.id;
        return o;
      }));
      const gpuOptions = () => this.presets.gpus.map((g) => {
        const o = el('option', `${g.name} · ${g.memory_nominal_gb} GB`);
        o.value = g.id;
        return o;
      });
      this.$('gpu').replaceChildren(...gpuOptions());
      const none = el('option', 'none');
      none.value = '';
      this.$('gpu2').replaceChildren(none, ...gpuOptions());
      for (const select of this.root.querySelectorAll('select[data-default]')) {
        const o = el('option', 'default');
        o.value = '';
        select.prepend(o);
      }
    }

    writeForm() {
      const s = this.state;
      for (const input of this.root.querySelectorAll('[data-key]')) input.value = s[input.dataset.key];
      if (s.config) {
        this.$('config').value = s.config;
        this.$('paste-box').open = true;
      } else if (this.presets.models.some((p) => p.id === s.model)) {
        this.$('preset').value = s.model;
      }
      this.$('hf-repo').value = s.hf;
      this.toggleLora();
    }

    toggleLora() {
      const lora = ['lora', 'qlora', 'dora'].includes(this.state.method);
      for (const e of this.root.querySelectorAll('.lora-only')) e.hidden = !lora;
    }

    wire() {
      const $ = this.$;
      this.root.querySelector('form').addEventListener('submit', (e) => e.preventDefault());
      for (const input of this.root.querySelectorAll('[data-key]')) {
        input.addEventListener(input.tagName === 'SELECT' ? 'change' : 'input', () => {
          this.state[input.dataset.key] = input.value.trim();
          if (input.dataset.key === 'method') this.toggleLora();
          this.update();
        });
      }
      $('preset').addEventListener('change', () => {
        this.state.model = $('preset').value;
        this.state.config = '';
        this.state.hf = '';
        $('config').value = '';
        this.update();
      });
      $('preset-filter').addEventListener('input', () => this.filterPresets());
      $('config').addEventListener('input', () => {
        this.state.config = $('config').value.trim();
        this.update();
      });
      $('config').addEventListener('dragover', (e) => e.preventDefault());
      $('config').addEventListener('drop', async (e) => {
        const file = e.dataTransfer?.files?.[0];
        if (!file) return;
        e.preventDefault();
        $('config').value = await file.text();
        this.state.config = $('config').value.trim();
        this.update();
      });
      $('hf-load').addEventListener('click', () => this.loadFromHub());
      $('hf-repo').addEventListener('keydown', (e) => { if (e.key === 'Enter') this.loadFromHub(); });
      $('methods-more').addEventListener('click', () => {
        this.showAll = !this.showAll;
        this.renderMethods();
      });
      $('launch-format').addEventListener('change', () => this.renderLaunchText());
      $('launch-copy').addEventListener('click', () => this.copy($('launch-text').textContent, 'launch config'));
      $('launch-download').addEventListener('click', () => this.download());
      $('copy-request').addEventListener('click', () => this.copy(JSON.stringify(JSON.parse(this.requestText), null, 2), 'request'));
      $('copy-result').addEventListener('click', () => this.copy(JSON.stringify(this.estimate, null, 2), 'result'));
    }

    filterPresets() {
      const words = this.$('preset-filter').value.toLowerCase().split(/\s+/).filter(Boolean);
      let first = null;
      for (const o of this.$('preset').options) {
        o.hidden = !words.every((w) => o.value.toLowerCase().includes(w));
        if (!o.hidden && !first) first = o;
      }
      if (first && this.$('preset').selectedOptions[0]?.hidden) {
        this.$('preset').value = first.value;
        this.$('preset').dispatchEvent(new Event('change'));
      }
    }

    /// The public config.json of a Hugging Face repository, fetched only when asked.
    async loadFromHub() {
      const repo = this.$('hf-repo').value.trim();
      const status = this.$('hf-status');
      if (!/^[A-Za-z0-9][\w.-]*\/[\w.-]+$/.test(repo)) {
        status.textContent = 'Enter a repository id such as meta-llama/Llama-3.1-8B.';
        return;
      }
      status.textContent = `Loading ${repo}…`;
      let response;
      try {
        response = await fetch(`https://huggingface.co/${repo}/resolve/main/config.json`, { credentials: 'omit' });
      } catch {
        status.textContent = 'Could not reach huggingface.co (offline, or blocked by this network). Paste the config.json instead.';
        return;
      }
      if (response.status === 401 || response.status === 403) {
        status.textContent = `${repo} is gated or private: accept its licence on huggingface.co, then paste its config.json here.`;
        return;
      }
      if (!response.ok) {
        status.textContent = response.status === 404
          ? `No config.json found for ${repo}. Check the id, or paste the file.`
          : `huggingface.co answered ${response.status}. Paste the config.json instead.`;
        return;
      }
      const text = await response.text();
      status.textContent = `Loaded ${repo}.`;
      this.$('config').value = text;
      this.state.config = text.trim();
      this.state.hf = repo;
      this.update();
    }

    clearErrors() {
      for (const [, id] of ERROR_SLOTS) this.$(id).textContent = '';
      this.$('error-banner').textContent = '';
    }

    showError(error) {
      if (!(error instanceof EstimatorError)) {
        console.error(error);
        this.$('error-banner').textContent = `internal error: ${error.message}`;
        return;
      }
      const text = `${error.code}${error.path ? ` at ${error.path}` : ''}: ${error.message}`;
      const slot = ERROR_SLOTS.find(([prefix]) => error.path.startsWith(prefix));
      if (slot) this.$(slot[1]).textContent = text;
      this.$('error-banner').textContent = text;
    }

    /// Inputs changed. First the estimate of the layout shown now (the method chosen before, or
    /// plain data parallelism), then, a frame later, the search over every layout, which may
    /// choose another method and estimate it in turn. `data-settled` marks the end of both.
    update() {
      const t0 = performance.now();
      const calc = this.root.querySelector('.calc');
      delete calc.dataset.settled;
      this.clearErrors();
      this.configText = this.state.config;
      try {
        this.renderModel(this.inspectModel());
        try {
          this.show(this.picked);
        } catch (error) {
          if (!this.picked || !(error instanceof EstimatorError)) throw error;
          this.picked = null;  // that layout does not apply to the new inputs
          this.show(null);
        }
      } catch (error) {
        this.fail(error);
      }
      this.options.onUpdate?.(performance.now() - t0);
      clearTimeout(this.pending);
      this.pending = setTimeout(() => this.refine(), 0);
    }

    /// The model's architecture and exact parameter count; a pasted config's errors point into it.
    inspectModel() {
      if (!this.configText) return this.api.inspect(JSON.stringify({ model: { preset: this.state.model } }));
      try {
        return this.api.inspectConfig(this.configText);
      } catch (error) {
        if (error instanceof EstimatorError) error.path = `/model/config${error.path}`;
        throw error;
      }
    }

    refine() {
      const t0 = performance.now();
      try {
        this.search = this.api.search(urlState.requestText(this.state, this.configText, { search: { top: 5, launch: false } }));
        const picked = this.pick();
        if (!this.estimate) this.clearErrors();
        if (!this.estimate || JSON.stringify(picked) !== JSON.stringify(this.picked)) this.show(picked);
        this.picked = picked;
        this.renderMethods(picked);
        this.launch = this.api.launch(this.requestText);
        this.renderLaunch();
      } catch (error) {
        this.fail(error);
      }
      this.drawCharts();
      const config = this.state.config;
      const configInLink = config.length <= MAX_CONFIG_IN_LINK;
      this.options.onState?.({ ...this.state, config: configInLink ? minified(config) : '' }, { configInLink });
      this.options.onSearch?.(performance.now() - t0);
      this.root.querySelector('.calc').dataset.settled = '1';
    }

    /// The estimate for one search candidate (or the plain request), rendered.
    show(picked) {
      this.requestText = urlState.requestText(this.state, this.configText, picked ? urlState.candidateExtra(picked.candidate) : {});
      this.$('request-json').textContent = JSON.stringify(JSON.parse(this.requestText), null, 2);
      this.estimate = this.api.estimate(this.requestText);
      this.renderEstimate(picked);
      this.root.querySelector('.results').classList.remove('stale');
    }

    fail(error) {
      this.estimate = null;
      this.showError(error);
      this.root.querySelector('.results').classList.add('stale');
    }

    /// The method shown in detail: the one the user chose, else the fastest that fits, else the
    /// family that comes closest to fitting.
    pick() {
      const rows = this.orderedRows();
      const chosen = rows.find((m) => m.method === this.state.pick && (m.best || m.closest));
      const best = this.search.recommended && rows.find((m) => m.method === this.search.recommended.method);
      const closest = rows.find((m) => !m.best && m.closest);
      const row = chosen || best || closest;
      return row ? { method: row.method, candidate: row.best || row.closest } : null;
    }

    renderModel(model) {
      this.$('total-params').textContent = format.count(model.total_params);
      this.$('model-name').textContent = `${model.model.id || '(pasted config)'} · ${model.architecture.model_type}`;
      const arch = this.$('arch');
      arch.replaceChildren();
      const a = model.architecture;
      const rows = [['kind', a.kind], ['layers', a.num_layers], ['hidden size', a.hidden_size],
        ['attention heads (kv)', `${a.num_attention_heads} (${a.num_key_value_heads})`], ['head dim', a.head_dim],
        ['attention', a.attention], ['MLP', `${a.mlp} · ${a.intermediate_size}`], ['vocabulary', a.vocab_size],
        ['position', a.position], ['norm', a.norm], ['tied embeddings', a.tie_word_embeddings]];
      if (a.moe) rows.push(['experts (top-k)', `${a.moe.num_experts} (${a.moe.top_k})`]);
      for (const [k, v] of rows) arch.append(tableRow(k, String(v)));
      this.$('warnings').textContent = (model.warnings || []).join('\n');
    }

    /// The search's method rows: those that fit (fastest first, as the core orders them), then
    /// those that do not, closest to fitting first.
    orderedRows() {
      const bytes = (m) => m.closest?.memory.device_total_bytes ?? Infinity;
      const methods = this.search.methods;
      return [...methods.filter((m) => m.best), ...methods.filter((m) => !m.best).sort((a, b) => bytes(a) - bytes(b))];
    }

    renderMethods(picked = this.picked) {
      const s = this.search;
      if (!s) return;
      const body = this.root.querySelector('#methods tbody');
      const rows = this.orderedRows();
      const pickedRow = rows.findIndex((m) => m.method === picked?.method);
      let shown = this.showAll ? rows : rows.slice(0, ROWS_SHOWN);
      if (!this.showAll && pickedRow >= ROWS_SHOWN) shown = [...shown, rows[pickedRow]];
      body.replaceChildren(...shown.map((m) => this.methodRow(m, picked)));
      const more = this.$('methods-more');
      more.hidden = rows.length <= ROWS_SHOWN;
      more.textContent = this.showAll ? 'Show fewer methods' : `Show all ${rows.length} methods`;
      const c = s.counts;
      this.$('search-counts').textContent = `· ${format.count(c.valid)} layouts valid of ${format.count(c.enumerated)}, ${format.count(c.memory_estimated)} estimated`;
      const tips = this.$('suggestions');
      tips.replaceChildren();
      if (!s.best && s.suggestions.length) {
        tips.append(el('h3', 'Nothing fits. What would:'));
        const list = el('ul');
        for (const g of s.suggestions) list.append(el('li', `${g.description} → ${g.candidate.method}, ${format.gib(g.candidate.memory.device_total_bytes)} per GPU`));
        tips.append(list);
      }
    }

    methodRow(m, picked) {
      const c = m.best || m.closest;
      const tr = el('tr');
      const recommended = this.search.recommended && this.search.recommended.method === m.method;
      if (recommended) tr.classList.add('recommended');
      if (picked?.method === m.method) {
        tr.classList.add('selected');
        tr.setAttribute('aria-selected', 'true');
      }
      const th = el('th');
      th.scope = 'row';
      const button = el('button', m.method, 'link');
      button.type = 'button';
      button.addEventListener('click', () => {
        this.state.pick = m.method;
        this.picked = { method: m.method, candidate: c };
        this.update();
      });
      th.append(button);
      if (recommended) th.append(el('span', ' ★', 'star'));
      const layout = c ? `${format.layout(c.parallel)} · mb ${c.training.micro_batch}${c.training.activation_checkpointing !== 'none' ? ` · ${c.training.activation_checkpointing} ckpt` : ''}` : '–';
      th.append(el('div', layout, 'narrow-only small muted'));
      const verdict = c ? c.memory.verdict : 'oom';
      const badge = el('span', verdict === 'oom' ? 'OOM' : verdict, `badge ${verdict}`);
      const cells = [
        el('td', layout, 'wide-only'),
        el('td', c ? format.gib(c.memory.device_total_bytes) : '–', 'num'),
        el('td'),
        el('td', m.best ? format.rate(m.best.perf.tokens_per_s) : '–', 'num'),
        el('td', m.best ? String(m.max_micro_batch) : '0', 'num wide-only'),
      ];
      cells[2].append(badge);
      tr.append(th, ...cells);
      return tr;
    }

    renderEstimate(picked) {
      const e = this.estimate;
      const fit = e.fit;
      this.$('pick-name').textContent = picked ? `· ${picked.method}` : '· data parallel (searching…)';
      this.$('peak').textContent = format.gib(e.device_total_bytes);
      const badge = this.$('verdict');
      badge.textContent = fit.verdict === 'oom' ? 'OOM' : fit.verdict;
      badge.className = `badge ${fit.verdict}`;
      // A mixed cluster compares each placed stage with its own GPUs: the most-used one is shown.
      const placed = fit.placement || [];
      const worst = placed.reduce((w, p) => (!w || p.usage_fraction > w.usage_fraction ? p : w), null);
      this.$('verdict-detail').textContent = `${format.percent(fit.usage_fraction)} of ${format.gib(fit.gpu_memory_bytes)} on ${worst ? worst.gpu : e.gpu.name}` +
        ` · device total (nvidia-smi); peak allocated ${format.gib(e.peak_allocated_bytes)}, reserved ${format.gib(e.peak_reserved_bytes)}` +
        (e.rank_kind !== 'all ranks' ? ` · most-loaded rank: ${e.rank_kind}` : '') +
        (placed.length ? ` · placed: ${placed.map((p) => `${p.rank_kind} on ${p.gpu} (${format.percent(p.usage_fraction)})`).join(', ')}` : '');
      this.$('max-mb').textContent = `${fit.max_micro_batch}${fit.max_micro_batch_capped ? '+' : ''} (running ${e.training.micro_batch}, accumulation ${e.training.grad_accum})`;
      this.$('throughput').textContent = `${format.rate(e.perf.tokens_per_s)} tokens/s · MFU ${format.percent(e.perf.mfu)}`;
      this.$('step-time').textContent = format.seconds(e.perf.step_time_s);
      this.$('peak-at').textContent = `${e.peak.phase}: ${e.peak.label}`;
      const table = this.$('breakdown');
      table.replaceChildren();
      for (const [k, v] of Object.entries(e.breakdown).filter(([, b]) => b > 0).sort((a, b) => b[1] - a[1])) {
        table.append(tableRow(format.category(k), format.gib(v, 2)));
      }
      table.append(tableRow('device total', format.gib(e.device_total_bytes, 2)));
      for (const [key, field] of Object.entries(RESOLVED)) {
        const option = this.$(key).querySelector('option[value=""]');
        if (option) option.textContent = `default (${String(e.training[field]).replace(/_/g, ' ')})`;
      }
      const ckpt = this.$('ckpt').querySelector('option[value=""]');
      if (ckpt) ckpt.textContent = `search (now ${e.training.activation_checkpointing})`;
    }

    /// The charts follow the numbers (drawn once per update, after the search settled the method).
    drawCharts() {
      const e = this.estimate;
      if (!e) {
        this.breakdownChart.clear();
        this.timelineChart.clear();
        return;
      }
      charts.drawBreakdown(this.breakdownChart, e.breakdown);
      if (e.timeline && e.timeline.length) {
        charts.drawTimeline(this.timelineChart, e.timeline);
        this.$('timeline-note').textContent = `Allocated bytes after each event of the steady-state step (${e.rank_kind}); the runtime, allocator cache and workspaces come on top.`;
      } else {
        this.timelineChart.clear();
      }
    }

    renderLaunch() {
      const select = this.$('launch-format');
      const previous = select.value;
      select.replaceChildren(...this.launch.formats.map((f) => {
        const o = el('option', `${f.file_name}${f.supported ? '' : ' (cannot express this layout)'}`);
        o.value = f.format;
        return o;
      }));
      const keep = this.launch.formats.find((f) => f.format === previous);
      const first = this.launch.formats.find((f) => f.supported) || this.launch.formats[0];
      select.value = (keep || first).format;
      this.renderLaunchText();
    }

    renderLaunchText() {
      const f = this.launch.formats.find((x) => x.format === this.$('launch-format').value);
      this.$('launch-text').textContent = f.text;
      this.$('launch-notes').textContent = (f.notes || []).join(' ');
    }

    async copy(text, what) {
      const status = this.$('copy-status');
      try {
        await navigator.clipboard.writeText(text);
        status.textContent = `Copied the ${what}.`;
      } catch {
        status.textContent = `Could not copy the ${what}: select it and copy by hand.`;
      }
    }

    download() {
      const f = this.launch.formats.find((x) => x.format === this.$('launch-format').value);
      const url = URL.createObjectURL(new Blob([f.text], { type: 'text/plain' }));
      const a = el('a');
      a.href = url;
      a.download = f.file_name;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    }
  }

  function tableRow(label, value) {
    const tr = el('tr');
    tr.append(el('th', label), el('td', value, 'num'));
    return tr;
  }

  /// A pasted config compacted for the link when it is valid JSON; otherwise as typed.
  function minified(text) {
    try {
      return JSON.stringify(JSON.parse(text));
    } catch {
      return text;
    }
  }

  ns.Calculator = Calculator;
})(globalThis.memfitWeb = globalThis.memfitWeb || {});

// The calculator: one instance per page or custom element. It reads the form into the state,
// asks the core (search, then estimate and launch for the chosen method) and renders the JSON.
// Every number shown comes from the core; text from the user or a config is only ever set as
// textContent, never parsed as HTML.
'use strict';
(function (ns) {
  const { format, urlState, charts, models, levers, EstimatorError } = { ...ns, EstimatorError: ns.estimator.EstimatorError };
  const ROWS_SHOWN = 8;
  const MAX_CONFIG_IN_LINK = 64 * 1024;  // longer pasted configs are not put in the URL
  // Where a core error's JSON Pointer is shown: the first prefix that matches.
  const ERROR_SLOTS = [
    ['/model', 'err-config'], ['/training/lora', 'err-lora'], ['/training/trainable_tokens', 'err-tokens'], ['/training/seq_len', 'err-seq_len'], ['/training/micro_batch', 'err-micro_batch'],
    ['/training/grad_accum', 'err-grad_accum'], ['/training/framework_version', 'err-fw_version'], ['/training', 'err-training'], ['/cluster/gpus_per_node', 'err-per_node'],
    ['/cluster/gpus', 'err-gpus'], ['/cluster/gpu/memory_gib', 'err-gpu_mem'], ['/cluster/gpu_mix/0/count', 'err-gpus'],
    ['/cluster/gpu_mix/0/gpu/memory_gib', 'err-gpu_mem'], ['/cluster/gpu_mix/1/count', 'err-gpus2'], ['/cluster', 'err-cluster'],
  ];
  // Resolved training fields shown as the "default" choice of a select.
  const RESOLVED = { precision: 'precision', optimizer: 'optimizer', attention: 'attention', loss: 'loss', compile: 'compile' };
  const VERDICT_TEXT = { fits: 'fits', tight: 'tight', oom: 'OOM', host_oom: 'host OOM', error: 'error' };
  // The rows of "Pinned and now": a label and the summary cell it copies.
  const COMPARED = [['Setup', 'sum-setup'], ['Method', 'sum-method'], ['Verdict', 'sum-badge'], ['Peak per GPU', 'sum-peak'],
    ['Host memory per node', 'sum-host'], ['Largest micro-batch', 'sum-mb'], ['Step time', 'sum-step'], ['Throughput', 'throughput']];
  // Each part of the peak: what it is, and the setting that shrinks it (the field's id).
  const PARTS = {
    weights_bytes: ['The parameters, in the training dtype.', 'QLoRA stores the base in 4 bits; ZeRO-3/FSDP, TP or PP rows split it', 'method'],
    master_weights_bytes: ['An fp32 copy of the trainable weights (mixed precision).', 'pure bf16 precision, or a ZeRO row', 'precision'],
    gradients_bytes: ['One gradient per trainable weight.', 'LoRA trains few weights; ZeRO-2/3 rows split them', 'method'],
    optimizer_states_bytes: ["The optimizer's moments: AdamW keeps two fp32 values per trainable weight.", 'an 8-bit optimizer, LoRA, or an offload or ZeRO row', 'optimizer'],
    activations_bytes: ['Saved in forward for backward; grows with micro-batch × sequence length.', 'activation checkpointing, or a smaller micro-batch with gradient accumulation', 'ckpt'],
    logits_loss_bytes: ['The logits over the whole vocabulary and the loss, often in fp32.', 'the fused or chunked loss kernel, or a smaller micro-batch', 'loss'],
    temporaries_bytes: ['Short-lived buffers of the operation at the peak.', 'a memory-efficient attention kernel (eager keeps the s × s scores)', 'attention'],
    communication_bytes: ['Buffers for gathering and reducing across GPUs.'],
    allocator_cache_bytes: ["Blocks PyTorch's caching allocator holds but does not use (fragmentation)."],
    cublas_workspace_bytes: ["cuBLAS's matmul workspace, fixed per process."],
    cuda_context_bytes: ['The CUDA context, fixed per process.'],
    outside_allocator_bytes: ["Paged optimizer states, outside PyTorch's allocator.", 'a non-paged 8-bit optimizer', 'optimizer'],
    nccl_bytes: ["NCCL's communicator buffers."],
  };

  /// memfit-import.js (the importer and the YAML parser), once: beside the page, or beside the
  /// element's script. A single saved file has no second file: the error says so.
  function loadImporter() {
    if (ns.configImport && ns.YAML && ns.importView) return Promise.resolve();
    ns.importerLoading ??= new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = ns.importerUrl || 'memfit-import.js';
      script.onload = resolve;
      script.onerror = () => {
        ns.importerLoading = null;
        reject(new Error(`${script.src} could not be loaded (it sits beside index.html; a page saved as one file has no importer): use \`npx memfit import <file>\``));
      };
      document.head.append(script);
    });
    return ns.importerLoading;
  }

  const readFiles = (list) => Promise.all([...list].map(async (f) => ({ name: f.name, text: await f.text() })));

  function el(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (className) e.className = className;
    return e;
  }

  class Calculator {
    /// root: an element (or shadow root) holding the page template; api: estimator.wrap(M), or
    /// null while the module compiles (the form is built meanwhile; start(api) computes);
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
      this.failed = false;
      this.$ = (id) => root.querySelector(`#${id}`);
      this.started = new Promise((resolve) => { this.markStarted = resolve; });
      // The preset lists wait until the first estimate is on screen (refine fills them): until
      // then each list holds the value in use alone.
      this.presets = null;
      this.breakdownChart = new charts.Chart(this.$('breakdown-chart'), 220);
      this.timelineChart = new charts.Chart(this.$('timeline-chart'), 260);
      this.addDefaultOptions();
      this.placeholderLists();
      this.writeForm();
      this.wire();
      if (api) this.start(api);
    }

    /// The module is ready: the first result for the state the form holds now.
    start(api) {
      this.api = api;
      this.markStarted();
      this.update();
    }

    /// New state from outside (a changed hash or element attribute).
    setState(state) {
      this.state = { ...urlState.DEFAULTS, ...state };
      this.$('config').value = '';
      this.writeForm();
      this.update();
    }

    /// Before the presets are read: the model and GPUs in use as the lists' only options.
    placeholderLists() {
      for (const [id, key] of [['preset', 'model'], ['gpu', 'gpu'], ['gpu2', 'gpu2']]) {
        const o = el('option', this.state[key] || 'none');
        o.value = this.state[key];
        this.$(id).replaceChildren(o);
      }
    }

    /// The preset and GPU lists from the core, once; the form shows the state in them.
    fillLists() {
      if (this.presets || !this.api) return;
      this.presets = this.api.presets();
      const groups = new Map();
      for (const p of models.sortPresets(this.presets.models)) {
        const family = models.familyOf(p);
        if (!groups.has(family)) groups.set(family, el('optgroup'));
        const o = el('option', `${p.id}${p.synthetic ? ' (synthetic)' : ''}`);
        o.value = p.id;
        if (p.synthetic) o.dataset.synthetic = '1';
        groups.get(family).append(o);
      }
      for (const [family, group] of groups) group.label = family;
      this.$('preset').replaceChildren(...groups.values());
      const gpuOptions = () => this.presets.gpus.map((g) => {
        const o = el('option', `${g.name} · ${g.memory_nominal_gb} GB`);
        o.value = g.id;
        return o;
      });
      this.$('gpu').replaceChildren(...gpuOptions());
      const none = el('option', 'none');
      none.value = '';
      this.$('gpu2').replaceChildren(none, ...gpuOptions());
      for (const id of ['gpu', 'gpu2']) this.$(id).value = this.state[id];
      this.syncPresetSelect();
      if (this.$('preset-filter').value) this.filterPresets();
    }

    addDefaultOptions() {
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
      }
      this.syncPresetSelect();
      this.$('hf-repo').value = s.hf;
      this.toggleMethodFields();
    }

    /// The preset list shows what is in use: the preset, or a placeholder for a pasted config.
    syncPresetSelect() {
      const select = this.$('preset');
      let placeholder = select.querySelector('option[data-config]');
      if (this.state.config) {
        if (!placeholder) {
          placeholder = el('option', '(the config.json below)');
          placeholder.value = '';
          placeholder.disabled = true;
          placeholder.dataset.config = '1';
          select.prepend(placeholder);
        }
        select.value = '';
      } else {
        placeholder?.remove();
        if (!this.presets) this.placeholderLists();
        else if (this.presets.models.some((p) => p.id === this.state.model)) select.value = this.state.model;
      }
    }

    /// Another model: the chosen row no longer applies; the recommendation takes over.
    modelChanged() {
      this.state.pick = '';
      this.picked = null;
      this.syncPresetSelect();
    }

    /// Fields that belong to some methods (data-methods="lora qlora dora") show only for those.
    toggleMethodFields() {
      for (const e of this.root.querySelectorAll('[data-methods]')) e.hidden = !e.dataset.methods.split(' ').includes(this.state.method);
    }

    wire() {
      const $ = this.$;
      const form = this.root.querySelector('form');
      form.addEventListener('submit', (e) => e.preventDefault());
      // The target is read now: in a shadow root (the element) the event's target is null after dispatch.
      form.addEventListener('focusin', (e) => {
        const field = e.target;
        requestAnimationFrame(() => this.keepClearOfSummary(field));
      });
      for (const input of this.root.querySelectorAll('[data-key]')) {
        input.addEventListener(input.tagName === 'SELECT' ? 'change' : 'input', () => {
          this.state[input.dataset.key] = input.value.trim();
          if (input.dataset.key === 'method') this.toggleMethodFields();
          this.update();
        });
      }
      $('preset').addEventListener('change', () => {
        this.state.model = $('preset').value;
        this.state.config = '';
        this.state.hf = '';
        $('config').value = '';
        this.modelChanged();
        this.update();
      });
      $('preset-filter').addEventListener('input', () => this.filterPresets());
      $('config').addEventListener('input', () => {
        this.state.config = $('config').value.trim();
        this.modelChanged();
        this.update();
      });
      $('config').addEventListener('dragover', (e) => e.preventDefault());
      $('config').addEventListener('drop', async (e) => {
        const file = e.dataTransfer?.files?.[0];
        if (!file) return;
        e.preventDefault();
        $('config').value = await file.text();
        this.state.config = $('config').value.trim();
        this.state.hf = '';
        this.modelChanged();
        this.update();
      });
      this.wireImport();
      $('hf-load').addEventListener('click', () => this.loadFromHub());
      $('hf-repo').addEventListener('keydown', (e) => { if (e.key === 'Enter') this.loadFromHub(); });
      $('back-to-star').addEventListener('click', () => {
        this.state.pick = '';
        this.picked = null;
        this.focusMethod = this.starMethod;
        this.update();
      });
      $('error-goto').addEventListener('click', () => this.errorField?.focus());
      $('range-goto').addEventListener('click', () => $('fw_version').focus());
      $('methods-more').addEventListener('click', () => {
        this.showAll = !this.showAll;
        this.renderMethods();
      });
      $('launch-format').addEventListener('change', () => this.renderLaunchText());
      $('launch-copy').addEventListener('click', () => this.copy($('launch-text').textContent, 'launch config'));
      $('launch-download').addEventListener('click', () => this.download());
      for (const id of ['breakdown-chart', 'timeline-chart']) $(`${id}-png`).addEventListener('click', () => this.savePng(id));
      $('pin').addEventListener('click', () => {
        this.pinned = { state: { ...this.state }, cells: this.comparedCells() };
        this.renderCompare();
      });
      $('compare-unpin').addEventListener('click', () => {
        this.pinned = null;
        this.renderCompare();
      });
      $('compare-restore').addEventListener('click', () => {
        this.state = { ...this.pinned.state };
        this.picked = null;
        this.writeForm();
        this.update();
      });
      $('copy-link').addEventListener('click', () => this.copy(location.href, 'link', 'link-status'));
      $('copy-request').addEventListener('click', () => this.copy(JSON.stringify(JSON.parse(this.requestText), null, 2), 'request'));
      $('copy-result').addEventListener('click', () => this.copy(JSON.stringify(this.estimate, null, 2), 'result'));
    }

    /// Config import: pasted, chosen or dropped files (a config and the DeepSpeed JSON it names).
    wireImport() {
      const $ = this.$;
      const text = $('import-text');
      $('import-run').addEventListener('click', () => this.importConfig([{ name: '', text: text.value }]));
      $('import-file').addEventListener('change', async () => this.importConfig(await readFiles($('import-file').files)));
      text.addEventListener('dragover', (e) => e.preventDefault());
      text.addEventListener('drop', async (e) => {
        if (!e.dataTransfer?.files?.length) return;
        e.preventDefault();
        const files = await readFiles(e.dataTransfer.files);
        text.value = files[0].text;
        this.importConfig(files);
      });
    }

    /// The importer and its YAML parser load on the first import (import_view.js fills the form).
    async importConfig(files) {
      await this.started;  // an import before the module is ready waits for it
      this.fillLists();  // the importer matches the presets' ids
      const err = this.$('err-import');
      err.textContent = '';
      this.$('import-result').replaceChildren();
      try {
        await loadImporter();
      } catch (error) {
        err.textContent = `importer_unavailable: ${error.message}`;
        return;
      }
      ns.importView.importInto(this, files, urlState.DEFAULTS);
    }

    /// Narrows the list. When the model in use is filtered out, the first real (not synthetic)
    /// match is used, and the status line says so; a synthetic model is only used when chosen.
    /// A field focused under the sticky summary (Shift+Tab upwards) scrolls out from under it, once
    /// the browser has scrolled it into view.
    keepClearOfSummary(field) {
      const bar = this.$('summary').getBoundingClientRect();
      const top = field.getBoundingClientRect().top;
      if (top < bar.bottom && top >= bar.top) window.scrollBy(0, top - bar.bottom - 8);
    }

    filterPresets() {
      const select = this.$('preset');
      const words = this.$('preset-filter').value.toLowerCase().split(/\s+/).filter(Boolean);
      const options = [...select.options].filter((o) => !o.dataset.config);
      for (const o of options) o.hidden = !words.every((w) => o.value.toLowerCase().includes(w));
      for (const g of select.querySelectorAll('optgroup')) g.hidden = ![...g.children].some((o) => !o.hidden);
      const shown = options.filter((o) => !o.hidden);
      const current = select.selectedOptions[0];
      const status = this.$('preset-filter-status');
      const inUse = this.state.config ? 'the pasted config' : this.state.model;
      if (!words.length) status.textContent = '';
      else if (!shown.length) status.textContent = `No preset matches; still using ${inUse}.`;
      else if (current && !current.hidden && !current.dataset.config) status.textContent = `${shown.length} presets match.`;
      else {
        const first = shown.find((o) => !o.dataset.synthetic);
        if (!first) {
          status.textContent = `Only synthetic test models match: choose one in the list to use it; still using ${inUse}.`;
          return;
        }
        select.value = first.value;
        select.dispatchEvent(new Event('change'));
        status.textContent = `${shown.length} presets match; now using ${first.value}.`;
      }
    }

    /// The public config.json of a Hugging Face repository, fetched only when asked.
    /// A repository id or URL; the token (optional) is read from its field at this moment and
    /// kept nowhere else. A failure says so and names the model still in use.
    async loadFromHub() {
      const parsed = models.parseHubInput(this.$('hf-repo').value);
      if (parsed.error) return this.hubStatus(parsed.error, true);
      const { repo, revision } = parsed;
      const token = this.$('hf-token').value.trim();
      const still = ` Still using ${this.state.config ? (this.state.hf || 'the pasted config') : this.state.model}.`;
      this.hubStatus(`Loading ${repo}…`, false);
      let response;
      try {
        response = await fetch(`https://huggingface.co/${repo}/resolve/${encodeURIComponent(revision)}/config.json`,
          { credentials: 'omit', headers: token ? { Authorization: `Bearer ${token}` } : {} });
      } catch {
        return this.hubStatus(`Could not load ${repo}: huggingface.co is not reachable (offline, or blocked by this network). Paste its config.json instead.${still}`, true);
      }
      if (response.status === 401 || response.status === 403) {
        const preset = this.presets?.models.some((p) => p.id === repo) ? ` ${repo} is also a preset: choose it in the list above.` : '';
        return this.hubStatus(token
          ? `Could not load ${repo}: huggingface.co refused the token (it needs read access, and the model's licence must be accepted).${preset}${still}`
          : `Could not load ${repo}: it is gated or private. Accept its licence on huggingface.co and enter an access token above, or paste its config.json.${preset}${still}`, true);
      }
      if (!response.ok) {
        return this.hubStatus(response.status === 404
          ? `Could not load ${repo}: no config.json at ${revision}. Check the id, or paste the file.${still}`
          : `Could not load ${repo}: huggingface.co answered ${response.status}. Paste the config.json instead.${still}`, true);
      }
      const text = await response.text();
      this.$('config').value = text;
      this.state.config = text.trim();
      this.state.hf = repo;
      this.modelChanged();
      this.update();
      if (this.failed) this.hubStatus(`Fetched ${repo}, but memfit cannot use its config.json: see the error under it.`, true);
      else this.hubStatus(`Loaded ${repo}: ${this.$('total-params').textContent} parameters.`, false);
    }

    hubStatus(text, failed) {
      const status = this.$('hf-status');
      status.textContent = text;
      status.classList.toggle('error', failed);
      status.classList.toggle('muted', !failed);
    }

    clearErrors() {
      for (const [, id] of ERROR_SLOTS) this.$(id).textContent = '';
      this.$('error-banner').hidden = true;
      this.$('error-text').textContent = '';
    }

    /// One message, in the banner and next to its field (found by the field's aria-describedby).
    showError(error) {
      let text = `internal error: ${error.message}`;
      this.errorField = null;
      if (error instanceof EstimatorError) {
        text = `${error.code}${error.path ? ` at ${error.path}` : ''}: ${error.message}`;
        if (error.code === 'invalid_json' && error.path.startsWith('/model/config') && /^\s*\{\s*'/.test(this.configText)) {
          text += ' (this looks like a Python dict: JSON needs double quotes and true, false, null)';
        }
        const slot = ERROR_SLOTS.find(([prefix]) => error.path.startsWith(prefix));
        if (slot) {
          this.$(slot[1]).textContent = text;
          this.errorField = this.root.querySelector(`[aria-describedby~="${slot[1]}"]`);
        }
      } else {
        console.error(error);
      }
      this.$('error-text').textContent = text;
      this.$('error-goto').hidden = !this.errorField;
      this.$('error-banner').hidden = false;
    }

    /// Inputs changed. First the estimate of the layout shown now (the method chosen before, or
    /// plain data parallelism), then, a frame later, the search over every layout, which may
    /// choose another method and estimate it in turn. `data-settled` marks the end of both.
    update() {
      if (!this.api) return;  // start() runs it with the state as it is then
      const t0 = performance.now();
      const calc = this.root.querySelector('.calc');
      delete calc.dataset.settled;
      delete calc.dataset.levers;
      // Page-only fields: checked here, they never stop the estimate.
      this.$('err-host_mem').textContent = this.state.host_mem === '' || Number(this.state.host_mem) > 0 ? ''
        : `host memory per node must be a positive number of GiB, got ${this.state.host_mem}`;
      this.$('err-train_tokens').textContent = this.state.train_tokens === '' || Number(this.state.train_tokens) > 0 ? ''
        : `tokens to train must be a positive number such as 2e9, got ${this.state.train_tokens}`;
      clearTimeout(this.leverTimer);
      format.setUnit(this.state.units);
      this.clearErrors();
      this.failed = false;
      this.configText = this.state.config;
      try {
        // A pasted config is inspected first (its errors point into it); a preset's name and
        // size come with the estimate, its architecture after the first paint (refine).
        if (this.configText) this.renderModel(this.inspectModel());
        try {
          this.show(this.picked);
        } catch (error) {
          if (!this.picked || !(error instanceof EstimatorError)) throw error;
          this.picked = null;  // that layout does not apply to the new inputs
          this.show(null);
        }
        if (!this.configText) this.renderModelName(this.estimate.model);
      } catch (error) {
        this.fail(error);
      }
      this.options.onUpdate?.(performance.now() - t0);
      this.refineAfterPaint();
    }

    /// The search once the estimate just rendered is on screen (the frame after it), or after a
    /// second where no frame comes (a hidden document draws none); a newer update supersedes it.
    refineAfterPaint() {
      const token = {};
      this.pending = token;
      const run = () => {
        if (this.pending !== token) return;
        this.pending = null;
        this.refine();
      };
      requestAnimationFrame(() => setTimeout(run, 0));
      setTimeout(run, document.hidden ? 0 : 1000);
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

    /// The search, for inputs the estimate accepted (an error already shown stays the only one:
    /// the search's request wraps a pasted config, so its positions would not be the user's).
    refine() {
      const t0 = performance.now();
      this.fillLists();
      format.setUnit(this.state.units);
      if (!this.failed) {
        try {
          if (!this.configText) this.renderModel(this.inspectModel());
          this.search = this.api.search(urlState.requestText(this.state, this.configText, { search: { top: 5, launch: false } }));
          const picked = this.pick();
          if (!this.estimate || JSON.stringify(picked) !== JSON.stringify(this.picked)) this.show(picked);
          this.picked = picked;
          this.renderMethods(picked);
          this.launch = this.api.launch(this.requestText);
          this.renderLaunch();
          this.announce();
          this.renderCompare();
        } catch (error) {
          this.fail(error);
        }
      }
      this.drawCharts();
      const config = this.state.config;
      const configInLink = config.length <= MAX_CONFIG_IN_LINK;
      this.options.onState?.({ ...this.state, config: configInLink ? minified(config) : '' }, { configInLink });
      this.options.onSearch?.(performance.now() - t0);
      this.root.querySelector('.calc').dataset.settled = '1';
      if (!this.failed && this.search && !this.search.best) this.leverTimer = setTimeout(() => this.proposeLevers(), 0);
    }

    /// The estimate for one search candidate (or the plain request), rendered.
    show(picked) {
      this.requestText = urlState.requestText(this.state, this.configText, picked ? urlState.candidateExtra(picked.candidate) : {});
      this.$('request-json').textContent = JSON.stringify(JSON.parse(this.requestText), null, 2);
      this.estimate = this.api.estimate(this.requestText);
      this.renderEstimate(picked);
      this.root.querySelector('.results').classList.remove('stale');
    }

    /// An error: the headline and the summary show it instead of the last numbers; the sections
    /// below keep the last valid result, marked as such.
    fail(error) {
      this.estimate = null;
      this.failed = true;
      this.showError(error);
      this.root.querySelector('.results').classList.add('stale');
      this.$('stale-note').hidden = false;
      this.$('pick-note').hidden = true;
      this.$('range-note').hidden = true;
      this.$('methods-range').hidden = true;
      this.$('pick-name').textContent = '';
      for (const id of ['peak', 'verdict-detail', 'max-mb', 'throughput', 'step-time', 'host-mem', 'peak-at', 'train-time']) this.$(id).textContent = '–';
      this.$('breakdown').replaceChildren();
      this.$('suggestions').replaceChildren();
      this.setBadge(this.$('verdict'), 'error');
      this.renderSummary(null);
      this.announce();
      this.renderCompare();
    }

    setBadge(badge, verdict) {
      badge.textContent = VERDICT_TEXT[verdict];
      badge.className = `badge ${verdict === 'host_oom' ? 'oom' : verdict}`;
    }

    /// The core's verdict: fits, tight, oom, or host_oom when offload needs more host memory
    /// per node than the node has.
    shownVerdict(e) {
      return e.fit.verdict;
    }

    /// Host memory per node as shown: none, or the amount (and, when the core found it out of
    /// memory on the host, the node's memory it exceeds).
    hostText(bytes, hostOom = false, capacity = null) {
      if (!(bytes > 0)) return 'none';
      return hostOom && capacity ? `${format.memory(bytes)}, more than the ${format.memory(capacity)} per node` : format.memory(bytes);
    }

    estimateHostText(e) {
      return this.hostText(e.host_bytes_per_node, e.fit.verdict === 'host_oom', e.fit.host_memory_bytes_per_node);
    }

    /// The sticky summary: verdict, peak against capacity, host memory, largest micro-batch, step time.
    renderSummary(e) {
      const $ = this.$;
      this.setBadge($('sum-badge'), e ? this.shownVerdict(e) : 'error');
      $('sum-method').textContent = e ? this.$('pick-name').textContent.replace(/^· /, '') : 'fix the error to see a result';
      if (!e) {
        for (const id of ['sum-setup', 'sum-peak', 'sum-host', 'sum-mb', 'sum-step']) $(id).textContent = '–';
        return;
      }
      const fit = e.fit, t = e.training;
      $('sum-setup').textContent = `${e.model.id || this.state.hf || 'pasted config'} · ${t.method} · ${e.cluster.gpus} × ${e.gpu.name} · sequence ${t.seq_len} · micro-batch ${t.micro_batch} × accumulation ${t.grad_accum} · ${e.framework.name}`;
      const range = this.rangeOf(e);
      const peak = range ? `${format.memory(range.low)}–${format.memory(range.high)}` : format.memory(fit.compared_bytes ?? e.device_total_bytes);
      $('sum-peak').textContent = `${peak} of ${format.memory(fit.gpu_memory_bytes)} (${format.percent(fit.usage_fraction)}${range ? ' at the high end' : ''})`;
      $('sum-host').textContent = this.estimateHostText(e);
      $('sum-mb').textContent = `${fit.max_micro_batch}${fit.max_micro_batch_capped ? '+' : ''}`;
      $('sum-step').textContent = ['oom', 'host_oom'].includes(this.shownVerdict(e)) ? '– (does not fit)' : format.seconds(e.perf.step_time_s);
    }

    comparedCells() {
      return COMPARED.map(([, id]) => this.$(id).textContent);
    }

    /// Two setups side by side: the one pinned and the one shown now (the summary's cells).
    renderCompare() {
      this.$('compare').hidden = !this.pinned;
      if (!this.pinned) return;
      const now = this.comparedCells();
      this.$('compare-rows').replaceChildren(...COMPARED.map(([label], i) => {
        const tr = el('tr');
        const th = el('th', label);
        th.scope = 'row';
        tr.append(th, el('td', this.pinned.cells[i]), el('td', now[i], now[i] === this.pinned.cells[i] ? '' : 'changed'));
        return tr;
      }));
    }

    /// The live region: the verdict only, once per settled update, and only when it changed.
    announce() {
      const e = this.estimate;
      const text = e
        ? `${VERDICT_TEXT[this.shownVerdict(e)]}: ${format.percent(e.fit.usage_fraction)} of GPU memory${this.rangeOf(e) ? ' at the high end of the range' : ''}${e.host_bytes_per_node > 0 ? `, host memory per node ${this.estimateHostText(e)}` : ''}`
        : `error: ${this.$('error-text').textContent}`;
      if (this.$('sum-live').textContent !== text) this.$('sum-live').textContent = text;
    }

    /// The method shown in detail: the one the user chose, else the ★ (the fastest that fits
    /// with margin), else the first row (the fastest tight one, or the closest to fitting).
    pick() {
      const rows = this.orderedRows();
      const chosen = this.state.pick && rows.find((m) => m.method === this.state.pick && (m.best || m.closest));
      const row = chosen || this.starRow(rows) || rows[0];
      return row ? { method: row.method, candidate: row.best || row.closest } : null;
    }

    /// The core's recommendation (never a layout out of memory on the GPUs or the host).
    starRow(rows) {
      const star = this.search.recommended;
      return star ? rows.find((m) => m.method === star.method) : null;
    }

    /// The model's name, type and parameter count (an estimate's `model`, or inspect's).
    renderModelName(model, modelType = model.model_type) {
      this.$('total-params').textContent = format.count(model.total_params);
      this.$('model-name').textContent = `${model.id || this.state.hf || '(pasted config)'} · ${modelType}`;
    }

    renderModel(model) {
      this.renderModelName({ ...model.model, total_params: model.total_params }, model.architecture.model_type);
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

    /// The search's method rows: those that fit with margin, then the tight ones (each fastest
    /// first), then those that do not fit, closest first. The ★ is therefore the first row.
    orderedRows() {
      const group = (m) => this.rowGroup(m);
      const bytes = (m) => m.closest?.memory?.device_total_bytes ?? Infinity;
      return [...this.search.methods].sort((a, b) => group(a) - group(b)
        || (group(a) < 2 ? b.best.perf.tokens_per_s - a.best.perf.tokens_per_s : bytes(a) - bytes(b)));
    }

    /// 0 fits with margin, 1 tight, 2 does not fit (on the GPUs, or in the host's memory).
    rowGroup(m) {
      if (!m.best) return 2;
      return m.best.memory?.verdict === 'fits' ? 0 : 1;
    }

    renderMethods(picked = this.picked) {
      const s = this.search;
      if (!s) return;
      const body = this.root.querySelector('#methods tbody');
      const rows = this.orderedRows();
      this.starMethod = this.starRow(rows)?.method;
      const pickedRow = rows.findIndex((m) => m.method === picked?.method);
      let shown = this.showAll ? rows : rows.slice(0, ROWS_SHOWN);
      if (!this.showAll && pickedRow >= ROWS_SHOWN) shown = [...shown, rows[pickedRow]];
      // Rebuilding the rows must not drop the keyboard focus from the row button it was on.
      const active = this.root.getRootNode().activeElement;
      const focus = this.focusMethod ?? (body.contains(active) ? active.dataset.method : null);
      this.focusMethod = null;
      body.replaceChildren(...shown.map((m) => this.methodRow(m, picked)));
      if (focus) [...body.querySelectorAll('button[data-method]')].find((b) => b.dataset.method === focus)?.focus();
      this.renderPickNote(rows, picked);
      const more = this.$('methods-more');
      more.hidden = rows.length <= ROWS_SHOWN;
      more.textContent = this.showAll ? 'Show fewer methods' : `Show all ${rows.length} methods`;
      const c = s.counts;
      this.$('search-counts').textContent = `· ${format.count(c.valid)} layouts valid of ${format.count(c.enumerated)}, ${format.count(c.memory_estimated)} estimated`;
      this.$('suggestions').replaceChildren();
    }

    /// Nothing fits: the core searches each setting that could shrink the peak, one per task (so
    /// typing is not held up; a new update cancels the rest), then the list is shown, fastest
    /// fitting first, each applied with a click. `data-levers` marks the end.
    proposeLevers(pending = null, answers = []) {
      const queue = pending ?? levers.variants(this.state, this.estimate, this.presets?.gpus);
      if (queue.length) {
        const [v, ...rest] = queue;
        let candidate = null;
        try {
          const s = this.api.search(urlState.requestText({ ...this.state, ...v.change }, this.configText, { search: { top: 1, launch: false } }));
          candidate = s.recommended || s.best;
        } catch (error) {
          if (!(error instanceof EstimatorError)) throw error;  // a variant the core refuses is no lever
        }
        // The first of a group that fits under 90 % ends the group (the least GPUs, the smallest
        // GPU kind); a tight one is kept and the next tried.
        const fits = candidate && !['oom', 'host_oom'].includes(candidate.memory.verdict) && candidate.memory.usage_fraction < 0.9;
        const next = fits && v.group ? rest.filter((r) => r.group !== v.group) : rest;
        this.leverTimer = setTimeout(() => this.proposeLevers(next, [...answers, { ...v, candidate }]), 0);
        return;
      }
      const ranked = levers.rank(answers);
      const box = this.$('suggestions');
      box.replaceChildren(el('h3', ranked.length ? 'How to make it fit' : 'No single setting memfit models makes it fit on these GPUs.'));
      const list = el('ul', undefined, 'levers');
      for (const a of ranked) {
        const m = a.candidate.memory;
        const use = el('button', `Use ${a.text}`, 'link');
        use.type = 'button';
        use.addEventListener('click', () => this.applyChange(a.change));
        const li = el('li');
        const host = m.host_bytes_per_node > 0 ? `, host ${format.memory(m.host_bytes_per_node)} per node` : '';
        li.append(use, ` → ${a.candidate.method}: ${format.memory(m.device_total_bytes)} per GPU (${format.percent(m.usage_fraction)})${host}, ${format.rate(a.candidate.perf.tokens_per_s)} tokens/s`);
        list.append(li);
      }
      box.append(list);
      this.root.querySelector('.calc').dataset.levers = '1';
    }

    /// A lever applied: its settings in the form, the recommendation back in charge.
    applyChange(change) {
      Object.assign(this.state, change);
      this.state.pick = '';
      this.picked = null;
      this.writeForm();
      this.update();
    }

    /// "Your choice" beside the ★: what the user chose, and the one click back to the ★.
    renderPickNote(rows, picked) {
      const star = this.starRow(rows);
      const mine = this.state.pick && picked?.method === this.state.pick && star && star.method !== picked.method;
      this.$('pick-note').hidden = !mine;
      if (!mine) return;
      const speed = star.best ? `, ${format.rate(star.best.perf.tokens_per_s)} tokens/s` : '';
      this.$('pick-note-text').textContent = `Your choice. ★ recommended: ${star.method} (${this.rowPeakText(star.best.memory)}, ${star.best.memory.verdict}${speed}).`;
      this.$('back-to-star-name').textContent = star.method;
    }

    methodRow(m, picked) {
      const c = m.best || m.closest;
      const tr = el('tr');
      const recommended = this.starMethod === m.method;
      if (recommended) tr.classList.add('recommended');
      const shown = picked?.method === m.method;
      if (shown) tr.classList.add('selected');
      const th = el('th');
      th.scope = 'row';
      const button = el('button', m.method, 'link');
      button.type = 'button';
      button.dataset.method = m.method;
      button.setAttribute('aria-pressed', String(shown));
      button.addEventListener('click', () => {
        this.state.pick = m.method;
        this.picked = { method: m.method, candidate: c };
        this.update();
      });
      th.append(button);
      if (recommended) th.append(el('span', ' ★', 'star'), el('span', ' (recommended)', 'sr-only'));
      if (this.state.pick === m.method && !recommended) th.append(el('span', 'your choice', 'badge choice'));
      const layout = c ? `${format.layout(c.parallel)} · mb ${c.training.micro_batch}${c.training.activation_checkpointing !== 'none' ? ` · ${c.training.activation_checkpointing} ckpt` : ''}` : '–';
      th.append(el('div', layout, 'narrow-only small muted'));
      const verdict = c ? c.memory.verdict : 'oom';
      const host = c ? c.memory.host_bytes_per_node : 0;
      const badge = el('span', VERDICT_TEXT[verdict], `badge ${verdict === 'host_oom' ? 'oom' : verdict}`);
      if (host > 0) th.lastElementChild.textContent += ` · host ${format.memory(host)} per node`;
      const cells = [
        el('td', layout, 'wide-only'),
        el('td', c ? this.rowPeakText(c.memory) : '–', 'num'),
        el('td'),
        el('td', m.best ? format.rate(m.best.perf.tokens_per_s) : '–', 'num'),
        el('td', verdict === 'host_oom' ? `${this.hostText(host)} (too much)` : this.hostText(host), 'num wide-only'),
        el('td', m.best ? String(m.max_micro_batch) : '0', 'num wide-only'),
      ];
      cells[2].append(badge);
      tr.append(th, ...cells);
      return tr;
    }

    /// A row's per-GPU peak: the core's range over the framework's dated behaviours, where it
    /// judged the row by its high end, else the one number.
    rowPeakText(memory) {
      const r = memory.device_total_range;
      return r ? `${format.memory(r.low)}–${format.memory(r.high)}` : format.memory(memory.device_total_bytes);
    }

    renderEstimate(picked) {
      const e = this.estimate;
      const fit = e.fit;
      this.$('pick-name').textContent = picked ? `· ${picked.method}` : '· data parallel (searching…)';
      const range = this.rangeOf(e);
      this.$('peak').textContent = range ? `${format.memory(range.low)}–${format.memory(range.high)}` : format.memory(e.device_total_bytes);
      this.setBadge(this.$('verdict'), this.shownVerdict(e));
      this.$('stale-note').hidden = true;
      this.renderSummary(e);
      // A mixed cluster compares each placed stage with its own GPUs: the most-used one is shown.
      const placed = fit.placement || [];
      const worst = placed.reduce((w, p) => (!w || p.usage_fraction > w.usage_fraction ? p : w), null);
      this.$('verdict-detail').textContent = `${format.percent(fit.usage_fraction)} of ${format.memory(fit.gpu_memory_bytes)} on ${worst ? worst.gpu : e.gpu.name}` +
        ` · device total (nvidia-smi); peak allocated ${format.memory(e.peak_allocated_bytes)}, reserved ${format.memory(e.peak_reserved_bytes)}` +
        (e.rank_kind !== 'all ranks' ? ` · most-loaded rank: ${e.rank_kind}` : '') +
        (placed.length ? ` · placed: ${placed.map((p) => `${p.rank_kind} on ${p.gpu} (${format.percent(p.usage_fraction)})`).join(', ')}` : '');
      this.renderRange(e);
      this.$('max-mb').textContent = `${fit.max_micro_batch}${fit.max_micro_batch_capped ? '+' : ''} (running ${e.training.micro_batch}, accumulation ${e.training.grad_accum})`;
      // No speed for a run that cannot start.
      const oom = ['oom', 'host_oom'].includes(this.shownVerdict(e));
      this.$('throughput').textContent = oom ? '– (does not fit)' : `${format.rate(e.perf.tokens_per_s)} tokens/s · MFU ${format.percent(e.perf.mfu)}`;
      this.$('step-time').textContent = oom ? '– (does not fit)' : format.seconds(e.perf.step_time_s);
      this.$('host-mem').textContent = e.host_bytes_per_node > 0
        ? `${this.estimateHostText(e)} (${e.training.offload.replace(/_/g, ' ')} offload to CPU RAM)`
        : 'none (nothing offloaded)';
      this.$('peak-at').textContent = `${e.peak.phase}: ${e.peak.label}`;
      const tokens = Number(this.state.train_tokens);
      this.$('train-time').textContent = !(tokens > 0) ? '– (set “Tokens to train”)'
        : oom ? '– (does not fit)' : `${format.duration(tokens / e.perf.tokens_per_s)} for ${format.count(tokens)} tokens`;
      const table = this.$('breakdown');
      table.replaceChildren();
      for (const [k, v] of Object.entries(e.breakdown).filter(([, b]) => b > 0).sort((a, b) => b[1] - a[1])) {
        table.append(this.partRow(k, v, e.device_total_bytes));
      }
      table.append(tableRow('device total', format.memory(e.device_total_bytes, 2)));
      for (const [key, field] of Object.entries(RESOLVED)) {
        const option = this.$(key).querySelector('option[value=""]');
        if (option) option.textContent = `default (${String(e.training[field]).replace(/_/g, ' ')})`;
      }
      const ckpt = this.$('ckpt').querySelector('option[value=""]');
      if (ckpt) ckpt.textContent = `search (now ${e.training.activation_checkpointing})`;
    }

    /// The core's range when a setting that moves memory is unknown (a framework named without
    /// its version): the device total's low and high ends over the dated behaviours, and the
    /// verdict at each end by the core's own thresholds (`fit.tight_fraction`, the GPU's memory).
    rangeOf(e) {
      const r = e.ranges?.device_total_bytes;
      if (!r || r.low === r.high) return null;
      const memory = e.fit.gpu_memory_bytes;
      const verdictAt = (bytes) => (bytes > memory ? 'oom' : bytes > e.fit.tight_fraction * memory ? 'tight' : 'fits');
      return { ...r, lowVerdict: verdictAt(r.low), highVerdict: verdictAt(r.high), variants: e.ranges.variants };
    }

    /// "Fits at the low end, OOM at the high end": the range and which end the verdict is judged by.
    renderRange(e) {
      const range = this.rangeOf(e);
      this.$('range-note').hidden = !range;
      this.$('methods-range').hidden = !range;
      if (!range) return;
      const [low, high] = [VERDICT_TEXT[range.lowVerdict], VERDICT_TEXT[range.highVerdict]];
      const ends = low === high ? `${low} at both ends` : `${low} at the low end, ${high} at the high end`;
      // Each variant names the unknown settings it takes: the version (current or a month), the checkpointing.
      const described = (v) => [
        v.framework_version === undefined ? null : v.framework_version === 'current' ? 'now' : `as of ${v.framework_version}`,
        v.activation_checkpointing === undefined ? null : `checkpointing ${v.activation_checkpointing}`,
      ].filter(Boolean).join(', ');
      const versions = range.variants.map((v) => `${format.memory(v.device_total_bytes)} ${described(v)}`).join('; ');
      const what = (e.ranges.unknown || []).map((u) => (u === '/training/framework_version' ? `${e.framework.name}'s version` : 'activation checkpointing'));
      this.$('range-text').textContent = `${what.join(' and ')} ${what.length > 1 ? 'are' : 'is'} not set: ${format.memory(range.low)} to ${format.memory(range.high)} per GPU over the plausible values (${versions}). ` +
        `${ends[0].toUpperCase()}${ends.slice(1)}; judged by the high end.`;
    }

    /// One part of the peak: its size, its share, what it is and the setting that shrinks it.
    partRow(key, bytes, total) {
      const [what, lever, fieldId] = PARTS[key] || [''];
      const tr = tableRow(format.category(key), format.memory(bytes, 2));
      const about = el('td', what, 'small');
      if (lever) {
        const go = el('button', `Smaller: ${lever}`, 'link lever');
        go.type = 'button';
        go.addEventListener('click', () => {
          const field = this.$(fieldId);
          const details = field.closest('details');
          if (details) details.open = true;
          field.focus();
        });
        about.append(el('br'), go);
      }
      tr.append(el('td', format.percent(bytes / total), 'num'), about);
      return tr;
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
        // A peak in an accumulating micro-batch is named after the same event of the one the timeline shows.
        const label = e.peak.label.replace(/ \(accumulating micro-batch\)$/, '');
        const index = e.timeline.findIndex((t) => t.phase === e.peak.phase && t.label === label && t.layer === e.peak.layer);
        const peak = { index, bytes: e.peak_tensor_bytes, name: `${e.peak.phase}: ${e.peak.label}` };
        charts.drawTimeline(this.timelineChart, e.timeline, e.step_schedule || [], e.fit.gpu_memory_bytes, peak, e.training.grad_accum);
        this.$('timeline-note').textContent = `Allocated bytes over one steady-state step (${e.rank_kind}), each event where the step-time model runs it: ` +
          `one micro-batch's layers forward, the loss, the layers backward (a tick per layer), then ${e.training.grad_accum > 1 ? 'the other micro-batches (not replayed) and ' : ''}the optimizer. ` +
          `The runtime, allocator cache and workspaces come on top. The dashed line is the GPU's memory; the dot marks the peak (${e.peak.phase}: ${e.peak.label}).`;
      } else {
        this.timelineChart.clear();
      }
    }

    renderLaunch() {
      const select = this.$('launch-format');
      const previous = select.value;
      select.replaceChildren(...this.launch.formats.map((f) => {
        const o = el('option', `${f.file_name}${f.for_framework ? ` (${this.state.framework})` : ''}${f.supported ? '' : ' (cannot express this layout)'}`);
        o.value = f.format;
        return o;
      }));
      // The chosen framework's first own format (the core marks them) when the framework changed;
      // else the one shown before.
      const own = this.launch.formats.find((f) => f.for_framework);
      const wanted = this.launchFramework === this.state.framework ? previous : own?.format;
      this.launchFramework = this.state.framework;
      const keep = this.launch.formats.find((f) => f.format === wanted);
      const first = own || this.launch.formats.find((f) => f.supported) || this.launch.formats[0];
      select.value = (keep || first).format;
      this.renderLaunchText();
    }

    renderLaunchText() {
      const f = this.launch.formats.find((x) => x.format === this.$('launch-format').value);
      this.$('launch-text').textContent = f.text;
      this.$('launch-notes').textContent = (f.notes || []).join(' ');
    }

    async copy(text, what, statusId = 'copy-status') {
      const status = this.$(statusId);
      try {
        await navigator.clipboard.writeText(text);
        status.textContent = `Copied the ${what}.`;
      } catch {
        status.textContent = `Could not copy the ${what}: select it and copy by hand.`;
      }
    }

    download() {
      const f = this.launch.formats.find((x) => x.format === this.$('launch-format').value);
      saveBlob(new Blob([f.text], { type: 'text/plain' }), f.file_name);
    }

    /// A chart as the PNG its canvas holds.
    savePng(chartId) {
      this.$(chartId).querySelector('canvas')?.toBlob((blob) => saveBlob(blob, `memfit-${chartId.replace('-chart', '')}.png`), 'image/png');
    }
  }

  function saveBlob(blob, fileName) {
    const url = URL.createObjectURL(blob);
    const a = el('a');
    a.href = url;
    a.download = fileName;
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
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

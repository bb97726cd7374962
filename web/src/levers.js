// "How to make it fit": the settings memfit models that shrink memory, each as a change of the
// page's state. The core searches every variant; this file only proposes them and orders the
// answers (it computes no memory).
'use strict';
(function (ns) {
  const num = Number;

  /// Each setting that could shrink the peak of `e` (the estimate shown) under state `s`, as
  /// {text, change, group?}; `gpus` is the preset GPU list. Variants of one group are tried in
  /// order until one fits (more GPUs: 2x, 4x, ... ; another GPU kind: by memory, smallest first).
  /// The shorter sequence last, as it changes the data.
  function variants(s, e, gpus = []) {
    const t = e.training;
    const out = [];
    if (t.loss !== 'fused') out.push(['fused linear + cross-entropy loss kernel', { loss: 'fused' }]);
    if (s.micro_batch !== '' && num(t.micro_batch) > 1) {  // an empty micro-batch is searched already
      const accum = String(t.micro_batch * t.grad_accum);
      out.push([`micro-batch 1 × gradient accumulation ${accum} (the same batch)`, { micro_batch: '1', grad_accum: accum }]);
    }
    if (s.ckpt && s.ckpt !== 'full') out.push(['full activation checkpointing', { ckpt: 'full' }]);
    if (!/8bit|4bit|sgd/.test(t.optimizer)) out.push(['8-bit AdamW optimizer states', { optimizer: 'adamw_8bit' }]);
    // The run's own settings above, all at once (where no one of them is enough).
    if (out.length > 1) out.push([`${out.map(([text]) => text.replace(/ \(the same batch\)$/, '')).join(', ')}, together`, Object.assign({}, ...out.map(([, change]) => change))]);
    if (s.method === 'full') out.push(['LoRA adapters instead of every weight', { method: 'lora' }]);
    if (s.method !== 'qlora') out.push(['QLoRA: LoRA over a 4-bit (NF4) base', { method: 'qlora' }]);
    if (!s.gpu2 && num(s.gpus) > 0) {
      for (const factor of [2, 4, 8]) {
        const count = factor * num(s.gpus);
        out.push([`${count} GPUs`, { gpus: String(count), per_node: String(Math.max(num(s.per_node), Math.min(count, 8))) }, 'gpus']);
      }
    }
    // Another GPU: the memory typed over this one's cleared, or a kind with more memory.
    if (!s.gpu2) {
      const own = gpus.find((g) => g.id === s.gpu);
      if (s.gpu_mem !== '' && own && own.memory_total_bytes > e.fit.gpu_memory_bytes) {
        out.push([`the ${own.name}'s own memory (not ${s.gpu_mem} GiB)`, { gpu_mem: '' }, 'gpu memory']);
      }
      // One kind of the same vendor per memory size, the four next sizes up.
      const sizes = new Map();
      for (const g of [...gpus].sort((a, b) => a.memory_total_bytes - b.memory_total_bytes || a.id.localeCompare(b.id))) {
        const more = own ? g.vendor === own.vendor && g.memory_nominal_gb > own.memory_nominal_gb : g.memory_total_bytes > e.fit.gpu_memory_bytes;
        if (more && !sizes.has(g.memory_nominal_gb)) sizes.set(g.memory_nominal_gb, g);
      }
      for (const g of [...sizes.values()].slice(0, 4)) out.push([`a GPU with more memory: ${g.name}`, { gpu: g.id, gpu_mem: '' }, 'gpu kind']);
    }
    if (t.seq_len >= 512) out.push([`sequence length ${t.seq_len / 2} (changes the training data)`, { seq_len: String(t.seq_len / 2) }]);
    return out.map(([text, change, group]) => ({ text, change, group }));
  }

  /// Those that fit under 90 % of GPU memory, fastest first; then the tighter ones; then another
  /// GPU kind; a shorter sequence last of all; those that still do not fit are dropped.
  function rank(answers) {
    const group = (a) => ('seq_len' in a.change ? 4 : /^gpu /.test(a.group ?? '') ? 2 : 0) + (a.candidate.memory.usage_fraction < 0.9 ? 0 : 1);
    return answers.filter((a) => a.candidate && !['oom', 'host_oom'].includes(a.candidate.memory.verdict))
      .sort((a, b) => group(a) - group(b) || b.candidate.perf.tokens_per_s - a.candidate.perf.tokens_per_s);
  }

  ns.levers = { variants, rank };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});

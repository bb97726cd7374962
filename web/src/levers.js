// "How to make it fit": the settings memfit models that shrink memory, each as a change of the
// page's state. The core searches every variant; this file only proposes them and orders the
// answers (it computes no memory).
'use strict';
(function (ns) {
  const num = Number;

  /// [text, change] for each setting that could shrink the peak of `e` (the estimate shown) under
  /// state `s`; the shorter sequence last, as it changes the data.
  function variants(s, e) {
    const t = e.training;
    const out = [];
    if (t.loss !== 'fused') out.push(['fused linear + cross-entropy loss kernel', { loss: 'fused' }]);
    if (s.micro_batch !== '' && num(t.micro_batch) > 1) {  // an empty micro-batch is searched already
      const accum = String(t.micro_batch * t.grad_accum);
      out.push([`micro-batch 1 × gradient accumulation ${accum} (the same batch)`, { micro_batch: '1', grad_accum: accum }]);
    }
    if (s.ckpt && s.ckpt !== 'full') out.push(['full activation checkpointing', { ckpt: 'full' }]);
    if (!/8bit|4bit|sgd/.test(t.optimizer)) out.push(['8-bit AdamW optimizer states', { optimizer: 'adamw_8bit' }]);
    if (s.method === 'full') out.push(['LoRA adapters instead of every weight', { method: 'lora' }]);
    if (s.method !== 'qlora') out.push(['QLoRA: LoRA over a 4-bit (NF4) base', { method: 'qlora' }]);
    if (!s.gpu2 && num(s.gpus) > 0) {
      const gpus = 2 * num(s.gpus);
      out.push([`${gpus} GPUs`, { gpus: String(gpus), per_node: String(Math.max(num(s.per_node), Math.min(gpus, 8))) }]);
    }
    if (t.seq_len >= 512) out.push([`sequence length ${t.seq_len / 2} (changes the training data)`, { seq_len: String(t.seq_len / 2) }]);
    return out.map(([text, change]) => ({ text, change }));
  }

  /// Those that fit under 90 % of GPU memory, fastest first; then the tighter ones; a shorter
  /// sequence last of all; those that still do not fit are dropped.
  function rank(answers) {
    const group = (a) => ('seq_len' in a.change ? 2 : 0) + (a.candidate.memory.usage_fraction < 0.9 ? 0 : 1);
    return answers.filter((a) => a.candidate && a.candidate.memory.verdict !== 'oom')
      .sort((a, b) => group(a) - group(b) || b.candidate.perf.tokens_per_s - a.candidate.perf.tokens_per_s);
  }

  ns.levers = { variants, rank };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});

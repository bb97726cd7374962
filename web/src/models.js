// Choosing a model: the preset list in the order people look for it (popular families first,
// each by size) and the Hugging Face repository a typed id or URL names. Display only: sizes are
// read from the preset's name for ordering; every parameter count shown comes from the core.
'use strict';
(function (ns) {
  /// Organisations whose models are fine-tuned most, in this order; the rest follow by name.
  const POPULAR_ORGS = ['meta-llama', 'qwen', 'google', 'mistralai', 'mistral-community', 'openai', 'deepseek-ai', 'microsoft'];
  const UNIT = { m: 1e6, b: 1e9, t: 1e12 };

  /// "Llama-3.1-70B" -> 70e9, "Mixtral-8x7B" -> 56e9, "Qwen-1_8B" -> 1.8e9, "pythia-160m" -> 160e6;
  /// Infinity when the name states no size (sorted after the sized ones of its family).
  function nameSize(name) {
    const m = /(?:^|[-_])(?:(\d+)x)?(\d+(?:[._]\d+)?)([mbt])(?=$|[-_.\d])/i.exec(name);
    if (!m) return Infinity;
    return (m[1] ? Number(m[1]) : 1) * Number(m[2].replace('_', '.')) * UNIT[m[3].toLowerCase()];
  }

  const orgOf = (id) => id.split('/')[0];

  /// Families (organisations) with the popular ones first, synthetic test models last; inside a
  /// family by size, then newer names first ("Llama-3.1-70B" before "Llama-2-70b").
  function sortPresets(models) {
    const rank = (p) => {
      if (p.synthetic) return POPULAR_ORGS.length + 1;
      const i = POPULAR_ORGS.indexOf(orgOf(p.id).toLowerCase());
      return i < 0 ? POPULAR_ORGS.length : i;
    };
    return [...models].sort((a, b) => rank(a) - rank(b)
      || (rank(a) >= POPULAR_ORGS.length && orgOf(a.id).localeCompare(orgOf(b.id), 'en', { sensitivity: 'base' }))
      || nameSize(a.name) - nameSize(b.name)
      || b.name.localeCompare(a.name, 'en', { numeric: true }));
  }

  /// The group label of a preset in the list.
  const familyOf = (p) => (p.synthetic ? 'synthetic test models' : orgOf(p.id));

  const REPO_ID = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/;

  /// A repository id or a huggingface.co URL -> {repo, revision} or {error}.
  /// Accepts "org/name", "https://huggingface.co/org/name", ".../tree/<rev>", ".../blob/<rev>/config.json".
  function parseHubInput(text) {
    const t = text.trim();
    const url = /^(?:https?:\/\/)?(?:www\.)?(?:huggingface\.co|hf\.co)\/([^?#]*)/i.exec(t);
    if (!url) return REPO_ID.test(t) ? { repo: t, revision: 'main' } : { error: 'Enter a repository id such as meta-llama/Llama-3.1-8B, or its huggingface.co URL.' };
    const parts = url[1].split('/').filter(Boolean);
    if (parts[0] === 'datasets' || parts[0] === 'spaces') return { error: `That is a ${parts[0].slice(0, -1)}, not a model: enter a model's URL.` };
    const repo = parts.slice(0, 2).join('/');
    if (!REPO_ID.test(repo)) return { error: 'That URL names no repository: it should look like https://huggingface.co/org/name.' };
    const revision = ['tree', 'blob', 'resolve'].includes(parts[2]) && parts[3] ? decodeURIComponent(parts[3]) : 'main';
    return { repo, revision };
  }

  ns.models = { nameSize, sortPresets, familyOf, parseHubInput };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});

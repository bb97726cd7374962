// The only reader of the core's envelope: each call returns `result` or throws an
// EstimatorError carrying the core's code and JSON Pointer.
'use strict';
(function (ns) {
  class EstimatorError extends Error {
    constructor(error) {
      super(error.message);
      this.name = 'EstimatorError';
      this.code = error.code;
      this.path = error.path || '';
    }
  }

  function wrap(M) {
    const call = (name, ...args) => {
      const envelope = JSON.parse(M[name](...args));
      if (!envelope.ok) throw new EstimatorError(envelope.error);
      return envelope.result;
    };
    return {
      version: () => call('version'),
      presets: () => call('presets'),
      inspect: (text) => call('inspect', text),
      inspectConfig: (text) => call('inspectConfig', text, false),
      estimate: (text) => call('estimate', text),
      search: (text) => call('search', text),
      launch: (text) => call('launch', text),
    };
  }

  ns.estimator = { wrap, EstimatorError };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});

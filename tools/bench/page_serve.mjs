// Shared by the page benchmarks: a site served from 127.0.0.1 and Debian's Chromium.
import { spawn } from 'node:child_process';
import { chromium } from 'playwright-core';

/// Serves `dir` on a free port: {server, base}.
export const serve = (dir) => new Promise((resolve) => {
  const server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', dir], { stdio: ['ignore', 'pipe', 'ignore'] });
  server.stdout.on('data', (d) => {
    const m = /port (\d+)/.exec(String(d));
    if (m) resolve({ server, base: `http://127.0.0.1:${m[1]}` });
  });
});

export const launchChromium = () => chromium.launch({ executablePath: process.env.MEMFIT_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });

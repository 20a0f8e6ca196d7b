// `node --conditions=tessera-source --import tsx bench/oidc.ts`: the OIDC figures alone (bench/README.md,
// "The OIDC figures"): a Tessera on SQLite and oidc-provider, one process each. Prints; writes nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAllChildren } from './children.js';
import { measureOidc } from './oidc-phase.js';
import { oidcSection } from './oidc-report.js';
import { machine } from './report.js';
import { readSettings } from './settings.js';
import { startTessera } from './tessera.js';

const settings = readSettings();
const startedAt = performance.now();
const log = (message: string) =>
  process.stdout.write(`[${((performance.now() - startedAt) / 1000).toFixed(1).padStart(6)}s] ${message}\n`);
const dir = mkdtempSync(join(tmpdir(), 'tessera-oidc-'));
process.once('exit', () => {
  killAllChildren();
  rmSync(dir, { recursive: true, force: true });
});

const host = machine();
log(`machine: ${host.cpu}, ${host.cores} cores, Node ${host.node}, load ${host.loadAverage.toFixed(2)}`);
const tessera = await startTessera({ dialect: 'sqlite', dir, nodeArgs: settings.serverNodeArgs });
try {
  const figures = await measureOidc(tessera.server, settings.load, log);
  process.stdout.write(`\n${oidcSection(figures, settings.load).join('\n')}\n`);
} finally {
  await tessera.close();
}
process.exit(0);

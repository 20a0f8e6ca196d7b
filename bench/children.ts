import { type ChildProcess, fork } from 'node:child_process';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import type { Memory } from './proc.js';
import { type CpuQuery, isCpuMessage, isReadyMessage, type ReadyMessage } from './protocol.js';

/** What a child says of itself: CPU so far, statements sent (when counted), serving processes' memory. */
export interface Usage {
  micros: number;
  statements?: number | undefined;
  memory: Memory[];
}

export interface Child {
  name: string;
  process: ChildProcess;
  ready: ReadyMessage;
  /** CPU time so far, the statements it sent to PostgreSQL (when it counts them), and its memory. */
  usage(): Promise<Usage>;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Kills every child still running, synchronously (safe in an `exit` handler). */
export function killAllChildren(): void {
  for (const child of running) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  running.clear();
}

/**
 * The entry compiled to JavaScript beside it (`bench/.<name>.mjs`, its relative imports bundled,
 * packages left to Node), so that the child runs on plain Node as production does: a child
 * started with `--import tsx` carries tsx's module-loader thread, a second V8 heap of 20–30 MB
 * resident that no `tessera serve` has.
 */
async function compiled(entry: URL): Promise<URL> {
  const source = fileURLToPath(entry);
  const outfile = join(dirname(source), `.${basename(source).replace(/\.ts$/, '')}.mjs`);
  await build({
    entryPoints: [source],
    outfile,
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
  return pathToFileURL(outfile);
}

/**
 * Starts `entry` (a TypeScript file) in its own Node process and waits for its ready message.
 * The entry runs compiled (see `compiled`), and the workspace packages load from their dist; with
 * BENCH_SERVER_FROM=src it runs through tsx with the packages from source instead. Extra Node
 * flags (e.g. `--cpu-prof`) come from `nodeArgs`.
 */
export async function startChild(
  name: string,
  entry: URL,
  env: Record<string, string>,
  nodeArgs: string[] = [],
  timeoutMs = 30_000,
): Promise<Child> {
  const fromSource = process.env.BENCH_SERVER_FROM === 'src';
  const child = fork(fromSource ? entry : await compiled(entry), [], {
    execArgv: [...(fromSource ? ['--conditions=tessera-source', '--import', 'tsx'] : []), ...nodeArgs],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  running.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', () => running.delete(child));

  const stop = async (graceMs = 5000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    if (child.connected) child.disconnect();
  };

  let queries = 0;
  const pending = new Map<number, (answer: Usage) => void>();
  child.on('message', (message) => {
    if (!isCpuMessage(message)) return;
    pending.get(message.id)?.({
      micros: message.micros,
      statements: message.statements,
      memory: message.memory,
    });
    pending.delete(message.id);
  });
  const usage = () =>
    new Promise<Usage>((resolve, reject) => {
      const id = ++queries;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${name} did not report its CPU time`));
      }, 5000);
      pending.set(id, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      const query: CpuQuery = { type: 'cpu?', id };
      child.send(query);
    });

  return new Promise<Child>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not become ready within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited before it was ready (code ${code}, signal ${signal})`));
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('message', (message) => {
      if (!isReadyMessage(message)) return;
      clearTimeout(timer);
      resolve({ name, process: child, ready: message, usage, stop });
    });
  });
}

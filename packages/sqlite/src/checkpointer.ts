import { once } from 'node:events';
import { createRequire } from 'node:module';
import { type ResourceLimits, Worker } from 'node:worker_threads';

/** The worker's code (CommonJS, run with `eval`): a second connection that checkpoints the WAL. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
// A TRUNCATE checkpoint waits for the writer at most this long (then it is tried again later).
const db = new Database(workerData.path, { timeout: 100 });
let lastTruncate = Date.now();
const checkpoint = () => {
  try {
    if (Date.now() - lastTruncate >= workerData.truncateEveryMs) {
      lastTruncate = Date.now();
      db.pragma('wal_checkpoint(TRUNCATE)');
    } else {
      db.pragma('wal_checkpoint(PASSIVE)');
    }
  } catch {
    // Busy or failing: the main connection's own automatic checkpoint is the backstop.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * The thread's V8 heap limits. It runs one pragma every 200 ms and allocates next to nothing, but
 * a worker otherwise gets the limits of a whole process. Measured, the limits save about 0.7 MB of
 * resident memory (14.6 → 13.9 MB in the checkpointer test): they are a bound, not a saving. Past
 * them the thread stops with an out-of-memory error, which costs only speed (the main
 * connection's backstop checkpoints).
 */
export const CHECKPOINTER_RESOURCE_LIMITS = {
  maxYoungGenerationSizeMb: 1,
  maxOldGenerationSizeMb: 16,
} as const;

/**
 * How often the checkpointer truncates the WAL to zero bytes (`wal_checkpoint(TRUNCATE)`) after
 * copying it back. A PASSIVE checkpoint never shrinks the file, and SQLite reuses it from the
 * start only when no reader holds an old snapshot: under steady traffic it stayed at 5 MB beside
 * a 1.5–3 MB database.
 */
export const WAL_TRUNCATE_EVERY_MS = 60_000;

/**
 * Copies the write-ahead log back into the database file on another thread. SQLite does this in
 * the commit that crosses `wal_autocheckpoint` pages, with an fsync of both files: under load that
 * stalled the event loop for milliseconds every few commits (docs/BENCHMARKS.md, "Design
 * measurements"). A PASSIVE checkpoint from a second connection runs beside
 * the writer without blocking it. The main connection keeps a large automatic checkpoint as a
 * backstop, should this thread fall behind or fail. Every `truncateEveryMs` (WAL_TRUNCATE_EVERY_MS)
 * the checkpoint is a TRUNCATE one, which leaves the WAL empty; it waits at most 100 ms for the
 * writer, and is tried again at the next interval when it cannot.
 */
export class Checkpointer {
  readonly #worker: Worker;
  #closed = false;
  #exited = false;

  constructor(path: string, intervalMs = 200, truncateEveryMs = WAL_TRUNCATE_EVERY_MS) {
    this.#worker = new Worker(WORKER, {
      eval: true,
      // Not the parent's flags: the TypeScript loader is not needed to run plain CommonJS.
      execArgv: [],
      resourceLimits: { ...CHECKPOINTER_RESOURCE_LIMITS },
      workerData: {
        path,
        intervalMs,
        truncateEveryMs,
        module: createRequire(import.meta.url).resolve('better-sqlite3'),
      },
    });
    this.#worker.unref();
    // A worker that fails only costs speed (the backstop checkpoints): say so, never crash for it.
    this.#worker.on('error', (error) => {
      process.emitWarning(
        `the SQLite checkpoint thread stopped (${error.message}); the main connection checkpoints instead`,
        'TesseraWarning',
      );
    });
    this.#worker.once('exit', () => {
      this.#exited = true;
    });
  }

  /** The thread's V8 heap limits as Node applied them (for tests). */
  get resourceLimits(): Readonly<ResourceLimits> {
    return this.#worker.resourceLimits ?? {};
  }

  /** Stops the thread and closes its connection (before the main connection closes). */
  async close(): Promise<void> {
    if (this.#closed || this.#exited) return;
    this.#closed = true;
    const exited = once(this.#worker, 'exit');
    this.#worker.postMessage('close');
    const timer = setTimeout(() => void this.#worker.terminate(), 2000);
    await exited;
    clearTimeout(timer);
  }
}

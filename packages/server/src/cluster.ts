import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import type { OutboxEntry } from './modules/otp/delivery/dev-outbox.js';
import type { DevOutbox } from './modules/otp/delivery/index.js';
import { withServeFlags } from './node-flags.js';

/** A worker that dies is replaced after this, doubled for each death in the window, at most MAX. */
export const RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;
/** This many deaths within FAILURE_WINDOW_MS and the primary gives up (exit status 1). */
export const MAX_FAILURES = 5;
const FAILURE_WINDOW_MS = 60_000;
/** How long past TESSERA_SHUTDOWN_TIMEOUT the primary waits for workers before killing them. */
const STOP_MARGIN_MS = 5_000;

export interface PrimaryOptions {
  workers: number;
  /** Each worker's own drain bound (TESSERA_SHUTDOWN_TIMEOUT), in ms. */
  shutdownTimeoutMs: number;
  logger: Logger;
}

/**
 * The primary of `tessera serve --workers N`: forks N workers, which share one listening port
 * (Node's cluster hands connections to them in turn), and replaces one that dies after a
 * growing delay. On SIGTERM or SIGINT it passes SIGTERM to every worker and waits for their drain.
 * Resolves with the exit status: 0 when every worker stopped cleanly on a signal, 1 when a
 * worker's drain failed or workers kept dying (MAX_FAILURES within a minute).
 */
export function runPrimary(options: PrimaryOptions): Promise<number> {
  const { logger } = options;
  const failures: number[] = [];
  const restarts = new Set<NodeJS.Timeout>();
  let stopping = false;
  let status = 0;
  let force: NodeJS.Timeout | undefined;

  return new Promise<number>((resolve) => {
    const fork = () => {
      const worker = cluster.fork();
      // The development outbox of one worker, relayed to the others (see shareDevOutbox).
      worker.on('message', (message: unknown) => {
        if (!isOutboxMessage(message)) return;
        for (const other of workers()) if (other !== worker && other.isConnected()) other.send(message);
      });
      worker.once('online', () =>
        logger.info({ worker: worker.id, pid: worker.process.pid }, 'worker started'),
      );
    };

    const stop = (reason: string, exitStatus: number) => {
      if (stopping) return;
      stopping = true;
      status = Math.max(status, exitStatus);
      for (const timer of restarts) clearTimeout(timer);
      restarts.clear();
      const running = workers();
      logger.info({ reason, workers: running.length }, 'stopping workers');
      for (const worker of running) worker.process.kill('SIGTERM');
      force = setTimeout(() => {
        const left = workers();
        logger.error({ workers: left.length }, 'workers did not stop in time; killing them');
        for (const worker of left) worker.process.kill('SIGKILL');
        status = 1;
      }, options.shutdownTimeoutMs + STOP_MARGIN_MS);
      force.unref();
      settleWhenDone();
    };

    const settleWhenDone = () => {
      if (!stopping || workers().length > 0 || restarts.size > 0) return;
      clearTimeout(force);
      process.removeListener('SIGTERM', onSigterm);
      process.removeListener('SIGINT', onSigint);
      cluster.removeListener('exit', onExit);
      logger.info({ status }, 'stopped');
      resolve(status);
    };

    const onExit = (worker: Worker, code: number | null, signal: NodeJS.Signals | null) => {
      const fields = { worker: worker.id, pid: worker.process.pid, code, signal };
      if (stopping) {
        if (code !== 0) status = 1;
        logger.info(fields, 'worker stopped');
        settleWhenDone();
        return;
      }
      const now = Date.now();
      failures.push(now);
      while (failures.length > 0 && failures[0]! <= now - FAILURE_WINDOW_MS) failures.shift();
      if (failures.length >= MAX_FAILURES) {
        logger.error({ ...fields, failures: failures.length }, 'workers keep dying; giving up');
        stop('workers keep dying', 1);
        return;
      }
      const delay = Math.min(RESTART_DELAY_MS * 2 ** (failures.length - 1), MAX_RESTART_DELAY_MS);
      logger.error({ ...fields, restartInMs: delay }, 'worker died; replacing it');
      const timer = setTimeout(() => {
        restarts.delete(timer);
        if (!stopping) fork();
      }, delay);
      restarts.add(timer);
    };

    const onSigterm = () => stop('SIGTERM', 0);
    const onSigint = () => stop('SIGINT', 0);
    process.on('SIGTERM', onSigterm);
    process.on('SIGINT', onSigint);
    cluster.on('exit', onExit);
    // Workers run with the serving flags even when this primary was started without them.
    cluster.setupPrimary({ execArgv: withServeFlags(process.execArgv) });
    logger.info({ workers: options.workers }, 'starting workers');
    for (let i = 0; i < options.workers; i++) fork();
  });
}

function workers(): Worker[] {
  return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
}

const OUTBOX_MESSAGE = 'tessera:dev-outbox';

function isOutboxMessage(message: unknown): message is { type: typeof OUTBOX_MESSAGE; entry: OutboxEntry } {
  return (message as { type?: unknown } | null)?.type === OUTBOX_MESSAGE;
}

/**
 * In a worker of `serve --workers N` with development delivery: the codes one worker keeps are
 * kept by every worker (through the primary), so `GET /dev/outbox` shows them whichever answers.
 */
export function shareDevOutbox(outbox: DevOutbox): void {
  const worker = cluster.worker;
  if (!worker) return;
  const shared = outbox.share((entry) => {
    if (worker.isConnected()) worker.send({ type: OUTBOX_MESSAGE, entry });
  });
  worker.on('message', (message: unknown) => {
    if (isOutboxMessage(message)) shared.receive(message.entry);
  });
}

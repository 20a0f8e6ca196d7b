import autocannon from 'autocannon';
import type { Usage } from './children.js';

export interface LoadSettings {
  connections: number;
  /** Measured seconds per figure. */
  duration: number;
  /** Seconds of load before a figure's first measurement (results discarded). */
  warmup: number;
  /** The /verify figures are measured in this many interleaved rounds (see run.ts). */
  rounds: number;
}

/** Operations that succeeded, as the workload defines success (e.g. `{"success":true}` bodies). */
export interface Counter {
  ok: number;
  failed: number;
}

/** A request sequence for autocannon and the counter its `onResponse` handlers feed. */
export interface Workload {
  url: string;
  requests: autocannon.Request[];
  counter: Counter;
  /** The process serving `url`, to charge it the CPU time a window costs and read its memory. */
  server?: { usage(): Promise<Usage> };
}

export interface LoadResult {
  /** Successful operations per second over the measured window(s). */
  rate: number;
  ok: number;
  failed: number;
  /** Seconds actually measured. */
  seconds: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** CPU time the server process spent during the window(s), microseconds (NaN if unknown). */
  serverCpuMicros: number;
  /** The highest resident set size of any one serving process so far (VmHWM), bytes (NaN if unknown). */
  peakRss: number;
  /** Latency of 2xx responses, ms (mean over windows when combined). */
  p50: number;
  p99: number;
}

/** How long a run lasts: seconds, or a number of requests (`{ amount }`, shared by the connections). */
type Length = number | { amount: number };

function run(w: Workload, connections: number, length: Length): Promise<autocannon.Result> {
  // autocannon notices that a run of `amount` requests is over at its next sample tick (every
  // `sampleInt` ms, 1 s by default), and counts the time until then in its duration: ticks of
  // 20 ms make that at most 20 ms of idle time instead of up to a second.
  const until = typeof length === 'number' ? { duration: length } : { amount: length.amount, sampleInt: 20 };
  return new Promise((resolve, reject) => {
    autocannon(
      { url: w.url, connections, pipelining: 1, ...until, timeout: 10, requests: w.requests },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

/** Load for `seconds` (or `{ amount }` requests), results discarded (JIT, caches, connections). */
export async function warmUp(w: Workload, connections: number, length: Length): Promise<void> {
  if (typeof length !== 'number' || length > 0) await run(w, connections, length);
}

/**
 * One measured window of `seconds`, or of `{ amount }` requests (for workloads that spend what they
 * send, such as codes minted ahead); the counter is reset first, so only this window counts.
 */
export async function window(w: Workload, connections: number, length: Length): Promise<LoadResult> {
  w.counter.ok = 0;
  w.counter.failed = 0;
  const before = await w.server?.usage();
  const result = await run(w, connections, length);
  const after = await w.server?.usage();
  return {
    rate: w.counter.ok / result.duration,
    ok: w.counter.ok,
    failed: w.counter.failed,
    seconds: result.duration,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    serverCpuMicros: before && after ? after.micros - before.micros : Number.NaN,
    peakRss: after && after.memory.length > 0 ? Math.max(...after.memory.map((m) => m.peakRss)) : Number.NaN,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
}

/** A warm-up, then one measured window of the configured duration. */
export async function measure(w: Workload, s: LoadSettings): Promise<LoadResult> {
  await warmUp(w, s.connections, s.warmup);
  return window(w, s.connections, s.duration);
}

/** Several windows of one workload as one figure: total successes over total time. */
export function combine(results: LoadResult[]): LoadResult {
  const sum = (pick: (r: LoadResult) => number) => results.reduce((acc, r) => acc + pick(r), 0);
  const seconds = sum((r) => r.seconds);
  return {
    rate: sum((r) => r.ok) / seconds,
    ok: sum((r) => r.ok),
    failed: sum((r) => r.failed),
    seconds,
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    serverCpuMicros: sum((r) => r.serverCpuMicros),
    peakRss: Math.max(...results.map((r) => r.peakRss)),
    p50: sum((r) => r.p50) / results.length,
    p99: sum((r) => r.p99) / results.length,
  };
}

/** Server CPU time per successful operation, microseconds (NaN if unknown). */
export function cpuPerOp(r: LoadResult): number {
  return r.ok > 0 ? r.serverCpuMicros / r.ok : Number.NaN;
}

/** Header lookup on autocannon's response headers (names as the server sent them). */
export function headerOf(headers: autocannon.Request['headers'], name: string): string | undefined {
  if (!headers) return undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

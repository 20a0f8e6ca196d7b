import { fileURLToPath } from 'node:url';
import type { LoadSettings } from './load.js';

export interface BenchSettings {
  load: LoadSettings;
  /** Seconds of in-process raw verification in each round (the raw figure totals rounds × this). */
  rawSecondsPerRound: number;
  /** Seconds for each in-process reference figure (decode + verify, jose). */
  referenceSeconds: number;
  /** Users signed in before the load phases (their tokens feed several phases). */
  sessions: number;
  /** Where the Markdown report goes; undefined: print only. */
  out: string | undefined;
  /** Extra Node flags for the Tessera child (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). */
  serverNodeArgs: string[];
  /** The PostgreSQL and 1-vs-2-worker figures: measured when PostgreSQL answers, or not at all. */
  postgres: 'on' | 'off';
  /** The OIDC figures (Tessera's authorization code flow, and oidc-provider beside it). */
  oidc: 'on' | 'off';
}

/**
 * A number from the environment variable `name` within [min, max] (a whole one when `whole`), or
 * `fallback` when it is unset or blank.
 */
export function envNumber(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  { min, max, whole = false }: { min: number; max: number; whole?: boolean },
): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!(whole ? Number.isInteger(value) : Number.isFinite(value)) || value < min || value > max)
    throw new Error(
      `${name} must be a ${whole ? 'whole number' : 'number'} from ${min} to ${max}, got "${raw}"`,
    );
  return value;
}

function onOff(env: NodeJS.ProcessEnv, name: string): 'on' | 'off' {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === 'on') return 'on';
  if (raw === 'off') return 'off';
  throw new Error(`${name} must be on or off, got "${raw}"`);
}

export function readSettings(env: NodeJS.ProcessEnv = process.env): BenchSettings {
  const duration = envNumber(env, 'BENCH_DURATION', 10, { min: 1, max: 60 });
  const out = env.BENCH_OUT ?? fileURLToPath(new URL('../docs/BENCHMARKS.md', import.meta.url));
  return {
    load: { connections: 50, duration, warmup: Math.min(2, duration / 2), rounds: duration >= 8 ? 4 : 2 },
    rawSecondsPerRound: Math.min(1, duration / 4),
    referenceSeconds: Math.min(2, duration / 2),
    sessions: 2000,
    out: out === '' || out === 'none' ? undefined : out,
    serverNodeArgs: (env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean),
    postgres: onOff(env, 'BENCH_POSTGRES'),
    oidc: onOff(env, 'BENCH_OIDC'),
  };
}

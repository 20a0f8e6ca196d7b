import { type Memory, processCpuMicros, processMemory } from './proc.js';

/** What the benchmark's child processes tell the parent over IPC once they listen. */
export interface ReadyMessage {
  type: 'ready';
  /** Base URL on 127.0.0.1. */
  url: string;
  /** The API key id of the project the Tessera child created (absent for the bare server). */
  apiKeyId?: string;
  /** Its API key secret (to register OAuth clients through the integrator API). */
  apiKeySecret?: string;
}

/**
 * Bench-only response header on `POST /v1/auth/otp/start` carrying the code just "delivered", so a
 * sign-in costs exactly the two requests a real one costs (no extra outbox read).
 */
export const OTP_CODE_HEADER = 'x-bench-otp-code';

export function isReadyMessage(value: unknown): value is ReadyMessage {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { type?: unknown }).type === 'ready' &&
    typeof (value as { url?: unknown }).url === 'string'
  );
}

/** The parent asks a child for its CPU time so far; the child answers with a `CpuMessage`. */
export interface CpuQuery {
  type: 'cpu?';
  id: number;
}

export interface CpuMessage {
  type: 'cpu';
  id: number;
  /** User + system CPU time of the child process, microseconds. */
  micros: number;
  /** Statements sent to PostgreSQL so far, when the child counts them (`countStatements`). */
  statements?: number;
  /** Memory of each process that serves requests (the child, or its cluster workers). */
  memory: Memory[];
}

/**
 * In a child: answer the parent's CPU queries (with the statement count, when given one). A
 * cluster primary passes its workers' pids: their CPU is added to its own, and the memory
 * reported is theirs (they serve; the primary only forks).
 */
export function answerCpuQueries(statements?: () => number, workers?: () => number[]): void {
  process.on('message', (message: unknown) => {
    const query = message as Partial<CpuQuery> | undefined;
    if (query?.type !== 'cpu?' || typeof query.id !== 'number') return;
    const usage = process.cpuUsage();
    const pids = workers?.() ?? [];
    const micros = pids.reduce((sum, pid) => sum + (processCpuMicros(pid) ?? 0), usage.user + usage.system);
    const serving = pids.length > 0 ? pids : [process.pid];
    const answer: CpuMessage = {
      type: 'cpu',
      id: query.id,
      micros,
      memory: serving.flatMap((pid) => processMemory(pid) ?? []),
      ...(statements ? { statements: statements() } : {}),
    };
    process.send?.(answer);
  });
}

export function isCpuMessage(value: unknown): value is CpuMessage {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { type?: unknown }).type === 'cpu' &&
    typeof (value as { micros?: unknown }).micros === 'number'
  );
}

/** What the benchmark's child processes tell the parent over IPC once they listen. */
export interface ReadyMessage {
  type: 'ready';
  /** Base URL on 127.0.0.1. */
  url: string;
  /** The API key id of the project the Tessera child created (absent for the bare server). */
  apiKeyId?: string;
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
}

/** In a child: answer the parent's CPU queries (with the statement count, when given one). */
export function answerCpuQueries(statements?: () => number): void {
  process.on('message', (message: unknown) => {
    const query = message as Partial<CpuQuery> | undefined;
    if (query?.type !== 'cpu?' || typeof query.id !== 'number') return;
    const usage = process.cpuUsage();
    const answer: CpuMessage = {
      type: 'cpu',
      id: query.id,
      micros: usage.user + usage.system,
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

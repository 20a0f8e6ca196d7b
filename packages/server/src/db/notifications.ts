import { type Kysely, PostgresAdapter, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { describeDatabaseError } from './unavailable.js';

/**
 * The channels instances tell each other about changes on. Every payload is a JSON object naming
 * the schema it concerns (`schema`): instances of several deployments (or tests) may share one
 * database, each in its own schema, and listen on the same channels.
 */
export const Channels = {
  /** Sessions were revoked: `{ schema, sessions?: string[] }` (no `sessions`: re-read them all). */
  revocations: 'tessera_revocations',
  /** Signing keys were added or changed state: `{ schema }`. */
  keys: 'tessera_keys',
  /** A project was changed or deleted: `{ schema, id, api_key_id }` (neither: forget them all). */
  projects: 'tessera_projects',
} as const;

export type Channel = (typeof Channels)[keyof typeof Channels];

/** PostgreSQL refuses a payload of 8000 bytes or more; a detail longer than this is left out. */
const MAX_DETAIL_LENGTH = 7000;

/**
 * Tells every listening instance that rows behind `channel` changed. Run inside a transaction, the
 * notice is delivered when it commits, and never if it rolls back. A `detail` too long for a
 * notice is dropped: listeners then re-read everything. SQLite has no NOTIFY: this does nothing
 * there, and other processes on the same file learn of the change by polling.
 */
export async function notifyChange(
  executor: Kysely<Database>,
  channel: Channel,
  detail: Record<string, unknown> = {},
): Promise<void> {
  if (!(executor.getExecutor().adapter instanceof PostgresAdapter)) return;
  let json = JSON.stringify(detail);
  if (json.length > MAX_DETAIL_LENGTH) json = '{}';
  // The schema as the writing connection resolves it, which is how the listener resolves its own.
  await sql`select pg_notify(${channel}, (${json}::jsonb || jsonb_build_object('schema', current_schema()))::text)`.execute(
    executor,
  );
}

/** Where the listener reports losing and regaining its connection; pino's logger fits. */
export interface ListenerLogger {
  warn(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
}

export interface NoticeListenerOptions {
  logger?: ListenerLogger | undefined;
  /** Wait before the first reconnection attempt, in ms; doubled after each failure. */
  retryFirstMs?: number;
  /** Longest wait between reconnection attempts, in ms. */
  retryMaxMs?: number;
  /**
   * A round trip on the listening connection this often, in ms, so a connection that went silent
   * (a frozen host, a partition) is replaced within this plus the client's query timeout, not
   * when TCP keep-alive gives up.
   */
  heartbeatMs?: number;
}

export type NoticeHandler = (detail: Readonly<Record<string, unknown>>) => void;

/**
 * One PostgreSQL connection of its own (not the pool's: LISTEN belongs to a session, and pooled
 * connections are shared and replaced) listening on every channel of `Channels`, and passing each
 * notice of this connection's schema to the handlers of its channel.
 *
 * It never gives up: a lost connection (terminated backend, restart, failover, silent socket) is
 * logged and reopened with back-off, and once listening again it calls the `onListening` handlers,
 * which re-read everything, since notices sent while no one listened are lost. So the listener is
 * only an accelerator: what it carries must also be reachable by polling.
 */
export class NoticeListener {
  #handlers = new Map<string, NoticeHandler[]>();
  #onListening: Array<() => void> = [];
  #client: pg.Client | undefined;
  #schema: string | undefined;
  #listening = false;
  #wasListening = false;
  #started = false;
  #closed = false;
  #retryMs: number;
  #retryTimer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  readonly #retryFirstMs: number;
  readonly #retryMaxMs: number;
  readonly #heartbeatMs: number;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly options: NoticeListenerOptions = {},
  ) {
    this.#retryFirstMs = options.retryFirstMs ?? 100;
    this.#retryMaxMs = options.retryMaxMs ?? 5_000;
    this.#heartbeatMs = options.heartbeatMs ?? 30_000;
    this.#retryMs = this.#retryFirstMs;
  }

  /** Calls `handler` with the payload of each notice on `channel` about this schema. */
  on(channel: Channel, handler: NoticeHandler): void {
    const list = this.#handlers.get(channel) ?? [];
    list.push(handler);
    this.#handlers.set(channel, list);
  }

  /** Calls `handler` each time listening begins, the first time included: re-read what it guards. */
  onListening(handler: () => void): void {
    this.#onListening.push(handler);
  }

  /** True while LISTEN is in place on a live connection. */
  get listening(): boolean {
    return this.#listening;
  }

  /** Opens the connection in the background; failures are retried, never thrown. */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    void this.#connect();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listening = false;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#heartbeat);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    const client = new pg.Client(this.config);
    this.#client = client;
    let lost = false;
    const drop = (error?: unknown) => {
      if (lost) return;
      lost = true;
      this.#lost(client, error);
    };
    client.on('error', drop);
    client.on('end', () => drop(new Error('Connection terminated')));
    client.on('notification', (message) => this.#deliver(message));
    try {
      await client.connect();
      const { rows } = await client.query<{ schema: string | null }>('select current_schema() as schema');
      this.#schema = rows[0]?.schema ?? undefined;
      await client.query(
        Object.values(Channels)
          .map((channel) => `listen ${channel}`)
          .join('; '),
      );
    } catch (error) {
      drop(error);
      return;
    }
    if (lost || this.#closed) return;
    this.#listening = true;
    this.#retryMs = this.#retryFirstMs;
    if (this.#wasListening) this.options.logger?.info({}, 'listening for database notices again');
    this.#wasListening = true;
    this.#heartbeat = setInterval(() => {
      client.query('select 1').catch(drop);
    }, this.#heartbeatMs);
    this.#heartbeat.unref();
    for (const handler of this.#onListening) handler();
  }

  #lost(client: pg.Client, error: unknown): void {
    const wasListening = this.#listening;
    clearInterval(this.#heartbeat);
    if (this.#client === client) {
      this.#client = undefined;
      this.#listening = false;
    }
    // A connection whose query timed out may still be open: end it (a hung one is destroyed).
    client.end().catch(() => {});
    if (this.#closed) return;
    // Once per outage: when the connection is lost, or when the very first attempt fails.
    if (wasListening || (!this.#wasListening && this.#retryMs === this.#retryFirstMs))
      this.options.logger?.warn(
        describeDatabaseError(error),
        wasListening
          ? 'database notices lost; polling until listening again'
          : 'database notices unavailable; polling until listening',
      );
    this.#retryTimer = setTimeout(() => void this.#connect(), this.#retryMs * (0.8 + Math.random() * 0.4));
    this.#retryTimer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, this.#retryMaxMs);
  }

  #deliver(message: pg.Notification): void {
    const handlers = this.#handlers.get(message.channel);
    if (!handlers || !message.payload) return;
    let detail: unknown;
    try {
      detail = JSON.parse(message.payload);
    } catch {
      return;
    }
    if (typeof detail !== 'object' || detail === null) return;
    if ((detail as { schema?: unknown }).schema !== this.#schema) return;
    for (const handler of handlers) handler(detail as Record<string, unknown>);
  }
}

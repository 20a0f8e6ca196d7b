import pg from 'pg';
import { type Channel, Channels } from './channels.js';
import { describeDatabaseError } from './unavailable.js';

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

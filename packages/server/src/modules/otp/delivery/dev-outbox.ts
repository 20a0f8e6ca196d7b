import type { Logger } from 'pino';
import type { Channel, Delivery, OtpMessage, SecurityNotice } from './delivery.js';

export interface DevOutboxOptions {
  /** How many messages are kept; older ones are dropped. Default 100. */
  limit?: number;
  /** Clock for `created_at`; injected by tests. */
  now?: () => Date;
}

/** One message as `GET /dev/outbox` shows it. */
export interface OutboxEntry {
  to: string;
  channel: Channel;
  code: string;
  project: string;
  created_at: string;
}

const DEFAULT_LIMIT = 100;

/**
 * Development-only delivery: keeps the newest messages in memory so a developer can read the
 * code from `GET /dev/outbox`. That route is the one place where a code is shown on purpose;
 * the log line still points there instead of printing it.
 */
export class DevOutbox implements Delivery {
  readonly #entries: OutboxEntry[] = [];
  readonly #notices: SecurityNotice[] = [];
  readonly #limit: number;
  readonly #now: () => Date;
  readonly #logger: Logger;

  constructor(options: DevOutboxOptions, logger: Logger) {
    const limit = options.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new TypeError('DevOutbox limit must be a positive integer');
    }
    this.#limit = limit;
    this.#now = options.now ?? (() => new Date());
    this.#logger = logger;
  }

  /** Notices are kept apart from codes: `GET /dev/outbox` lists codes only. */
  async notify(notice: SecurityNotice): Promise<void> {
    this.#notices.unshift({ ...notice, at: new Date(notice.at) });
    this.#notices.length = Math.min(this.#notices.length, this.#limit);
    this.#logger.info(
      { channel: notice.channel, event: notice.event },
      'development delivery: security notice kept',
    );
  }

  /** The kept security notices, newest first. */
  notices(): SecurityNotice[] {
    return this.#notices.map((n) => ({ ...n }));
  }

  /**
   * Shares this outbox with the other workers of `serve --workers N` (each has its own memory, and
   * the sign-in's next request may reach another): every entry sent here goes to `publish`, and
   * `receive` takes the others'. See cluster.ts, which relays them through the primary.
   */
  share(publish: (entry: OutboxEntry) => void): { receive(entry: OutboxEntry): void } {
    this.#publish = publish;
    return { receive: (entry) => this.#keep(entry) };
  }

  #publish: ((entry: OutboxEntry) => void) | undefined;

  #keep(entry: OutboxEntry): void {
    this.#entries.unshift(entry);
    this.#entries.length = Math.min(this.#entries.length, this.#limit);
  }

  async send(message: OtpMessage): Promise<void> {
    const entry: OutboxEntry = {
      to: message.to,
      channel: message.channel,
      code: message.code,
      project: message.projectName,
      created_at: this.#now().toISOString(),
    };
    this.#keep(entry);
    this.#publish?.(entry);
    this.#logger.warn(
      { channel: message.channel },
      `development delivery: code for ${message.to} is in GET /dev/outbox`,
    );
  }

  /** The kept messages, newest first, as copies. */
  list(): OutboxEntry[] {
    return this.#entries.map((entry) => ({ ...entry }));
  }

  async close(): Promise<void> {
    this.#entries.length = 0;
    this.#notices.length = 0;
  }
}

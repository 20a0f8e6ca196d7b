import type { QueryParams, RequestBody, Result } from '../operation-types.js';
import { onePage, type Paginated } from '../paginate.js';
import type { CallOptions, Transport } from '../transport.js';

/** A signing key the JWKS publishes: `next` (published, not yet signing), `active`, or `retiring`. */
export type SigningKey = Result<'listSigningKeys'>['keys'][number];

/**
 * The service's signing keys (operator API: the operator token, or a console `operator`).
 *
 * @example
 * ```ts
 * const { kid, activate_at } = await admin.keys.rotate(); // signs from activate_at on
 * ```
 */
export class Keys {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  list(options?: CallOptions): Paginated<SigningKey, Result<'listSigningKeys'>> {
    return onePage(
      () => this.#t.call('listSigningKeys', {}, options),
      (page) => page.keys,
    );
  }

  /**
   * Publishes a new key now; it starts signing after the pre-publication delay (the service's
   * TESSERA_KEY_ROTATION_DELAY, or `delay_seconds`), once caches of the JWKS have it.
   */
  rotate(
    what: NonNullable<RequestBody<'rotateSigningKey'>> = {},
    options?: CallOptions,
  ): Promise<Result<'rotateSigningKey'>> {
    return this.#t.call('rotateSigningKey', { body: what }, options);
  }
}

/** A project's sign-in activity per hour or day. */
export type Stats = Result<'getStats'>;

/**
 * The overview of a project: sign-ins per method, failures, OTP sends and refresh-token reuse
 * detections, per hour or day.
 *
 * @example
 * ```ts
 * const { buckets } = await admin.stats.get({ bucket: 'day', from: '2026-11-01T00:00:00Z' });
 * ```
 */
export class StatsResource {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** `bucket` hour (default; the last 24 hours) or day (the last 30 days), `from` and `to` to choose. */
  get(query: QueryParams<'getStats'> = {}, options?: CallOptions): Promise<Stats> {
    return this.#t.call('getStats', { query }, options);
  }
}

/** The signed-in console member: their user, whether they are an operator, their projects and roles. */
export type ConsoleMember = Result<'consoleMe'>;

/**
 * The console's own routes (a console member's access token).
 *
 * @example
 * ```ts
 * const me = await admin.console.me();
 * for (const { name, role } of me.projects) console.log(name, role);
 * ```
 */
export class ConsoleResource {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  me(options?: CallOptions): Promise<ConsoleMember> {
    return this.#t.call('consoleMe', {}, options);
  }
}

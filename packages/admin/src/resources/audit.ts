import type { QueryParams, Result } from '../operation-types.js';
import { type Paginated, paginate } from '../paginate.js';
import type { CallOptions, Transport } from '../transport.js';

/** A security event of the project's audit log. */
export type AuditEvent = Result<'searchAudit'>['events'][number];
/** A page of the audit log, with the cursor of the next (`next_before`, `null` on the last). */
export type AuditPage = Result<'searchAudit'>;
/** Filters of the audit log: `user_id`, `type`, `from` and `to` (ISO 8601 or Unix seconds), `limit` a page. */
export type AuditFilter = Omit<QueryParams<'searchAudit'>, 'before' | 'format'>;

/**
 * The project's security events, newest first.
 *
 * @example
 * ```ts
 * for await (const event of admin.audit.list({ type: 'user.signed_in', from: '2026-01-01T00:00:00Z' })) {
 *   console.log(event.created_at, event.user_id);
 * }
 * ```
 */
export class Audit {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** Every event matching the filter, page after page as the loop asks for them. */
  list(filter: AuditFilter = {}, options?: CallOptions): Paginated<AuditEvent, AuditPage> {
    return paginate(
      (before) => this.page({ ...filter, ...(before !== undefined && { before }) }, options),
      (page) => page.events,
      (page) => page.next_before,
    );
  }

  /** One page: pass the previous page's `next_before` as `before` for the next. */
  page(query: Omit<QueryParams<'searchAudit'>, 'format'> = {}, options?: CallOptions): Promise<AuditPage> {
    return this.#t.call('searchAudit', { query }, options);
  }

  /**
   * Every event matching the filter (up to 10,000, newest first) as CSV text, as the service
   * writes it (a header line; fields that a spreadsheet would run as a formula are escaped).
   */
  async export(filter: Omit<AuditFilter, 'limit'> = {}, options?: CallOptions): Promise<string> {
    const csv = await this.#t.call(
      'searchAudit',
      { query: { ...filter, format: 'csv' }, accept: 'text/csv' },
      options,
    );
    return csv as unknown as string;
  }
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { badRequest } from '../../errors.js';
import type { AuditLog } from './audit.service.js';
import { AUDIT_EVENT_TYPES } from './events.js';

/** `limit`: 1–500 events a page, 100 when absent; anything else is refused, not clamped. */
function pageSize(limit: string | undefined): number {
  const size = Number(limit ?? 100);
  if (size < 1 || size > 500) throw badRequest('limit must be a number of events from 1 to 500');
  return size;
}

const Query = Type.Object({
  user_id: Type.Optional(Type.String({ maxLength: 100 })),
  // An enum: the document lists every event type, so clients (the console's filter, @tessera/admin's
  // AUDIT_EVENT_TYPES) take them from the service instead of a copy; an unknown type is a 400.
  type: Type.Optional(
    Type.Union(
      AUDIT_EVENT_TYPES.map((type) => Type.Literal(type)),
      { description: 'One event type (see the webhook event types in docs/API.md)' },
    ),
  ),
  from: Type.Optional(Type.String({ maxLength: 40 })),
  to: Type.Optional(Type.String({ maxLength: 40 })),
  before: Type.Optional(Type.String({ maxLength: 100 })),
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$' })),
  format: Type.Optional(
    Type.Union([Type.Literal('json'), Type.Literal('csv')], {
      description: 'csv (or `Accept: text/csv`): every matching event, up to 10000, as CSV',
    }),
  ),
});

/** The most events one CSV export holds. */
const CSV_MAX_EVENTS = 10_000;

/**
 * A CSV field (RFC 4180): quoted when it holds a comma, quote or line break; a value a spreadsheet
 * would take for a formula (`=`, `+`, `-`, `@`, tab, CR first) gets a leading apostrophe.
 */
function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

const CSV_HEADER = 'event_id,created_at,type,user_id,actor,data';

type EventView = {
  event_id: string;
  created_at: string;
  type: string;
  user_id: string | null;
  data: Record<string, unknown>;
};

function csvLine(event: EventView): string {
  const actor = event.data.actor as { identifier?: unknown; role?: unknown } | undefined;
  const actorText = actor ? `${String(actor.identifier)} (${String(actor.role)})` : '';
  return [
    event.event_id,
    event.created_at,
    event.type,
    event.user_id ?? '',
    actorText,
    JSON.stringify(event.data),
  ]
    .map(csvField)
    .join(',');
}

const wantsCsv = (format: string | undefined, accept: string | undefined) =>
  format === 'csv' || (format === undefined && /^\s*text\/csv\b/i.test(accept ?? ''));

function time(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value);
  if (!Number.isFinite(ms)) throw badRequest(`${name} must be an ISO 8601 time or Unix seconds`);
  return ms;
}

const Event = Type.Object({
  event_id: Type.String(),
  type: Type.String(),
  user_id: Type.Union([Type.String(), Type.Null()]),
  data: Type.Object({}, { additionalProperties: true }),
  created_at: Type.String({ format: 'date-time' }),
});
const Page = Type.Object({
  events: Type.Array(Event),
  next_before: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as `before` for the next page',
  }),
});

/** GET /v1/audit: the project's security events, newest first, by user, type and time range. */
export function auditRoutes({ audit }: { audit: AuditLog }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/audit',
      {
        schema: {
          operationId: 'searchAudit',
          summary: 'The project’s security events, newest first (as CSV with format=csv or Accept: text/csv)',
          tags: ['audit'],
          querystring: Query,
          response: { 200: Page },
        },
      },
      async (request, reply) => {
        const q = request.query;
        const filter = {
          userId: q.user_id,
          type: q.type,
          from: time(q.from, 'from'),
          to: time(q.to, 'to'),
          before: q.before,
        };
        if (!wantsCsv(q.format, request.headers.accept))
          return audit.search(request.project.id, { ...filter, limit: pageSize(q.limit) });
        // Every matching event (up to CSV_MAX_EVENTS), page after page.
        const lines = [CSV_HEADER];
        let before = filter.before;
        while (lines.length <= CSV_MAX_EVENTS) {
          const page = await audit.search(request.project.id, { ...filter, before, limit: 500 });
          for (const event of page.events) lines.push(csvLine(event));
          if (!page.next_before) break;
          before = page.next_before;
        }
        return (
          reply
            .type('text/csv; charset=utf-8')
            .header('content-disposition', 'attachment; filename="audit.csv"')
            .header('cache-control', 'no-store')
            // A string is sent as it is (no schema serialisation); the schema types the JSON answer.
            .send(`${lines.slice(0, CSV_MAX_EVENTS + 1).join('\r\n')}\r\n` as never)
        );
      },
    );
  };
}

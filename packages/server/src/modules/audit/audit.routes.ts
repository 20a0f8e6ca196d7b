import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { badRequest } from '../../errors.js';
import type { AuditLog } from './audit.service.js';

/** `limit`: 1–500 events a page, 100 when absent; anything else is refused, not clamped. */
function pageSize(limit: string | undefined): number {
  const size = Number(limit ?? 100);
  if (size < 1 || size > 500) throw badRequest('limit must be a number of events from 1 to 500');
  return size;
}

const Query = Type.Object({
  user_id: Type.Optional(Type.String({ maxLength: 100 })),
  type: Type.Optional(Type.String({ maxLength: 100 })),
  from: Type.Optional(Type.String({ maxLength: 40 })),
  to: Type.Optional(Type.String({ maxLength: 40 })),
  before: Type.Optional(Type.String({ maxLength: 100 })),
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$' })),
});

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
          summary: 'The project’s security events, newest first',
          tags: ['audit'],
          querystring: Query,
          response: { 200: Page },
        },
      },
      async (request) => {
        const q = request.query;
        return audit.search(request.project.id, {
          userId: q.user_id,
          type: q.type,
          from: time(q.from, 'from'),
          to: time(q.to, 'to'),
          before: q.before,
          limit: pageSize(q.limit),
        });
      },
    );
  };
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../app.js';
import { badRequest } from '../../errors.js';

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

/** GET /v1/audit: the project's security events, newest first, by user, type and time range. */
export function auditRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/audit',
      { schema: { querystring: Query }, preHandler: ctx.hooks.integrator },
      async (request) => {
        const q = request.query;
        const limit = Math.min(Math.max(Number(q.limit ?? 100), 1), 500);
        const from = time(q.from, 'from');
        const to = time(q.to, 'to');
        let query = ctx.db.kysely
          .selectFrom('audit_events')
          .selectAll()
          .where('project_id', '=', request.project.id);
        if (q.user_id) query = query.where('user_id', '=', q.user_id);
        if (q.type) query = query.where('type', '=', q.type);
        if (from !== undefined) query = query.where('created_at', '>=', from);
        if (to !== undefined) query = query.where('created_at', '<', to);
        if (q.before) {
          const cursor = await ctx.db.kysely
            .selectFrom('audit_events')
            .select(['created_at', 'id'])
            .where('id', '=', q.before)
            .executeTakeFirst();
          if (cursor) {
            query = query.where((eb) =>
              eb.or([
                eb('created_at', '<', cursor.created_at),
                eb.and([eb('created_at', '=', cursor.created_at), eb('id', '<', cursor.id)]),
              ]),
            );
          }
        }
        const rows = await query
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc')
          .limit(limit + 1)
          .execute();
        const page = rows.slice(0, limit);
        return {
          events: page.map((e) => ({
            event_id: e.id,
            type: e.type,
            user_id: e.user_id,
            data: JSON.parse(e.data) as Record<string, unknown>,
            created_at: new Date(e.created_at).toISOString(),
          })),
          next_before: rows.length > limit ? page[page.length - 1]!.id : null,
        };
      },
    );
  };
}

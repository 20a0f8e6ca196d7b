import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import type { Db } from '../../db/connect.js';
import { badRequest } from '../../errors.js';
import type { RateLimiter } from '../../plugins/rate-limiter.js';
import type { SendBudget } from '../otp/send-budget.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The most buckets one answer holds (31 days of hours, a year and a day of days). */
const MAX_BUCKETS = { hour: 31 * 24, day: 366 } as const;
const TYPES = ['signin.succeeded', 'signin.failed', 'otp.sent', 'refresh.reuse_detected'] as const;

const Bucket = Type.Object({
  start: Type.String({ format: 'date-time' }),
  sign_ins: Type.Record(Type.String(), Type.Integer(), { description: 'Successful sign-ins by method' }),
  failures: Type.Integer({ description: 'Refused sign-ins of known users (signin.failed)' }),
  otp_sends: Type.Integer({ description: 'Sign-in codes sent (otp.sent)' }),
  reuse_detections: Type.Integer({
    description: 'Rotated refresh tokens presented again (refresh.reuse_detected)',
  }),
});
const OtpBudget = Type.Object({
  channel: Type.Union([Type.Literal('email'), Type.Literal('sms')]),
  period: Type.Union([Type.Literal('hour'), Type.Literal('day')]),
  used: Type.Integer({
    description: 'Codes handed to the provider in the current window (failed deliveries too)',
  }),
  limit: Type.Union([Type.Integer(), Type.Null()], {
    description: 'The budget (TESSERA_{SMS,EMAIL}_BUDGET_{HOURLY,DAILY}); null: off',
  }),
  resets_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When the current window ends; null when nothing is counted',
  }),
});
const Stats = Type.Object({
  from: Type.String({ format: 'date-time' }),
  to: Type.String({ format: 'date-time' }),
  bucket: Type.Union([Type.Literal('hour'), Type.Literal('day')]),
  buckets: Type.Array(Bucket),
  otp_budgets: Type.Array(OtpBudget, {
    description: 'The project’s OTP send budgets now: each channel’s hourly and daily window',
  }),
});

function time(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d{1,12}$/.test(value) ? Number(value) * 1000 : Date.parse(value);
  if (!Number.isFinite(ms)) throw badRequest(`${name} must be an ISO 8601 time or Unix seconds`);
  return ms;
}

/**
 * `GET /v1/stats` (issue 33, the console's overview): the project's sign-ins per method, failures,
 * OTP sends and refresh-token reuse detections per hour or day, counted from its audit events
 * (kept for TESSERA_AUDIT_RETENTION_DAYS). Every bucket of the range is listed, empty ones too.
 */
export function statsRoutes(deps: {
  db: Db;
  /** The send budgets' windows, read without counting (`RateLimiter.peek`). */
  budget: SendBudget;
  limiter: RateLimiter;
  now?: () => number;
}): FastifyPluginAsyncTypebox {
  const now = deps.now ?? Date.now;
  return async (app) => {
    app.get(
      '/v1/stats',
      {
        schema: {
          operationId: 'getStats',
          summary: 'Sign-ins per method, failures, OTP sends and refresh reuse detections over time',
          tags: ['stats'],
          querystring: Type.Object({
            from: Type.Optional(
              Type.String({
                maxLength: 40,
                description: 'Default: 24 hours (hour) or 30 days (day) before `to`',
              }),
            ),
            to: Type.Optional(Type.String({ maxLength: 40, description: 'Default: now' })),
            bucket: Type.Optional(
              Type.Union([Type.Literal('hour'), Type.Literal('day')], { description: 'Default: hour' }),
            ),
          }),
          response: { 200: Stats },
        },
      },
      async (request) => {
        const bucket = request.query.bucket ?? 'hour';
        const size = bucket === 'hour' ? HOUR : DAY;
        const to = time(request.query.to, 'to') ?? now();
        const from = time(request.query.from, 'from') ?? to - (bucket === 'hour' ? DAY : 30 * DAY);
        if (from >= to) throw badRequest('from must be before to');
        const first = Math.floor(from / size);
        const last = Math.floor((to - 1) / size);
        if (last - first + 1 > MAX_BUCKETS[bucket])
          throw badRequest(
            `at most ${MAX_BUCKETS[bucket]} buckets of a ${bucket}: narrow from and to, or count by day`,
          );
        const method =
          deps.db.dialect === 'postgres'
            ? sql<string | null>`(data::json ->> 'method')`
            : sql<string | null>`json_extract(data, '$.method')`;
        const slot = sql<number>`(created_at / cast(${size} as bigint))`;
        const rows = await deps.db.kysely
          .selectFrom('audit_events')
          .select([
            'type',
            slot.as('slot'),
            sql<string | null>`case when type = 'signin.succeeded' then ${method} else null end`.as('method'),
            (eb) => eb.fn.countAll<number | string>().as('count'),
          ])
          .where('project_id', '=', request.project.id)
          .where('created_at', '>=', from)
          .where('created_at', '<', to)
          .where('type', 'in', TYPES)
          .groupBy(['type', sql`2`, sql`3`])
          .execute();
        const buckets = Array.from({ length: last - first + 1 }, (_, i) => ({
          start: new Date((first + i) * size).toISOString(),
          sign_ins: {} as Record<string, number>,
          failures: 0,
          otp_sends: 0,
          reuse_detections: 0,
        }));
        for (const row of rows) {
          const entry = buckets[Math.floor(Number(row.slot)) - first];
          if (!entry) continue;
          const count = Number(row.count);
          if (row.type === 'signin.succeeded') {
            const key = row.method ?? 'unknown';
            entry.sign_ins[key] = (entry.sign_ins[key] ?? 0) + count;
          } else if (row.type === 'signin.failed') entry.failures += count;
          else if (row.type === 'otp.sent') entry.otp_sends += count;
          else entry.reuse_detections += count;
        }
        const budgets = deps.budget.budgets(request.project);
        const windows = await deps.limiter.peek(budgets.map((b) => b.counter));
        const otp_budgets = budgets.map((b, i) => ({
          channel: b.channel,
          period: b.period,
          used: windows[i]?.count ?? 0,
          limit: b.limit,
          resets_at: windows[i] ? new Date(windows[i].resetAt).toISOString() : null,
        }));
        return {
          from: new Date(from).toISOString(),
          to: new Date(to).toISOString(),
          bucket,
          buckets,
          otp_budgets,
        };
      },
    );
  };
}

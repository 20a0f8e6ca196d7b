import {
  type Kysely,
  type RawBuilder,
  sql,
  type Transaction,
  type UpdateQueryBuilder,
  type UpdateResult,
} from 'kysely';
import { deleteInBatches } from '../../db/batched-delete.js';
import { Channels, notifyChange } from '../../db/channels.js';
import type { Db } from '../../db/connect.js';
import { observeLate } from '../../db/late-outcome.js';
import { prepared, together, type Write } from '../../db/prepared.js';
import type { Database, Session, User } from '../../db/schema.js';
import { TurnBatch } from '../../db/turn-batch.js';
import type { EventColumns } from '../audit/audit.repository.js';
import * as auditRepository from '../audit/audit.repository.js';
import type { RecordedEvent } from '../audit/events.js';
import { type CustomClaims, parseClaims } from '../claims/claims.repository.js';

/** Every /verify instance polls it twice a second (revocation-list.ts): built and compiled once. */
const revokedSince = prepared((db, since: number) =>
  db
    .selectFrom('session_revocations')
    .select(['session_id as id', 'revoked_at'])
    .where('revoked_at', '>=', since),
);

export interface RefreshTokenRow {
  id: string;
  session_id: string;
  secret_hash: string;
  expires_at: number;
  rotated_at: number | null;
  successor_enc: string | null;
  rotated_by: string | null;
}

/** A connection or an open transaction: revocations join the caller's transaction when given one. */
export type Executor = Kysely<Database> | Transaction<Database>;

type SessionFilter = (
  q: UpdateQueryBuilder<Database, 'sessions', 'sessions', UpdateResult>,
) => UpdateQueryBuilder<Database, 'sessions', 'sessions', UpdateResult>;

/**
 * Revokes every live session the filter selects and records a tombstone for each (read by every
 * instance's revocation list), and on PostgreSQL notifies the other instances of the ids; returns
 * the ids revoked. Runs in the executor's transaction, or in one of its own.
 */
async function revokeSelected(
  executor: Executor,
  filter: SessionFilter,
  reason: string,
  now: number,
): Promise<string[]> {
  const run = async (t: Executor) => {
    const rows = await filter(t.updateTable('sessions').set({ revoked_at: now, revoked_reason: reason }))
      .where('revoked_at', 'is', null)
      .returning(['id', 'project_id'])
      .execute();
    if (rows.length > 0) {
      await t
        .insertInto('session_revocations')
        .values(rows.map((r) => ({ session_id: r.id, project_id: r.project_id, revoked_at: now })))
        .onConflict((oc) => oc.column('session_id').doNothing())
        .execute();
      // Delivered to the other instances when this transaction commits (PostgreSQL only).
      await notifyChange(t, Channels.revocations, { sessions: rows.map((r) => r.id) });
    }
    return rows.map((r) => r.id);
  };
  return executor.isTransaction ? run(executor) : executor.transaction().execute(run);
}

/** Ends one session (idempotent: the first reason and time stay). */
export function revokeSession(executor: Executor, sessionId: string, reason: string, now: number) {
  return revokeSelected(executor, (q) => q.where('id', '=', sessionId), reason, now);
}

/** Ends every live session of a user, or all but `except` (sign out the other devices). */
export function revokeUserSessions(
  executor: Executor,
  userId: string,
  reason: string,
  now: number,
  except?: string,
) {
  return revokeSelected(
    executor,
    (q) => {
      const mine = q.where('user_id', '=', userId);
      return except ? mine.where('id', '!=', except) : mine;
    },
    reason,
    now,
  );
}

/** Ends the sessions an OAuth client's codes started, or one user's of them. */
export function revokeClientSessions(
  executor: Executor,
  clientId: string,
  reason: string,
  now: number,
  userId?: string,
) {
  return revokeSelected(
    executor,
    (q) => {
      const theirs = q.where('client_id', '=', clientId);
      return userId ? theirs.where('user_id', '=', userId) : theirs;
    },
    reason,
    now,
  );
}

/** Ends the sessions a trusted device started (the device was removed or forgotten). */
export function revokeDeviceSessions(executor: Executor, deviceId: string, reason: string, now: number) {
  return revokeSelected(executor, (q) => q.where('device_id', '=', deviceId), reason, now);
}

/** Ends the sessions a passkey started (the passkey was removed). */
export function revokePasskeySessions(executor: Executor, passkeyId: string, reason: string, now: number) {
  return revokeSelected(executor, (q) => q.where('passkey_id', '=', passkeyId), reason, now);
}

const refreshContext = prepared((db, tokenId: string) =>
  db
    .selectFrom('refresh_tokens as t')
    .innerJoin('sessions as s', 's.id', 't.session_id')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .leftJoin('user_claims as c', (join) =>
      join.onRef('c.user_id', '=', 'u.id').onRef('c.project_id', '=', 's.project_id'),
    )
    .select([
      't.secret_hash',
      't.expires_at as t_expires_at',
      't.rotated_at',
      't.successor_enc',
      't.rotated_by',
      's.id as s_id',
      's.project_id',
      's.user_id',
      's.auth_method',
      's.auth_time',
      's.device_id',
      's.passkey_id',
      's.created_at as s_created_at',
      's.expires_at as s_expires_at',
      's.revoked_at',
      's.revoked_reason',
      's.client_id',
      's.scope',
      's.resource',
      'u.identifier',
      'u.identifier_type',
      'u.client_user_id',
      'u.created_at as u_created_at',
      'u.last_sign_in_at',
      'c.claims',
    ])
    .where('t.id', '=', tokenId),
);

/**
 * PostgreSQL: when a rotation took effect, on the caller's clock: `now` (read when the grant
 * began) plus the time between `sentAt` (the real clock when the statement was handed to the pool)
 * and the statement's execution. A grant can take effect seconds after it began: a wait for a pool
 * connection or a row lock, or a statement the network held up after the caller had given up on
 * it and answered 503. Written as the successor's `created_at` (and the old token's
 * `rotated_at`): the successor's insert runs after the update has its row, lock waits included,
 * whereas PostgreSQL may compute the update's new values before it waits for the row. The grace
 * window of a retry is timed from the later of the two (session.service.ts, `#replayed`): from
 * the beginning of the grant, a client retrying after a slow answer, or after our own 503 and
 * its Retry-After, found its rotation "too old" and the session was revoked as reuse. A database
 * clock behind the caller's adds nothing; one ahead lengthens the window by the skew.
 */
const tookEffect = (now: RawBuilder<unknown> | number, sentAt: number) =>
  sql<number>`(${now}::bigint + greatest(0, (extract(epoch from clock_timestamp()) * 1000)::bigint - ${sentAt}::bigint))`;

const markRotated = prepared((db, oldId: string, now: number, successorEnc: string, rotatedBy: string) =>
  db
    .updateTable('refresh_tokens')
    .set({ rotated_at: now, successor_enc: successorEnc, rotated_by: rotatedBy })
    .where('id', '=', oldId)
    .where('rotated_at', 'is', null),
);

const insertRefreshToken = prepared(
  (db, id: string, sessionId: string, secretHash: string, createdAt: number, expiresAt: number) =>
    db.insertInto('refresh_tokens').values({
      id,
      session_id: sessionId,
      secret_hash: secretHash,
      created_at: createdAt,
      expires_at: expiresAt,
      rotated_at: null,
      successor_enc: null,
      rotated_by: null,
    }),
);

const insertSession = prepared(
  (
    db,
    id: string,
    projectId: string,
    userId: string,
    authMethod: string,
    authTime: number,
    deviceId: string | null,
    passkeyId: string | null,
    createdAt: number,
    expiresAt: number,
    lastRefreshedAt: number | null,
    revokedAt: number | null,
    revokedReason: string | null,
    ipNetwork: string | null,
  ) =>
    db.insertInto('sessions').values({
      id,
      project_id: projectId,
      user_id: userId,
      auth_method: authMethod,
      auth_time: authTime,
      device_id: deviceId,
      passkey_id: passkeyId,
      created_at: createdAt,
      expires_at: expiresAt,
      last_refreshed_at: lastRefreshedAt,
      revoked_at: revokedAt,
      revoked_reason: revokedReason,
      ip_network: ipNetwork,
    }),
);

/**
 * A session an OAuth client's code exchange starts: its client, scopes and resource beside the
 * columns `insertSession` writes (which every other sign-in uses unchanged).
 */
const insertClientSession = prepared(
  (
    db,
    id: string,
    projectId: string,
    userId: string,
    authMethod: string,
    authTime: number,
    createdAt: number,
    expiresAt: number,
    clientId: string,
    scope: string | null,
    resource: string | null,
    ipNetwork: string | null,
  ) =>
    db.insertInto('sessions').values({
      id,
      project_id: projectId,
      user_id: userId,
      auth_method: authMethod,
      auth_time: authTime,
      device_id: null,
      passkey_id: null,
      created_at: createdAt,
      expires_at: expiresAt,
      client_id: clientId,
      scope,
      resource,
      ip_network: ipNetwork,
    }),
);

/**
 * PostgreSQL: a whole rotation in one statement (atomic without BEGIN and COMMIT round trips).
 * `rotated` is the conditional update that makes exactly one concurrent caller the winner; the
 * successor and (`rotateAndRecord`) the audit event are written only from its row, i.e. only for
 * the winner. The session row is not written: its last refresh is the newest `rotated_at` of its
 * tokens (`lastRefreshedAt`).
 */
const rotation = (
  oldId: string,
  now: number,
  successorEnc: string,
  rotatedBy: string,
  successorId: string,
  secretHash: string,
  expiresAt: number,
  sentAt: number,
) => sql`
  rotated as (
    update refresh_tokens set rotated_at = ${tookEffect(now, sentAt)}, successor_enc = ${successorEnc},
      rotated_by = ${rotatedBy}
    where id = ${oldId} and rotated_at is null
    returning session_id
  ),
  successor as (
    insert into refresh_tokens (id, session_id, secret_hash, created_at, expires_at)
    select ${successorId}::text, session_id, ${secretHash}::text, ${tookEffect(now, sentAt)}, ${expiresAt}::bigint
    from rotated
  )`;

type RotationArgs = Parameters<typeof rotation>;
const ROTATION_ARITY = rotation.length;

const rotateOnly = prepared(
  (_db, ...args: RotationArgs) =>
    sql<{ rotated: boolean }>`with ${rotation(...args)}
  select exists (select 1 from rotated) as rotated`,
);

const rotateAndRecord = prepared((_db, ...args: [...RotationArgs, ...EventColumns]) => {
  const event = args.slice(ROTATION_ARITY) as EventColumns;
  return sql<{ rotated: boolean }>`with ${rotation(...(args.slice(0, ROTATION_ARITY) as RotationArgs))},
  event as (${auditRepository.insertFrom('rotated', ...event)})
  select exists (select 1 from rotated) as rotated`;
});

/**
 * A refresh token with its session, its session's user and the user's custom claims. The session
 * comes without its last refresh, which a grant does not need (`lastRefreshedAt`).
 */
export interface RefreshFound {
  token: RefreshTokenRow;
  session: Omit<Session, 'last_refreshed_at' | 'ip_network'>;
  user: User;
  claims: CustomClaims;
}

/**
 * The database's clock (epoch ms) as a grant statement returns it, for the instance's clock skew
 * (db/clock-skew.ts): read by the rotation anyway (`tookEffect`), one column more.
 */
const databaseClock = sql`(extract(epoch from clock_timestamp()) * 1000)::bigint as db_clock`;
interface DatabaseClock {
  db_clock: number;
}

/** The columns `refreshContext` and `currentRotation` read. */
type RefreshContextRow = Awaited<ReturnType<typeof refreshContext>>['rows'][number];

function refreshFound(tokenId: string, r: RefreshContextRow): RefreshFound {
  return {
    token: {
      id: tokenId,
      session_id: r.s_id,
      secret_hash: r.secret_hash,
      expires_at: r.t_expires_at,
      rotated_at: r.rotated_at,
      successor_enc: r.successor_enc,
      rotated_by: r.rotated_by,
    },
    session: {
      id: r.s_id,
      project_id: r.project_id,
      user_id: r.user_id,
      auth_method: r.auth_method,
      auth_time: r.auth_time,
      device_id: r.device_id,
      passkey_id: r.passkey_id,
      created_at: r.s_created_at,
      expires_at: r.s_expires_at,
      revoked_at: r.revoked_at,
      revoked_reason: r.revoked_reason,
      client_id: r.client_id,
      scope: r.scope,
      resource: r.resource,
    },
    user: {
      id: r.user_id,
      project_id: r.project_id,
      identifier: r.identifier,
      identifier_type: r.identifier_type,
      client_user_id: r.client_user_id,
      created_at: r.u_created_at,
      last_sign_in_at: r.last_sign_in_at,
    },
    claims: parseClaims(r.claims),
  };
}

/**
 * PostgreSQL: the refresh grant of a current token in one statement, one round trip instead of two
 * (the read, then the rotation). The conditional update is the whole check: the secret's hash
 * (compared in the database; a SHA-256 of 256 random bits, whose comparison time tells an
 * attacker nothing he could steer), not yet rotated, not expired, the session live and the
 * client's. It makes exactly one concurrent caller the winner, as `rotation` does; the successor
 * and the `refresh` event are written from its row only. The final
 * select reads the context as `refreshContext` does (the statement's snapshot: the token as it
 * was before this rotation), and only when this caller won.
 */
const currentRotation = prepared(
  (
    _db,
    oldId: string,
    secretHash: string,
    projectId: string,
    now: number,
    successorEnc: string,
    rotatedBy: string,
    successorId: string,
    successorHash: string,
    eventId: string,
    eventAt: number,
    sentAt: number,
  ) => sql<RefreshContextRow & DatabaseClock>`with
  rotated as (
    update refresh_tokens as t
    set rotated_at = ${tookEffect(now, sentAt)}, successor_enc = ${successorEnc}, rotated_by = ${rotatedBy}
    from sessions as s
    where t.id = ${oldId} and t.secret_hash = ${secretHash} and t.rotated_at is null
      and t.expires_at > ${now} and s.id = t.session_id and s.project_id = ${projectId}
      and s.revoked_at is null and s.expires_at > ${now} and s.client_id is null
    returning t.session_id, s.user_id, s.expires_at
  ),
  successor as (
    insert into refresh_tokens (id, session_id, secret_hash, created_at, expires_at)
    select ${successorId}::text, session_id, ${successorHash}::text, ${tookEffect(now, sentAt)}, expires_at
    from rotated
  ),
  event as (
    insert into audit_events (id, project_id, user_id, type, data, ip, created_at)
    select ${eventId}::text, ${projectId}::text, user_id, 'refresh',
      '{"session_id":' || to_json(session_id)::text || '}', null, ${eventAt}::bigint
    from rotated
  )
  select t.secret_hash, t.expires_at as t_expires_at, t.rotated_at, t.successor_enc, t.rotated_by,
    s.id as s_id, s.project_id, s.user_id, s.auth_method, s.auth_time, s.device_id, s.passkey_id,
    s.created_at as s_created_at, s.expires_at as s_expires_at, s.revoked_at,
    s.revoked_reason, s.client_id, s.scope, s.resource, u.identifier, u.identifier_type,
    u.client_user_id, u.created_at as u_created_at, u.last_sign_in_at, c.claims, ${databaseClock}
  from rotated as r
  join refresh_tokens as t on t.id = ${oldId}
  join sessions as s on s.id = r.session_id
  join users as u on u.id = s.user_id
  left join user_claims as c on c.user_id = u.id and c.project_id = s.project_id`,
);

/**
 * A session's last refresh: the newest rotation among its refresh tokens, which are kept for the
 * session's life (reuse detection). A refresh grant writes only the tokens, not the session row:
 * one row write, its WAL record and its dead tuple fewer per grant. `sessions.last_refreshed_at`
 * is no longer written (the previous release's instances still write it during a rolling
 * upgrade, so the column stays); every read of a session takes this instead.
 */
const lastRefreshedAt = sql<
  number | null
>`(select max(t.rotated_at) from refresh_tokens as t where t.session_id = sessions.id)`;

/** A session's stored columns, all but its last refresh. */
const storedSessionColumns = [
  'id',
  'project_id',
  'user_id',
  'auth_method',
  'auth_time',
  'device_id',
  'passkey_id',
  'created_at',
  'expires_at',
  'revoked_at',
  'revoked_reason',
  'client_id',
  'scope',
  'resource',
  'ip_network',
] as const;

/**
 * A session's columns as `Session` has them, its last refresh from `lastRefreshedAt`: an
 * aggregate over all of the session's refresh tokens (one a rotation, some 720 over a 30-day
 * session with hourly access tokens), so only the sessions listing reads it.
 */
const sessionColumns = [...storedSessionColumns, lastRefreshedAt.as('last_refreshed_at')] as const;

/** One grant of `batchedRotation`: `currentRotation`'s arguments, per grant. */
interface Grant {
  oldId: string;
  secretHash: string;
  projectId: string;
  now: number;
  successorEnc: string;
  rotatedBy: string;
  successorId: string;
  successorHash: string;
  eventId: string;
  eventAt: number;
}

/** Grants in one batched statement at most. */
const MAX_BATCH = 32;

/**
 * PostgreSQL: `currentRotation` for several grants in one statement, each grant a row of the
 * arrays (`unnest`); the rows returned are the winners', each with its own `successor_id`. Every
 * grant is checked, rotated, recorded and read exactly as alone: the conditional update joins each
 * token to its own input row, and everything after it (successor, event, context) is written and
 * read from `rotated`'s rows, each carrying its input row's values. The tokens of one batch differ
 * (`SessionRepository` defers a repeat to the next batch): a row cannot be updated twice in one
 * statement.
 */
const batchedRotation = prepared(
  (
    _db,
    oldIds: string[],
    secretHashes: string[],
    projectIds: string[],
    nows: number[],
    successorEncs: string[],
    rotatedBys: string[],
    successorIds: string[],
    successorHashes: string[],
    eventIds: string[],
    eventAts: number[],
    sentAt: number,
  ) => sql<RefreshContextRow & DatabaseClock & { successor_id: string }>`with
  input as (
    select * from unnest(${oldIds}::text[], ${secretHashes}::text[], ${projectIds}::text[],
      ${nows}::bigint[], ${successorEncs}::text[], ${rotatedBys}::text[], ${successorIds}::text[],
      ${successorHashes}::text[], ${eventIds}::text[], ${eventAts}::bigint[])
      as i (old_id, secret_hash, project_id, now, successor_enc, rotated_by, successor_id,
        successor_hash, event_id, event_at)
  ),
  found as (
    select i.successor_id, i.successor_hash, i.successor_enc, i.rotated_by, i.now, i.event_id,
      i.event_at, f.*
    from input as i
    cross join lateral (
      select t.ctid as tid, t.id as old_id, t.secret_hash, t.expires_at as t_expires_at,
        t.rotated_at, t.successor_enc as t_successor_enc, t.rotated_by as t_rotated_by,
        s.id as s_id, s.project_id, s.user_id, s.auth_method, s.auth_time, s.device_id,
        s.passkey_id, s.created_at as s_created_at, s.expires_at as s_expires_at, s.revoked_at,
        s.revoked_reason, s.client_id, s.scope, s.resource, u.identifier, u.identifier_type,
        u.client_user_id, u.created_at as u_created_at, u.last_sign_in_at, c.claims
      from refresh_tokens as t
      join sessions as s on s.id = t.session_id
      join users as u on u.id = s.user_id
      left join user_claims as c on c.user_id = u.id and c.project_id = s.project_id
      where t.id = i.old_id and t.secret_hash = i.secret_hash and t.rotated_at is null
        and t.expires_at > i.now and s.project_id = i.project_id and s.revoked_at is null
        and s.expires_at > i.now and s.client_id is null
      offset 0
    ) as f
  ),
  rotated as (
    update refresh_tokens as t
    set rotated_at = ${tookEffect(sql`f.now`, sentAt)}, successor_enc = f.successor_enc,
      rotated_by = f.rotated_by
    from found as f
    where t.ctid = any (array(select tid from found)) and t.ctid = f.tid and t.rotated_at is null
    returning f.*
  ),
  successor as (
    insert into refresh_tokens (id, session_id, secret_hash, created_at, expires_at)
    select successor_id, s_id, successor_hash, ${tookEffect(sql`now`, sentAt)}, s_expires_at from rotated
  ),
  event as (
    insert into audit_events (id, project_id, user_id, type, data, ip, created_at)
    select event_id, project_id, user_id, 'refresh',
      '{"session_id":' || to_json(s_id)::text || '}', null, event_at
    from rotated
  )
  select successor_id, secret_hash, t_expires_at, rotated_at, t_successor_enc as successor_enc,
    t_rotated_by as rotated_by, s_id, project_id, user_id, auth_method, auth_time, device_id,
    passkey_id, s_created_at, s_expires_at, revoked_at, revoked_reason, client_id, scope, resource,
    identifier, identifier_type, client_user_id, u_created_at, last_sign_in_at, claims, ${databaseClock}
  from rotated`,
);

/**
 * PostgreSQL: stamps successors whose rotation committed after the grant had answered 503 with
 * the time that was learned (see `SessionRepository.#observed`), unless already used.
 */
const restampLate = prepared(
  (_db, ids: string[], ats: number[]) => sql`update refresh_tokens as t
  set created_at = greatest(t.created_at, l.at)
  from unnest(${ids}::text[], ${ats}::bigint[]) as l (id, at)
  where t.id = l.id and t.rotated_at is null`,
);

/** A successor that a rotation created, with the grant's clock (`now`) when it began. */
interface Created {
  id: string;
  now: number;
}

/** What the repository reports to the service's log and metrics. */
export interface SessionRepositoryOptions {
  onBatchFailed?: (error: unknown, size: number) => void;
  /**
   * Rotations that committed after their grant had answered 503 (the answer was lost): `count`
   * successors re-stamped so the client's retry finds them, or `error` if that failed.
   */
  onLateRotation?: (count: number, error?: unknown) => void;
  /**
   * The database's clock as a grant statement read it (`databaseMs`, epoch ms), with the
   * statement's round trip on this instance (ms): see db/clock-skew.ts.
   */
  onDatabaseClock?: (databaseMs: number, roundTripMs: number) => void;
}

export class SessionRepository {
  /**
   * PostgreSQL: the grants of one turn of the event loop, in one statement (`batchedRotation`); a
   * grant alone, or of a batch that failed as a whole, in its own (`currentRotation`).
   */
  readonly #grants = new TurnBatch<Grant, RefreshContextRow | undefined>({
    max: MAX_BATCH,
    key: (grant) => grant.oldId,
    onBatchFailed: (error, size) => this.options.onBatchFailed?.(error, size),
    many: async (grants) => {
      const column = <K extends keyof Grant>(key: K) => grants.map((g) => g[key]);
      const started = performance.now();
      const sentAt = Date.now();
      const byId = new Map(grants.map((g) => [g.successorId, g.now]));
      const created = (rows: readonly unknown[]) =>
        (rows as Array<{ successor_id: string }>).map((r) => ({
          id: r.successor_id,
          now: byId.get(r.successor_id) ?? 0,
        }));
      const { rows } = await this.#observed(sentAt, created, () =>
        batchedRotation(
          this.db.kysely,
          column('oldId'),
          column('secretHash'),
          column('projectId'),
          column('now'),
          column('successorEnc'),
          column('rotatedBy'),
          column('successorId'),
          column('successorHash'),
          column('eventId'),
          column('eventAt'),
          sentAt,
        ),
      );
      this.#readClock(rows[0], started);
      // Rows only: turning a row into its context (parsing the claims) could fail after the
      // commit, which `many` must not (TurnBatch would retry grants that already rotated).
      const won = new Map(rows.map((r) => [r.successor_id, r]));
      return grants.map((grant) => won.get(grant.successorId));
    },
    alone: async (grant) => {
      const started = performance.now();
      const sentAt = Date.now();
      const created = (rows: readonly unknown[]) =>
        rows.length > 0 ? [{ id: grant.successorId, now: grant.now }] : [];
      const [r] = (
        await this.#observed(sentAt, created, () =>
          currentRotation(
            this.db.kysely,
            grant.oldId,
            grant.secretHash,
            grant.projectId,
            grant.now,
            grant.successorEnc,
            grant.rotatedBy,
            grant.successorId,
            grant.successorHash,
            grant.eventId,
            grant.eventAt,
            sentAt,
          ),
        )
      ).rows;
      this.#readClock(r, started);
      return r;
    },
  });

  constructor(
    private readonly db: Db,
    private readonly options: SessionRepositoryOptions = {},
  ) {}

  /** Hands the database's clock a grant statement returned to `onDatabaseClock`. */
  #readClock(row: DatabaseClock | undefined, started: number): void {
    if (row) this.options.onDatabaseClock?.(row.db_clock, performance.now() - started);
  }

  /**
   * PostgreSQL: runs a rotation statement so that, if it commits only after the grant answered
   * 503 (a frozen database, a commit waiting for a synchronous standby), the answer lost with
   * it does not turn the client's retry into "reuse". The connection waits for the late answer
   * (db/late-outcome.ts); the successors it created, if still unused, are then stamped with the
   * time it came, so the grace window of the retry runs from when the rotation became known to
   * have happened, however late that was. A thief on another client gains nothing (the grace
   * answer goes only to the client that rotated); a rotation answered in time is unchanged.
   */
  #observed<T>(sentAt: number, created: (rows: readonly unknown[]) => Created[], run: () => Promise<T>) {
    return observeLate((rows) => {
      const list = created(rows);
      if (list.length === 0) return;
      const late = Date.now() - sentAt;
      const report = this.options.onLateRotation;
      restampLate(
        this.db.kysely,
        list.map((c) => c.id),
        list.map((c) => c.now + late),
      ).then(
        () => report?.(list.length),
        (error: unknown) => report?.(list.length, error),
      );
    }, run);
  }

  /** Inserts a session with its first refresh token, atomically. */
  async create(session: Session, token: { id: string; secret_hash: string }): Promise<void> {
    await this.store(this.creation(session, token));
  }

  /** Runs writes (`creation`'s and others') atomically: one statement on PostgreSQL. */
  async store(writes: readonly Write[]): Promise<void> {
    await together(this.db.kysely, writes);
  }

  /**
   * The writes that start a session: the session and its first refresh token, to be run together
   * (`together`, or `AuditLog.recordWith` with the sign-in's event; one statement on PostgreSQL).
   */
  creation(session: Session, token: { id: string; secret_hash: string }): Write[] {
    return [
      session.client_id !== null
        ? insertClientSession.write(
            session.id,
            session.project_id,
            session.user_id,
            session.auth_method,
            session.auth_time,
            session.created_at,
            session.expires_at,
            session.client_id,
            session.scope,
            session.resource,
            session.ip_network,
          )
        : insertSession.write(
            session.id,
            session.project_id,
            session.user_id,
            session.auth_method,
            session.auth_time,
            session.device_id,
            session.passkey_id,
            session.created_at,
            session.expires_at,
            session.last_refreshed_at,
            session.revoked_at,
            session.revoked_reason,
            session.ip_network,
          ),
      insertRefreshToken.write(
        token.id,
        session.id,
        token.secret_hash,
        session.created_at,
        session.expires_at,
      ),
    ];
  }

  /** A session without its last refresh, which only the sessions listing shows (`listByUser`). */
  findById(id: string): Promise<Omit<Session, 'last_refreshed_at' | 'ip_network'> | undefined> {
    return this.db.kysely
      .selectFrom('sessions')
      .select(storedSessionColumns)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  findRefreshToken(id: string): Promise<(RefreshTokenRow & { created_at: number }) | undefined> {
    return this.db.kysely
      .selectFrom('refresh_tokens')
      .select([
        'id',
        'session_id',
        'secret_hash',
        'created_at',
        'expires_at',
        'rotated_at',
        'successor_enc',
        'rotated_by',
      ])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /**
   * Everything a refresh grant needs in one read: the token, its session, the session's user and
   * the user's custom claims (JSON, or null when none).
   */
  async findForRefresh(tokenId: string): Promise<RefreshFound | undefined> {
    const [r] = (await refreshContext(this.db.kysely, tokenId)).rows;
    return r ? refreshFound(tokenId, r) : undefined;
  }

  /** Whether `rotateCurrent` is available: PostgreSQL. */
  get rotatesInOneStatement(): boolean {
    return this.db.dialect === 'postgres';
  }

  /**
   * PostgreSQL: a whole refresh grant's database work in one statement (see `currentRotation`),
   * for a token that is current: its secret matches, it has not been rotated, it and its session
   * have not expired, the session is live and belongs to `projectId`. Returns what the new bundle
   * needs, or undefined when the token is not current (nothing was written; the caller's full
   * path then reads the token and answers why). `event` is the refresh event's id and time. The
   * grants of one turn of the event loop share a statement (`#grants`).
   */
  async rotateCurrent(
    presented: { id: string; secret_hash: string },
    projectId: string,
    successor: { id: string; secret_hash: string; successor_enc: string },
    now: number,
    /** Hash of the client making the grant. */
    rotatedBy: string,
    event: { id: string; createdAt: number },
  ): Promise<RefreshFound | undefined> {
    if (!this.rotatesInOneStatement) throw new Error('rotateCurrent needs PostgreSQL');
    const row = await this.#grants.add({
      oldId: presented.id,
      secretHash: presented.secret_hash,
      projectId,
      now,
      successorEnc: successor.successor_enc,
      rotatedBy,
      successorId: successor.id,
      successorHash: successor.secret_hash,
      eventId: event.id,
      eventAt: event.createdAt,
    });
    // After the batch has settled: a context that cannot be built fails this grant alone.
    return row ? refreshFound(presented.id, row) : undefined;
  }

  /**
   * Rotates a refresh token: marks the old one used and stores its successor, atomically (the
   * session row is not written: see `lastRefreshedAt`). The conditional update makes exactly one of several concurrent callers
   * (in any number of processes) the winner; the others get false. An `event` (from
   * `AuditLog.inline`) is stored with the rotation, only when this caller won.
   *
   * PostgreSQL: one statement (see `rotation`). SQLite: a transaction of separate statements,
   * which its driver makes cheap.
   */
  async rotate(
    oldId: string,
    successor: {
      id: string;
      secret_hash: string;
      successor_enc: string;
      session_id: string;
      expires_at: number;
    },
    now: number,
    /** Hash of the client making the grant. */
    rotatedBy: string,
    event?: RecordedEvent,
  ): Promise<boolean> {
    if (this.db.dialect === 'postgres') {
      const args: RotationArgs = [
        oldId,
        now,
        successor.successor_enc,
        rotatedBy,
        successor.id,
        successor.secret_hash,
        successor.expires_at,
        Date.now(),
      ];
      const created = (rows: readonly unknown[]) =>
        (rows[0] as { rotated?: boolean } | undefined)?.rotated === true ? [{ id: successor.id, now }] : [];
      const { rows } = await this.#observed(args[7], created, () =>
        event
          ? rotateAndRecord(this.db.kysely, ...args, ...auditRepository.eventColumns(event))
          : rotateOnly(this.db.kysely, ...args),
      );
      return rows[0]?.rotated === true;
    }
    return this.db.kysely.transaction().execute(async (trx) => {
      const updated = await markRotated(trx, oldId, now, successor.successor_enc, rotatedBy);
      if (!updated.numAffectedRows) return false;
      await insertRefreshToken(
        trx,
        successor.id,
        successor.session_id,
        successor.secret_hash,
        now,
        successor.expires_at,
      );
      if (event) await auditRepository.insert(trx, event);
      return true;
    });
  }

  /** Ends the sessions of an OAuth client (or of one of its users); returns their ids. */
  revokeClientSessions(clientId: string, reason: string, now: number, userId?: string): Promise<string[]> {
    return revokeClientSessions(this.db.kysely, clientId, reason, now, userId);
  }

  /** Ends one session; true when this call ended it. */
  async revoke(id: string, reason: string, now: number): Promise<boolean> {
    return (await revokeSession(this.db.kysely, id, reason, now)).length > 0;
  }

  listByUser(userId: string, includeRevoked = false): Promise<Session[]> {
    let query = this.db.kysely.selectFrom('sessions').select(sessionColumns).where('user_id', '=', userId);
    if (!includeRevoked) query = query.where('revoked_at', 'is', null);
    return query.orderBy('created_at', 'desc').execute();
  }

  /** Sessions revoked at or after `since` (for the revocation list). */
  async revokedSince(since: number): Promise<Array<{ id: string; revoked_at: number }>> {
    return (await revokedSince(this.db.kysely, since)).rows;
  }

  /** Deletes sessions (and, by cascade, their refresh tokens) that ended before `before`, in bounded batches. */
  async pruneExpired(before: number): Promise<void> {
    await deleteInBatches(this.db.kysely, 'sessions', 'id', 'expires_at', before);
  }

  /** Drops tombstones older than any access token could be. */
  async pruneRevocations(before: number): Promise<void> {
    await this.db.kysely.deleteFrom('session_revocations').where('revoked_at', '<', before).execute();
  }
}

import { sql } from 'kysely';
import type { Db } from '../../db/connect.js';
import { prepared, together, type Write } from '../../db/prepared.js';
import type { OtpChallengeTable, User } from '../../db/schema.js';
import * as auditRepository from '../audit/audit.repository.js';
import type { RecordedEvent } from '../audit/events.js';
import { type CustomClaims, parseClaims } from '../claims/claims.repository.js';
import {
  hitIn,
  type InsertWhenAllowed,
  keyIn,
  keyParts,
  type RateWindow,
} from '../rate-limits/rate-limits.repository.js';
import type { StoredSignIn } from '../sign-in/sign-in.service.js';

export interface ReservedAttempt {
  identifier: string;
  channel: 'email' | 'sms';
  code_hash: string;
  attempts: number;
  max_attempts: number;
}

// Every otp/start stores one: built and compiled once, a named prepared statement on PostgreSQL.
const insertChallenge = prepared(
  (
    db,
    id: string,
    projectId: string,
    identifier: string,
    channel: 'email' | 'sms',
    codeHash: string,
    maxAttempts: number,
    createdAt: number,
    expiresAt: number,
    consumedAt: number | null,
  ) =>
    db.insertInto('otp_challenges').values({
      id,
      project_id: projectId,
      identifier,
      channel,
      code_hash: codeHash,
      max_attempts: maxAttempts,
      created_at: createdAt,
      expires_at: expiresAt,
      consumed_at: consumedAt,
    }),
);

const findChallenge = prepared((db, projectId: string, id: string) =>
  db.selectFrom('otp_challenges').selectAll().where('id', '=', id).where('project_id', '=', projectId),
);

const reserve = prepared((db, projectId: string, id: string, now: number) =>
  db
    .updateTable('otp_challenges')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .whereRef('attempts', '<', 'max_attempts')
    .returning(['identifier', 'channel', 'code_hash', 'attempts', 'max_attempts']),
);

const consumeChallenge = prepared((db, id: string, now: number) =>
  db
    .updateTable('otp_challenges')
    .set({ consumed_at: now })
    .where('id', '=', id)
    .where('consumed_at', 'is', null),
);

/**
 * Ends a consumed challenge's life (its expiry becomes its consumption): written with the sign-in
 * it led to, so that only a challenge whose sign-in was never stored can be finished later
 * (OtpService, `#resumeOrRefuse`).
 */
const closeChallenge = prepared((db, id: string) =>
  db
    .updateTable('otp_challenges')
    .set({ expires_at: sql<number>`consumed_at` })
    .where('id', '=', id)
    .where('consumed_at', 'is not', null),
);

/** A guess budget: its scope and subject as the rate limiter keys them, and its rule. */
export interface GuessBudget {
  scope: string;
  /** The subject before the challenge's identifier, and after it. */
  head: string;
  tail: string;
  limit: number;
  resetAt: number;
}

/** What one guess did, decided by the database in one statement (see `guess`). */
export interface Guess {
  /** The challenge's identifier; absent when there is no such challenge in the project (nothing was counted). */
  identifier?: string;
  /**
   * The right code for an open challenge, within all three budgets: counted in none of them (the
   * windows are then absent), nothing to give back.
   */
  free?: true;
  /** The network budget's window after this guess. */
  network?: RateWindow;
  /** The network's daily budget's window after this guess; absent when the network budget refused. */
  day?: RateWindow;
  /** The identifier-wide budget's window after this guess; absent when a network budget refused. */
  everywhere?: RateWindow;
  /** The attempt taken; absent when none could be (used, expired, out of tries, or a budget refused). */
  attempt?: { attempts: number; maxAttempts: number; matched: boolean };
  /** A right code: the user signed in (created on the first sign-in), with their PIN and claims. */
  signedIn?: {
    user: User;
    pin: { failedAttempts: number; locked: boolean } | null;
    claims: CustomClaims;
    /** The statement stored the sign-in and lifted the user's PIN lock with it (`pin.unlocked`). */
    pinUnlocked?: true;
  };
}

interface GuessRow {
  challenge_identifier: string | null;
  free: boolean;
  network_count: number | null;
  network_reset_at: number | null;
  day_count: number | null;
  day_reset_at: number | null;
  everywhere_count: number | null;
  everywhere_reset_at: number | null;
  attempts: number | null;
  max_attempts: number | null;
  matched: boolean | null;
  user_id: string | null;
  identifier: string | null;
  identifier_type: User['identifier_type'] | null;
  client_user_id: string | null;
  user_created_at: number | null;
  last_sign_in_at: number | null;
  has_pin: boolean;
  pin_failed_attempts: number | null;
  pin_locked_at: number | null;
  claims: string | null;
  /** With a sign-in stored: whether its statement lifted the user's PIN lock. */
  pin_unlocked?: boolean;
}

/** The guess statement's arguments (`guessStatement`). */
type GuessArgs = [
  id: string,
  projectId: string,
  now: number,
  codeHash: string,
  networkHead: Buffer,
  networkTail: Buffer,
  networkLimit: number,
  networkResetAt: number,
  dayHead: Buffer,
  dayTail: Buffer,
  dayLimit: number,
  dayResetAt: number,
  everywhereHead: Buffer,
  everywhereTail: Buffer,
  everywhereLimit: number,
  everywhereResetAt: number,
  newUserId: string,
];

const GUESS_ARITY = 17;

/** The rows of a sign-in the guess statement stores with a right code (`signInColumns`). */
type SignInArgs = ReturnType<typeof signInColumns>;

/**
 * PostgreSQL: a whole OTP guess in one statement, in the order the steps take on SQLite:
 * `network`, `day` and `everywhere` count the guess in the three budgets (each only when the one
 * before allows it; both keys hashed from the challenge's identifier by the statement itself);
 * `attempt` takes one of the challenge's tries, only when both budgets allow, and when the code's
 * MAC matches also consumes the challenge in the same conditional update, so exactly one caller
 * wins it; `signed_in` then creates or touches the user. Rows are locked in that order (budgets,
 * challenge, user) by every guess. The MAC is compared by PostgreSQL, not in constant time: it
 * is an HMAC under the server's key, so its timing tells a guesser nothing about the code.
 *
 * Except (`free`): the right code for a challenge still open, within all three budgets as they
 * stand (`seen`), is counted in none of them. The budgets count wrong codes: SQLite's steps take a
 * unit of each and give it back once the code is right (six row writes). Wrong guesses racing it
 * are counted as if it came first; a right code is counted, and refused, like a wrong one when a
 * budget is spent, so a refusal's writes do not tell a right code from a wrong one.
 *
 * With `signIn` (`guessAndSignIn`), a right code's whole sign-in is stored by the same statement
 * (`signInRows`): its session and first refresh token, its events, and the challenge closed (its
 * expiry becomes its consumption); the sign-in is then stored whole or not at all. Without it
 * (`guessAlone`: a webhook takes one of the events, whose deliveries are queued with it) the
 * sign-in is the caller's next statement, which a retry can finish if it fails (OtpService).
 */
function guessStatement(
  [
    id,
    projectId,
    now,
    codeHash,
    networkHead,
    networkTail,
    networkLimit,
    networkResetAt,
    dayHead,
    dayTail,
    dayLimit,
    dayResetAt,
    everywhereHead,
    everywhereTail,
    everywhereLimit,
    everywhereResetAt,
    newUserId,
  ]: GuessArgs,
  signIn?: SignInArgs,
) {
  const identifier = sql<string>`identifier`;
  // A window as it stands (no lock), by the key `ch` computed.
  const current = (alias: string, key: string) =>
    sql`left join rate_limits as ${sql.raw(alias)} on ${sql.raw(alias)}.key = ch.${sql.raw(key)} and ${sql.raw(alias)}.reset_at > ${now}`;
  return sql<GuessRow>`with
  ch as (
    select identifier,
      code_hash = ${codeHash} and consumed_at is null and expires_at > ${now} and attempts < max_attempts as right_and_open,
      ${keyIn(networkHead, identifier, networkTail)} as network_key,
      ${keyIn(dayHead, identifier, dayTail)} as day_key,
      ${keyIn(everywhereHead, identifier, everywhereTail)} as everywhere_key
    from otp_challenges where id = ${id} and project_id = ${projectId}
  ),
  seen as (
    select ch.right_and_open, n.count as network, d.count as day, e.count as everywhere
    from ch
      ${current('n', 'network_key')}
      ${current('d', 'day_key')}
      ${current('e', 'everywhere_key')}
  ),
  free as (
    select true as free from seen
    where right_and_open and coalesce(network, 0) < ${networkLimit} and coalesce(day, 0) < ${dayLimit}
      and coalesce(everywhere, 0) < ${everywhereLimit}
  ),
  counted as (select network_key, day_key, everywhere_key from ch where not exists (select from free)),
  network as (${hitIn('counted', sql<string>`network_key`, now, networkResetAt)}),
  day as (${hitIn(
    'counted',
    sql<string>`day_key`,
    now,
    dayResetAt,
    sql<boolean>`(select count from network) <= ${networkLimit}`,
  )}),
  everywhere as (${hitIn(
    'counted',
    sql<string>`everywhere_key`,
    now,
    everywhereResetAt,
    sql<boolean>`(select count from day) <= ${dayLimit}`,
  )}),
  attempt as (
    update otp_challenges
    set attempts = attempts + 1, consumed_at = case when code_hash = ${codeHash} then ${now}::bigint end${
      signIn
        ? sql`,
      expires_at = case when code_hash = ${codeHash} then ${now}::bigint else expires_at end`
        : sql``
    }
    where id = ${id} and project_id = ${projectId} and consumed_at is null and expires_at > ${now}
      and attempts < max_attempts
      and (exists (select from free) or (select count from everywhere) <= ${everywhereLimit})
    returning identifier, channel, attempts, max_attempts, consumed_at is not null as matched
  ),
  signed_in as (
    insert into users (id, project_id, identifier, identifier_type, client_user_id, created_at, last_sign_in_at)
    select ${newUserId}::text, ${projectId}::text, identifier,
      case when channel = 'sms' then 'phone' else 'email' end, null, ${now}::bigint, ${now}::bigint
    from attempt where matched
    on conflict (project_id, identifier) do update set last_sign_in_at = excluded.last_sign_in_at
    returning id, identifier, identifier_type, client_user_id, created_at, last_sign_in_at
  )${
    signIn
      ? sql`,
${signInRows(projectId, newUserId, signIn)}`
      : sql``
  }
select (select identifier from ch) as challenge_identifier, exists (select from free) as free,
  network.count as network_count, network.reset_at as network_reset_at,
  day.count as day_count, day.reset_at as day_reset_at,
  everywhere.count as everywhere_count, everywhere.reset_at as everywhere_reset_at,
  attempt.attempts, attempt.max_attempts, attempt.matched,
  u.id as user_id, u.identifier, u.identifier_type, u.client_user_id, u.created_at as user_created_at,
  u.last_sign_in_at, p.user_id is not null as has_pin, p.failed_attempts as pin_failed_attempts,
  p.locked_at as pin_locked_at, c.claims${signIn ? sql`, exists (select from pin_reset where was_locked) as pin_unlocked` : sql``}
from (select 1) as one
  left join network on true
  left join day on true
  left join everywhere on true
  left join attempt on true
  left join signed_in as u on true
  left join pins as p on p.user_id = u.id
  left join user_claims as c on c.user_id = u.id and c.project_id = ${projectId}`;
}

/**
 * The sign-in a right code makes, as CTEs after `signed_in` (one row when the code was right):
 * its session and first refresh token (when tokens were asked for), its `user.created` event when
 * `signed_in` created the user, its `signin.succeeded` event, and the user's PIN failures cleared
 * (an OTP sign-in lifts a PIN lock: SignInService) with `pin.unlocked` when this statement's own
 * update cleared a lock. `pin_was` locks the PIN's row and reads it as it stands then (a lock
 * committed since the statement's snapshot included), which the update clears.
 */
function signInRows(
  projectId: string,
  newUserId: string,
  [
    succeededId,
    succeededAt,
    succeededData,
    createdId,
    createdAt,
    createdEmailData,
    createdPhoneData,
    unlockedId,
    unlockedAt,
    unlockedData,
    sessionId,
    authMethod,
    authTime,
    deviceId,
    passkeyId,
    sessionCreatedAt,
    sessionExpiresAt,
    refreshId,
    refreshHash,
    ipNetwork,
  ]: SignInArgs,
) {
  return sql`  session as (
    insert into sessions (id, project_id, user_id, auth_method, auth_time, device_id, passkey_id, created_at,
      expires_at, last_refreshed_at, revoked_at, revoked_reason, ip_network)
    select ${sessionId}::text, ${projectId}::text, id, ${authMethod}::text, ${authTime}::bigint, ${deviceId}::text,
      ${passkeyId}::text, ${sessionCreatedAt}::bigint, ${sessionExpiresAt}::bigint, null, null, null, ${ipNetwork}::text
    from signed_in where ${sessionId}::text is not null
  ),
  first_refresh as (
    insert into refresh_tokens (id, session_id, secret_hash, created_at, expires_at, rotated_at, successor_enc,
      rotated_by)
    select ${refreshId}::text, ${sessionId}::text, ${refreshHash}::text, ${sessionCreatedAt}::bigint,
      ${sessionExpiresAt}::bigint, null, null, null
    from signed_in where ${sessionId}::text is not null
  ),
  created as (${auditRepository.insertFrom(
    sql`(select id, identifier_type from signed_in where id = ${newUserId}::text) as s`,
    createdId,
    projectId,
    sql`id`,
    'user.created',
    sql`case identifier_type when 'phone' then ${createdPhoneData}::text else ${createdEmailData}::text end`,
    null,
    createdAt,
  )}),
  succeeded as (${auditRepository.insertFrom(
    'signed_in',
    succeededId,
    projectId,
    sql`id`,
    'signin.succeeded',
    succeededData,
    null,
    succeededAt,
  )}),
  pin_was as (
    select user_id, locked_at from pins
    where user_id = (select id from signed_in) and failed_attempts > 0
    for update
  ),
  pin_reset as (
    update pins set failed_attempts = 0, locked_at = null
    from pin_was where pins.user_id = pin_was.user_id
    returning pin_was.locked_at is not null as was_locked, pins.user_id
  ),
  pin_unlocked as (${auditRepository.insertFrom(
    sql`(select user_id from pin_reset where was_locked) as r`,
    unlockedId,
    projectId,
    sql`user_id`,
    'pin.unlocked',
    unlockedData,
    null,
    unlockedAt,
  )})`;
}

const guessAlone = prepared((_db, ...args: GuessArgs) => guessStatement(args));

const guessAndSignIn = prepared((_db, ...args: [...GuessArgs, ...SignInArgs]) =>
  guessStatement(args.slice(0, GUESS_ARITY) as GuessArgs, args.slice(GUESS_ARITY) as unknown as SignInArgs),
);

const windowOf = (count: number | null, resetAt: number | null): RateWindow | undefined =>
  count === null || resetAt === null ? undefined : { count: Number(count), resetAt: Number(resetAt) };

/** A sign-in the guess statement stores, as its last arguments (the session's null: none). */
function signInColumns(stored: StoredSignIn) {
  const session = stored.session?.session;
  const refresh = stored.session?.refresh;
  return [
    stored.succeeded.id,
    stored.succeeded.createdAt,
    stored.succeeded.data,
    stored.created.id,
    stored.created.createdAt,
    stored.created.data.email,
    stored.created.data.phone,
    stored.unlocked.id,
    stored.unlocked.createdAt,
    stored.unlocked.data,
    session?.id ?? null,
    session?.auth_method ?? null,
    session?.auth_time ?? null,
    session?.device_id ?? null,
    session?.passkey_id ?? null,
    session?.created_at ?? null,
    session?.expires_at ?? null,
    refresh?.id ?? null,
    refresh?.secret_hash ?? null,
    session?.ip_network ?? null,
  ] as const;
}

/** A challenge as `insertChallenge`'s arguments. */
const challengeColumns = (c: Omit<OtpChallengeTable, 'attempts'>) =>
  [
    c.id,
    c.project_id,
    c.identifier,
    c.channel,
    c.code_hash,
    c.max_attempts,
    c.created_at,
    c.expires_at,
    c.consumed_at,
  ] as const;

export class OtpRepository {
  constructor(private readonly db: Db) {}

  /**
   * The challenge's insert, to be made only when its start is admitted
   * (`RateLimiter.hitSteps`): on PostgreSQL in the same statement as the start's rate limits, with
   * `event` (the start's `otp.sent`, stamped by `AuditLog.inline`) when given.
   */
  insertWhenAllowed(
    challenge: Omit<OtpChallengeTable, 'attempts'>,
    event?: RecordedEvent,
  ): InsertWhenAllowed {
    const columns = challengeColumns(challenge);
    const eventValues = event ? auditRepository.eventColumns(event) : [];
    return {
      id: event ? 'otp_challenges+event' : 'otp_challenges',
      values: [...columns, ...eventValues],
      from: (source, ...values) => {
        const [id, projectId, identifier, channel, codeHash, maxAttempts, createdAt, expiresAt, consumedAt] =
          values;
        const rows = [
          sql`insert into otp_challenges
      (id, project_id, identifier, channel, code_hash, max_attempts, created_at, expires_at, consumed_at)
    select ${id}::text, ${projectId}::text, ${identifier}::text, ${channel}::text, ${codeHash}::text,
      ${maxAttempts}::integer, ${createdAt}::bigint, ${expiresAt}::bigint, ${consumedAt}::bigint
    from ${sql.raw(source)} where ok`,
        ];
        if (event) {
          const allowed = sql`(select from ${sql.raw(source)} where ok) as allowed`;
          rows.push(
            auditRepository.insertFrom(
              allowed,
              ...(values.slice(columns.length) as auditRepository.EventColumns),
            ),
          );
        }
        return rows;
      },
      writes: [insertChallenge.write(...columns), ...(event ? [auditRepository.insertWrite(event)] : [])],
    };
  }

  /**
   * A start whose code could not be delivered: its challenge can no longer be used, and the
   * `otp.sent` event its statement stored (`eventId`) goes, in one statement.
   */
  async undeliverable(id: string, now: number, eventId: string | undefined): Promise<void> {
    const consumed = consumeChallenge.write(id, now);
    await together(this.db.kysely, eventId ? [consumed, auditRepository.deleteWrite(eventId)] : [consumed]);
  }

  async insert(challenge: Omit<OtpChallengeTable, 'attempts'>): Promise<void> {
    await insertChallenge(this.db.kysely, ...challengeColumns(challenge));
  }

  async find(projectId: string, id: string) {
    return (await findChallenge(this.db.kysely, projectId, id)).rows[0];
  }

  /**
   * Takes one guess from the challenge's budget in a single statement: of twenty parallel
   * guesses exactly `max_attempts` get a row back. Undefined when the challenge is unknown,
   * used up, expired or out of guesses.
   */
  async reserveAttempt(projectId: string, id: string, now: number): Promise<ReservedAttempt | undefined> {
    return (await reserve(this.db.kysely, projectId, id, now)).rows[0];
  }

  /** Whether `guess` is available: PostgreSQL, where it saves six round trips per sign-in. */
  get guessesAtOnce(): boolean {
    return this.db.dialect === 'postgres';
  }

  /**
   * PostgreSQL only: counts a guess in both budgets, takes an attempt, consumes the challenge when
   * `codeHash` is its code's, and signs the user in, in one statement (see `guessStatement`), which
   * also stores the sign-in `stored` describes when the code is right. A right code within the
   * budgets is counted in none (`free`); the refunds of another right guess are the caller's (they
   * touch the rows this statement counted on).
   */
  async guess(
    projectId: string,
    id: string,
    codeHash: string,
    now: number,
    budgets: { network: GuessBudget; day: GuessBudget; everywhere: GuessBudget },
    newUserId: string,
    stored?: StoredSignIn,
  ): Promise<Guess> {
    const { network, day, everywhere } = budgets;
    const networkKey = keyParts(network.scope, network.head, network.tail);
    const dayKey = keyParts(day.scope, day.head, day.tail);
    const everywhereKey = keyParts(everywhere.scope, everywhere.head, everywhere.tail);
    const args: GuessArgs = [
      id,
      projectId,
      now,
      codeHash,
      networkKey.head,
      networkKey.tail,
      network.limit,
      network.resetAt,
      dayKey.head,
      dayKey.tail,
      day.limit,
      day.resetAt,
      everywhereKey.head,
      everywhereKey.tail,
      everywhere.limit,
      everywhere.resetAt,
      newUserId,
    ];
    const { rows } = stored
      ? await guessAndSignIn(this.db.kysely, ...args, ...signInColumns(stored))
      : await guessAlone(this.db.kysely, ...args);
    const [row] = rows;
    if (!row) throw new Error('the OTP guess statement returned no row');
    const guess: Guess = {};
    if (row.challenge_identifier !== null) guess.identifier = row.challenge_identifier;
    if (row.free) guess.free = true;
    const networkWindow = windowOf(row.network_count, row.network_reset_at);
    const everywhereWindow = windowOf(row.everywhere_count, row.everywhere_reset_at);
    const dayWindow = windowOf(row.day_count, row.day_reset_at);
    if (networkWindow) guess.network = networkWindow;
    if (dayWindow) guess.day = dayWindow;
    if (everywhereWindow) guess.everywhere = everywhereWindow;
    if (row.attempts !== null && row.max_attempts !== null) {
      guess.attempt = {
        attempts: row.attempts,
        maxAttempts: row.max_attempts,
        matched: row.matched === true,
      };
    }
    if (row.user_id !== null) {
      guess.signedIn = {
        user: {
          id: row.user_id,
          project_id: projectId,
          identifier: row.identifier!,
          identifier_type: row.identifier_type!,
          client_user_id: row.client_user_id,
          created_at: Number(row.user_created_at),
          last_sign_in_at: row.last_sign_in_at === null ? null : Number(row.last_sign_in_at),
        },
        pin: row.has_pin
          ? { failedAttempts: Number(row.pin_failed_attempts), locked: row.pin_locked_at !== null }
          : null,
        claims: parseClaims(row.claims),
        ...(row.pin_unlocked === true ? { pinUnlocked: true as const } : {}),
      };
    }
    return guess;
  }

  /** `closeChallenge` as a write of the sign-in's own statement (`together`). */
  closeWrite(id: string): Write {
    return closeChallenge.write(id);
  }

  /** Marks the challenge used; true for exactly one caller. */
  async consume(id: string, now: number): Promise<boolean> {
    const result = await consumeChallenge(this.db.kysely, id, now);
    return (result.numAffectedRows ?? 0n) > 0n;
  }

  async prune(before: number): Promise<void> {
    await this.db.kysely.deleteFrom('otp_challenges').where('expires_at', '<', before).execute();
  }
}

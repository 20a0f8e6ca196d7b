import { ErrorCodes, type OtpStarted, type SignInResult } from '@tessera/core';
import type { Config, RateLimit } from '../../config/index.js';
import { hmac, safeEqual } from '../../crypto/hash.js';
import { randomDigits, randomId, randomUUID } from '../../crypto/random.js';
import type { User } from '../../db/schema.js';
import { badRequest, TesseraError, tooManyRequests } from '../../errors.js';
import type { ClientNetwork } from '../../net/client-network.js';
import { Pending } from '../../pending.js';
import { type Hit, RateLimiter } from '../../plugins/rate-limiter.js';
import type { AuditLog } from '../audit/audit.service.js';
import type { RecordedEvent } from '../audit/events.js';
import type { Project } from '../projects/project.js';
import { webOtpDomain } from '../projects/project-settings.js';
import { type InsertWhenAllowed, secondsLeft } from '../rate-limits/rate-limits.repository.js';
import type { SignInExtras, SignInService } from '../sign-in/sign-in.service.js';
import type { UsersRepository } from '../users/users.repository.js';
import { type Channel, type Delivery, DeliveryError } from './delivery/delivery.js';
import { chooseLocale } from './delivery/templates/locale.js';
import { type Identifier, normaliseIdentifier } from './identifier.js';
import type { OtpRepository } from './otp.repository.js';
import { type Counter, SendBudget, type SendOutcome, SendRefused } from './send-budget.js';
import { type StartEvidence, StartVerifier } from './start-verifier.js';

export type { OtpStarted, SendOutcome, SignInResult, StartEvidence };

/** Told the channel and outcome of every OTP start. */
export type SendListener = (channel: Channel, outcome: SendOutcome) => void;

/** The metric outcome of a start that threw. */
function sendOutcome(error: unknown): SendOutcome {
  if (error instanceof SendRefused) return error.outcome;
  if (error instanceof TesseraError && error.code === ErrorCodes.deliveryFailed) return 'delivery_failed';
  if (error instanceof TesseraError && error.statusCode === 429) return 'throttled';
  return 'error';
}

const CODE = /^\d{6}$/;

/** The guess budgets' scopes: per identifier and client network, and per identifier over all networks. */
const GUESS = 'otp-guess';
const GUESS_DAY = 'otp-guess-day';
const GUESS_ALL = 'otp-guess-all';

/** OTP sign-in: start sends a code, complete checks it and signs the user in. */
export class OtpService {
  private readonly budget: SendBudget;
  private readonly verifier: StartVerifier | undefined;
  readonly #sendListeners: SendListener[] = [];

  constructor(
    private readonly config: Readonly<Config>,
    private readonly repository: OtpRepository,
    private readonly users: UsersRepository,
    private readonly signIn: SignInService,
    private readonly limiter: RateLimiter,
    private readonly delivery: Delivery,
    private readonly codeKey: Buffer,
    private readonly audit: AuditLog,
    private readonly now: () => number = Date.now,
    /** A write made after the sign-in was stored failed (logged; the answer still goes out). */
    private readonly onAfterwardsFailed: (error: unknown) => void = () => {},
  ) {
    this.budget = new SendBudget(config.otpSending);
    this.verifier = config.otpSending.startVerifier && new StartVerifier(config.otpSending.startVerifier);
  }

  /** Writes running beside answers already given (see {@link OtpService.#afterwards}). */
  readonly #afterwardsRunning = new Pending();

  /** Waits for the writes still running beside answers already given (shutdown, before storage closes). */
  drain(): Promise<void> {
    return this.#afterwardsRunning.drain();
  }

  /** Runs `write` beside the answer: a failure is reported, never thrown; `drain` waits for it. */
  #afterwards(write: () => Promise<void>): void {
    void this.#afterwardsRunning.track(write().catch(this.onAfterwardsFailed));
  }

  /**
   * Sends a code, after the checks in {@link OtpService.#admit}. Every outcome, sent or refused,
   * is reported to the send listeners (metrics); invalid identifiers are not. `languages`: the
   * user's, best first (the request's `locale`, then Accept-Language), for the message's locale.
   */
  async start(
    project: Project,
    rawIdentifier: string,
    client: ClientNetwork,
    evidence: StartEvidence = {},
    languages: readonly string[] = [],
  ): Promise<OtpStarted> {
    const identifier = normaliseIdentifier(rawIdentifier);
    try {
      const started = await this.#send(project, identifier, client, evidence, languages);
      this.#report(identifier.channel, 'sent');
      return started;
    } catch (error) {
      this.#report(identifier.channel, sendOutcome(error));
      throw error;
    }
  }

  /** Calls `listener` with the channel and outcome of every `start` (see {@link SendOutcome}). */
  onSend(listener: SendListener): void {
    this.#sendListeners.push(listener);
  }

  #report(channel: Channel, outcome: SendOutcome): void {
    for (const listener of this.#sendListeners) listener(channel, outcome);
  }

  async #send(
    project: Project,
    identifier: Identifier,
    client: ClientNetwork,
    evidence: StartEvidence,
    languages: readonly string[],
  ): Promise<OtpStarted> {
    // Counted by mailbox: sub-addresses of one inbox (`ada+1@`, `ada+2@`, …) share its limits.
    const everywhere = `${project.id}\0${identifier.mailbox}`;
    const subject = `${everywhere}\0${client}`;
    const { ttl, maxAttempts, resendInterval } = this.config.otp;
    const id = randomId('otp');
    const code = randomDigits(6);
    let now = this.now();
    const sent = { projectId: project.id, type: 'otp.sent', data: { channel: identifier.channel } } as const;
    // Where it may (PostgreSQL, no webhook takes it), the event is stored with the challenge and
    // goes again if the code cannot be delivered; otherwise it is recorded once delivered.
    let inline: RecordedEvent | undefined;
    // Stored with the start's rate limits, only if they admit it (one statement on PostgreSQL);
    // timed after the start verifier has answered.
    await this.#admit(project, identifier, evidence, everywhere, subject, async () => {
      now = this.now();
      inline = await this.audit.inline(sent);
      return this.repository.insertWhenAllowed(
        {
          id,
          project_id: project.id,
          identifier: identifier.value,
          channel: identifier.channel,
          code_hash: hmac(this.codeKey, id, code),
          max_attempts: maxAttempts,
          created_at: now,
          expires_at: now + ttl * 1000,
          consumed_at: null,
        },
        inline,
      );
    });
    try {
      await this.delivery.send({
        to: identifier.value,
        channel: identifier.channel,
        code,
        projectName: project.name,
        expiresInSeconds: ttl,
        locale: chooseLocale(languages, project.message_templates),
        templates: project.message_templates,
        ...(identifier.channel === 'sms' ? { webOtpDomain: webOtpDomain(project) } : {}),
      });
    } catch (error) {
      await this.repository.undeliverable(id, now, inline?.id);
      // The real user may ask again at once; every other count keeps the attempt, which the
      // provider may bill all the same (failures given back let pumping run unmetered).
      await this.limiter.refund('otp-resend', subject);
      const detail = `the ${identifier.channel === 'sms' ? 'SMS' : 'e-mail'} could not be sent; try again later`;
      throw new TesseraError(503, ErrorCodes.deliveryFailed, detail, {
        cause: error instanceof DeliveryError ? error.message : 'delivery failed',
      });
    }
    if (inline) this.audit.stored(inline);
    else await this.audit.record(sent);
    return { challenge_id: id, channel: identifier.channel, expires_in: ttl, resend_after: resendInterval };
  }

  /**
   * Whether a code may go out, cheapest check first: the destination country (SMS), the
   * integrator's CAPTCHA or attestation verifier, then the counters. The resend interval and the
   * start limit count per identifier and client network, so a stranger asking for codes does not
   * stop the real user from getting one; a larger ceiling per identifier bounds what all networks
   * together can send to one person; the project's budgets (per channel, and per number range for
   * SMS) bound what everyone together can send. A refusal gives back what it had counted.
   * `challenge` (called once the verifier has answered) is stored only when the start is admitted.
   */
  async #admit(
    project: Project,
    identifier: Identifier,
    evidence: StartEvidence,
    everywhere: string,
    subject: string,
    challenge: () => Promise<InsertWhenAllowed>,
  ): Promise<void> {
    this.budget.checkDestination(project, identifier);
    await this.verifier?.verify(project.id, identifier.channel, evidence);
    const { resendInterval } = this.config.otp;
    // Every window a start counts against, in the order they are judged, in three steps (one
    // statement for all three and the challenge on PostgreSQL, one each on SQLite): the caller's own windows (this identifier from this network), then the
    // identifier-wide ceiling, then the project's sending budgets. A step runs only when the ones
    // before it allowed, so a refused stranger never touches a window shared with others, not even
    // for a moment (the per-network design: a stranger cannot spend the real user's ceiling or the
    // project's budgets). The first window over its limit refuses the start; which counts are then
    // given back is as if they had been counted one by one up to it (`giveBack`).
    const own: Window[] = [
      { kind: 'start', scope: 'otp-start', subject, rule: this.config.rateLimits.otpStartPerIdentifier },
    ];
    if (resendInterval > 0)
      own.unshift({
        kind: 'resend',
        scope: 'otp-resend',
        subject,
        rule: { limit: 1, window: resendInterval },
      });
    const steps: Window[][] = [
      own,
      [
        {
          kind: 'ceiling',
          scope: 'otp-start-all',
          subject: everywhere,
          rule: this.config.rateLimits.otpStartCeiling,
        },
      ],
      this.budget.counters(project, identifier).map((counter) => ({
        kind: 'budget',
        scope: counter.scope,
        subject: counter.subject,
        rule: counter,
        counter,
      })),
    ];
    const { counted, results } = await this.limiter.hitSteps(steps, await challenge());
    const refused = results.findIndex((r) => !r.allowed);
    if (refused < 0) return;
    const window = counted[refused]!;
    const { retryAfter } = results[refused]!;
    await this.limiter.refundAll(counted.filter((w, i) => giveBack(window.kind, w.kind, i, refused)));
    if (window.kind === 'resend')
      throw tooManyRequests(
        'a code was sent moments ago; wait before asking again',
        retryAfter,
        ErrorCodes.resendTooSoon,
      );
    if (window.counter) throw this.budget.refusal(window.counter, retryAfter);
    throw tooManyRequests('too many codes were requested for this identifier', retryAfter);
  }

  /**
   * Checks a code. Three budgets stop guessing: the challenge's own tries, wrong codes per
   * identifier from this client network (a stranger exhausts only their own network's budget, so
   * the real user elsewhere still gets in), and a long-term ceiling per identifier over all
   * networks. Each wrong code spends a unit of both; a right one gives them back.
   */
  async complete(
    project: Project,
    challengeId: string,
    code: string,
    getOAuthToken: boolean,
    client: ClientNetwork,
  ): Promise<SignInResult> {
    if (!CODE.test(code))
      throw badRequest('code must be the 6 digits that were sent', ErrorCodes.invalidCode);
    const now = this.now();
    if (this.repository.guessesAtOnce) {
      return this.#completeAtOnce(project, challengeId, code, getOAuthToken, client, now);
    }
    const challenge = await this.repository.find(project.id, challengeId);
    if (!challenge) throw challengeNotFound();
    const parts = budgetParts(project, client);
    const subject = subjectOf(parts.network, challenge.identifier);
    const everywhere = subjectOf(parts.everywhere, challenge.identifier);
    // The guess budgets span all the identifier's challenges: a new code does not reset them.
    // This network's short and daily budgets, then the identifier-wide ceiling: one network alone
    // can spend at most its daily budget of the ceiling, so only many networks together reach it.
    const { otpGuessesPerIdentifier, otpGuessesPerNetworkDaily, otpGuessesCeiling } = this.config.rateLimits;
    const budgets = [
      { scope: GUESS, subject, rule: otpGuessesPerIdentifier, reason: 'network_throttled' },
      { scope: GUESS_DAY, subject, rule: otpGuessesPerNetworkDaily, reason: 'network_throttled' },
      { scope: GUESS_ALL, subject: everywhere, rule: otpGuessesCeiling, reason: 'identifier_locked' },
    ];
    const refundGuess = async (taken = budgets.length) => {
      for (const budget of budgets.slice(0, taken)) await this.limiter.refund(budget.scope, budget.subject);
    };
    for (const [taken, budget] of budgets.entries()) {
      const hit = await this.limiter.hit(budget.scope, budget.subject, budget.rule);
      if (hit.allowed) continue;
      await refundGuess(taken);
      await this.signIn.recordFailure(project, { method: 'OTP', reason: budget.reason });
      throw tooManyRequests(
        'too many wrong codes for this identifier; try again later',
        hit.retryAfter,
        ErrorCodes.tooManyAttempts,
      );
    }
    const attempt = await this.repository.reserveAttempt(project.id, challengeId, now);
    if (!attempt) {
      const refund = () => this.#refundGuess(subject, everywhere);
      return this.#resumeOrRefuse(project, challengeId, code, getOAuthToken, client, challenge, now, refund);
    }
    if (!safeEqual(hmac(this.codeKey, challengeId, code), attempt.code_hash)) {
      return this.#wrongCode(project, attempt.max_attempts - attempt.attempts);
    }
    if (!(await this.repository.consume(challengeId, now))) throw challengeUsed();
    await this.#refundGuess(subject, everywhere);
    return this.#signInTo(project, challengeId, attempt, getOAuthToken, client, now);
  }

  /**
   * Creates or touches the user a consumed challenge names, then `#finish`es its sign-in (SQLite's
   * steps, and a resumed sign-in on either database). `resumedFrom`: when the challenge was
   * consumed, for a resumed sign-in. Its user was then created by the statement that consumed it
   * (same clock reading) whose sign-in, and with it the `user.created` event, was never stored:
   * the event is written now, with the session, whose key (the challenge's) lets only one of them
   * be stored.
   */
  async #signInTo(
    project: Project,
    challengeId: string,
    challenge: { identifier: string; channel: string },
    getOAuthToken: boolean,
    client: ClientNetwork,
    now: number,
    resumedFrom?: number,
  ): Promise<SignInResult> {
    const newUserId = randomUUID();
    const user = await this.users.signIn({
      id: newUserId,
      project_id: project.id,
      identifier: challenge.identifier,
      identifier_type: challenge.channel === 'sms' ? 'phone' : 'email',
      client_user_id: null,
      created_at: now,
      last_sign_in_at: now,
    });
    // The upsert returns the id it was given only to the one sign-in that created the row. A
    // resumed one created it when its challenge was consumed; its event may have been stored on its
    // own then (SQLite, or webhooks taking it), before the session failed: not twice.
    const created =
      user.id === newUserId ||
      (resumedFrom !== undefined &&
        user.created_at === resumedFrom &&
        !(await this.audit.has(project.id, user.id, 'user.created')));
    return this.#finish(project, challengeId, user, {
      getOAuthToken,
      userTouched: true,
      userCreated: created,
      extras: { network: client },
    });
  }

  /**
   * The sign-in of a right code: its session's id is the challenge's own (`sessionIdOf`), so a
   * challenge starts at most one session however many requests finish it (a retry of a sign-in
   * whose answer was lost, see `#resumeOrRefuse`); the second start fails on the primary key and
   * is answered as a used code. The challenge is closed with the sign-in's own writes, whether it
   * asked for tokens or not: a finished challenge cannot be finished again.
   */
  async #finish(
    project: Project,
    challengeId: string,
    user: User,
    options: { getOAuthToken: boolean; userTouched: boolean; userCreated: boolean; extras?: SignInExtras },
  ): Promise<SignInResult> {
    try {
      return await this.signIn.complete(
        project,
        user,
        { method: 'OTP' },
        {
          ...options,
          extras: {
            ...options.extras,
            writes: [...(options.extras?.writes ?? []), this.repository.closeWrite(challengeId)],
            sessionId: sessionIdOf(this.codeKey, challengeId),
          },
        },
      );
    } catch (error) {
      if (isSessionConflict(error)) throw challengeUsed();
      throw error;
    }
  }

  /**
   * No attempt could be taken. A challenge consumed but not closed (`#finish` closes it with its
   * sign-in) is one whose sign-in was never stored: the code's statement committed, then the
   * database went away, and the client, told 503, retries as told (on PostgreSQL when a webhook
   * takes the sign-in's events, which then takes a statement of its own; on SQLite two steps). Asked for tokens with the right code, it is finished now, once
   * (`#finish`). A wrong code against it is a guess and keeps its budget units (`refund` is not
   * called): the challenge has no attempts left to count it. Otherwise the guess was none, its
   * units go back, and the challenge (read again: a parallel request may have used it) says why.
   */
  async #resumeOrRefuse(
    project: Project,
    challengeId: string,
    code: string,
    getOAuthToken: boolean,
    client: ClientNetwork,
    before: { consumed_at: number | null; expires_at: number } | undefined,
    now: number,
    refund: () => Promise<void>,
  ): Promise<SignInResult> {
    const current = await this.repository.find(project.id, challengeId);
    if (getOAuthToken && current && resumable(current, now)) {
      if (!safeEqual(hmac(this.codeKey, challengeId, code), current.code_hash)) throw challengeUsed();
      await refund();
      return this.#signInTo(project, challengeId, current, getOAuthToken, client, now, current.consumed_at);
    }
    await refund();
    return this.#unavailable(current ?? before, now);
  }

  /**
   * `complete` on PostgreSQL, in one statement: the guess (budgets, attempt, consumption and the
   * user, see OtpRepository.guess) and, for a right code, the sign-in's events, session and the
   * challenge's closing (`SignInService.prepareStored`). Where a webhook takes one of those events
   * the sign-in is a second statement (`#finish`), as on SQLite. A right code counted in the
   * budgets (a right code within them is `free`) gives its units back after. Same rules and
   * answers as the steps above, which SQLite runs.
   */
  async #completeAtOnce(
    project: Project,
    challengeId: string,
    code: string,
    getOAuthToken: boolean,
    client: ClientNetwork,
    now: number,
  ): Promise<SignInResult> {
    const limits = this.config.rateLimits;
    const parts = budgetParts(project, client);
    const newUserId = randomUUID();
    // The sign-in's rows, stored by the guess statement itself when its code is right.
    const stored = await this.signIn.prepareStored(
      project,
      { method: 'OTP' },
      { getOAuthToken, sessionId: sessionIdOf(this.codeKey, challengeId), network: client },
    );
    const guess = await this.repository.guess(
      project.id,
      challengeId,
      hmac(this.codeKey, challengeId, code),
      now,
      {
        network: { scope: GUESS, ...parts.network, ...windowOf(limits.otpGuessesPerIdentifier, now) },
        day: { scope: GUESS_DAY, ...parts.network, ...windowOf(limits.otpGuessesPerNetworkDaily, now) },
        everywhere: { scope: GUESS_ALL, ...parts.everywhere, ...windowOf(limits.otpGuessesCeiling, now) },
      },
      newUserId,
      stored,
    );
    const { identifier, free, network, day, everywhere: ceiling, attempt, signedIn } = guess;
    if (identifier === undefined) throw challengeNotFound();
    const subject = subjectOf(parts.network, identifier);
    const everywhere = subjectOf(parts.everywhere, identifier);
    // A right code within the budgets was counted in none of them: nothing to give back.
    const refundGuess = free ? async () => {} : () => this.#refundGuess(subject, everywhere);
    if (!free) {
      if (!network) throw challengeNotFound();
      if (network.count > limits.otpGuessesPerIdentifier.limit) {
        return this.#throttled(project, false, secondsLeft(network, now));
      }
      if (!day) throw new Error("the OTP guess statement skipped the network's daily budget");
      // A refusing budget keeps its unit; those before it, which the guess passed, give theirs back.
      if (day.count > limits.otpGuessesPerNetworkDaily.limit) {
        await this.limiter.refundAll(guessWindows(subject, everywhere).slice(0, 1));
        return this.#throttled(project, false, secondsLeft(day, now));
      }
      if (!ceiling) throw new Error('the OTP guess statement skipped the identifier-wide budget');
      if (ceiling.count > limits.otpGuessesCeiling.limit) {
        await this.limiter.refundAll(guessWindows(subject, everywhere).slice(0, 2));
        return this.#throttled(project, true, secondsLeft(ceiling, now));
      }
    }
    if (!attempt) {
      return this.#resumeOrRefuse(
        project,
        challengeId,
        code,
        getOAuthToken,
        client,
        undefined,
        now,
        refundGuess,
      );
    }
    if (!attempt.matched) return this.#wrongCode(project, attempt.maxAttempts - attempt.attempts);
    if (!signedIn) throw new Error('the OTP guess statement consumed a challenge without a user');
    const userCreated = signedIn.user.id === newUserId;
    if (stored) {
      // Stored, and the challenge closed, by the guess statement: from here the answer must go
      // out (a retry would find the code used), without waiting for the database again. A right
      // code counted in the budgets (not `free`) gives its units back beside the answer, in one
      // statement; if it fails, the budgets keep them until their windows end.
      if (!free) this.#afterwards(refundGuess);
      return this.signIn.completeStored(project, signedIn.user, stored, {
        userCreated,
        pinUnlocked: signedIn.pinUnlocked === true,
        claims: signedIn.claims,
      });
    }
    return this.#finish(project, challengeId, signedIn.user, {
      getOAuthToken,
      userTouched: true,
      userCreated,
      extras: {
        pin: signedIn.pin,
        claims: signedIn.claims,
        // A right code counted in the budgets gives its units back, with the sign-in's own
        // writes. First, and in this order: the guess statement locks the same rows in the same order.
        writes: free ? [] : RateLimiter.refundWrites(guessWindows(subject, everywhere)),
        network: client,
      },
    });
  }

  /** A budget refused the guess: recorded, and a 429 with the time its window ends. */
  async #throttled(project: Project, identifierLocked: boolean, retryAfter: number): Promise<never> {
    await this.signIn.recordFailure(project, {
      method: 'OTP',
      reason: identifierLocked ? 'identifier_locked' : 'network_throttled',
    });
    throw tooManyRequests(
      'too many wrong codes for this identifier; try again later',
      retryAfter,
      ErrorCodes.tooManyAttempts,
    );
  }

  /** Why no attempt could be taken, from the challenge as read again (`#resumeOrRefuse`). */
  #unavailable(current: { consumed_at: number | null; expires_at: number } | undefined, now: number): never {
    if (current && current.consumed_at !== null) throw challengeUsed();
    if (current && current.expires_at <= now)
      throw badRequest('this code has expired; ask for a new one', ErrorCodes.challengeExpired);
    throw new TesseraError(429, ErrorCodes.tooManyAttempts, 'too many wrong codes; ask for a new one');
  }

  async #wrongCode(project: Project, left: number): Promise<never> {
    await this.signIn.recordFailure(project, { method: 'OTP', reason: 'invalid_code' });
    throw new TesseraError(
      400,
      ErrorCodes.invalidCode,
      left > 0
        ? `the code is not correct; ${left} attempt${left === 1 ? '' : 's'} left`
        : 'the code is not correct; ask for a new one',
      { extensions: { attempts_left: left } },
    );
  }

  /** Gives back a guess's unit of each of its three budgets, together (one statement on PostgreSQL). */
  #refundGuess(subject: string, everywhere: string): Promise<void> {
    return this.limiter.refundAll(guessWindows(subject, everywhere));
  }
}

/** A window an OTP start counts against; a sending budget's carries its counter (for the 429). */
type Window = Hit & { kind: 'resend' | 'start' | 'ceiling' | 'budget'; counter?: Counter };

/**
 * Which of the windows counted a refused start gives back, `refused` being the index of the first
 * window over its limit: those after it in its step would not have been reached one by one; a
 * refusal by the identifier-wide ceiling
 * also gives back the per-network start count; a refusal by a sending budget gives back every
 * count, its own too (nothing was sent).
 */
function giveBack(refusedKind: string, kind: string, index: number, refused: number): boolean {
  if (refusedKind === 'budget') return true;
  if (index > refused) return true;
  return refusedKind === 'ceiling' && kind === 'start';
}

/**
 * The guess budgets' subjects around the identifier: the identifier in the project from this
 * client network, and from anywhere. The limiter's key is a hash of scope and subject.
 */
function budgetParts(project: Project, client: ClientNetwork) {
  return {
    network: { head: `${project.id}\0`, tail: `\0${client}` },
    everywhere: { head: `${project.id}\0`, tail: '' },
  };
}

/** A budget's rule as the guess statement takes it: the limit, and the end of a window starting now. */
const windowOf = (rule: RateLimit, now: number) => ({ limit: rule.limit, resetAt: now + rule.window * 1000 });

/** A guess's three budgets, in the order they count it (and in which their rows are locked). */
const guessWindows = (subject: string, everywhere: string) => [
  { scope: GUESS, subject },
  { scope: GUESS_DAY, subject },
  { scope: GUESS_ALL, subject: everywhere },
];

const subjectOf = (part: { head: string; tail: string }, identifier: string) =>
  `${part.head}${identifier}${part.tail}`;

/**
 * A challenge consumed whose sign-in was never stored: not closed (a finished sign-in sets its
 * expiry to its consumption, `#finish`; a consumption always precedes the expiry), and not
 * expired. Judged by the closing, not by the clock alone: a request whose clock reading came
 * before the winner's consumption would otherwise take a closed challenge for an open one.
 */
function resumable<C extends { consumed_at: number | null; expires_at: number }>(
  challenge: C,
  now: number,
): challenge is C & { consumed_at: number } {
  const { consumed_at: consumedAt, expires_at: expiresAt } = challenge;
  return consumedAt !== null && expiresAt !== consumedAt && expiresAt > now;
}

const challengeNotFound = () =>
  badRequest('no such sign-in challenge for this project', ErrorCodes.challengeNotFound);
const challengeUsed = () => badRequest('this code has already been used', ErrorCodes.challengeUsed);

/**
 * The id of the session an OTP challenge signs in to: a UUID (version 4 layout) from an HMAC of
 * the challenge id under the code key. Unguessable without the key, and the same for every
 * request that finishes the challenge, so that only one of them can store it.
 */
export function sessionIdOf(key: Buffer, challengeId: string): string {
  const bytes = Buffer.from(hmac(key, 'otp-session', challengeId), 'base64url');
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The session's primary key refused a second session of one challenge (either database). */
function isSessionConflict(error: unknown): boolean {
  const { code, constraint, message } = (error ?? {}) as {
    code?: unknown;
    constraint?: unknown;
    message?: unknown;
  };
  if (code === '23505') return constraint === 'sessions_pkey';
  return (
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY' && typeof message === 'string' && message.includes('sessions.id')
  );
}

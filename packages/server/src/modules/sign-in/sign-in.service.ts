import { type AuthMethod, ErrorCodes, type SignInResult } from '@tessera/core';
import type { Write } from '../../db/prepared.js';
import type { User } from '../../db/schema.js';
import { TesseraError } from '../../errors.js';
import type { ClientNetwork } from '../../net/client-network.js';
import type { AuditLog } from '../audit/audit.service.js';
import type { AuditEvent } from '../audit/events.js';
import type { Project } from '../projects/project.js';
import type { PlannedSession, SessionService } from '../session/session.service.js';

/** How the user proved who they are, beside the method: the device or passkey used. */
export interface SignInProof {
  method: AuthMethod;
  deviceId?: string;
  passkeyId?: string;
}

/** A user's PIN as a sign-in method's own statement read it: its failed attempts and lock. */
export interface PinStatus {
  failedAttempts: number;
  locked: boolean;
}

/** The PIN lock, as sign-in rules see it (modules/pin). */
export interface PinLocks {
  /** Whether the user has a PIN, and whether it is locked after too many wrong PINs. */
  state(userId: string): Promise<'none' | 'set' | 'locked'>;
  /**
   * Lifts a PIN lock (a fresh OTP sign-in proves more than the PIN it replaces). `pin`: the PIN as
   * already read (null: none), so it is not read again.
   */
  unlock(projectId: string, userId: string, pin?: PinStatus | null): Promise<void>;
}

/**
 * What a sign-in method hands to the end of the sign-in besides the user: what its own statement
 * already read, and writes of its own to store with the sign-in's (one statement on PostgreSQL).
 */
export interface SignInExtras {
  /** The user's PIN (null: none), when read already. */
  pin?: PinStatus | null;
  /** The user's custom claims, when read already. */
  claims?: Record<string, unknown>;
  /** Stored with the sign-in's event and session, e.g. the refunds of the guess budgets. */
  writes?: readonly Write[];
  /** The session's id, when at most one may start from this sign-in (see StartOptions). */
  sessionId?: string;
  /** The client's network, which the session is shown with (see StartOptions). */
  network?: ClientNetwork;
}

export interface SignInDeps {
  users: { touchSignIn(userId: string, at: number): Promise<void> };
  sessions: SessionService;
  audit: AuditLog;
  pinLocks: PinLocks;
  now: () => number;
}

/** An event's id and time, and its data as stored (JSON). */
export interface StoredEventRow {
  id: string;
  createdAt: number;
  data: string;
}

/**
 * A sign-in stored by the method's own statement (`SignInService.prepareStored`): the rows that
 * statement writes once the proof holds, besides the user it creates or touches.
 */
export interface StoredSignIn {
  proof: SignInProof;
  /** `signin.succeeded`, naming the user the statement signed in. */
  succeeded: StoredEventRow;
  /** `user.created`, written only when the statement created the user: its data by identifier type. */
  created: Omit<StoredEventRow, 'data'> & { data: Record<User['identifier_type'], string> };
  /**
   * `pin.unlocked`, written only when the statement lifted a PIN lock (an OTP sign-in clears the
   * PIN's failures, `#afterSignIn`'s rule, in the same statement).
   */
  unlocked: StoredEventRow;
  /** The session and its first refresh token, when tokens were asked for. */
  session?: PlannedSession;
}

const stamp = (row: { id: string; createdAt: number }) => ({ id: row.id, createdAt: row.createdAt });

/** The event of every successful sign-in. */
function signedInEvent(projectId: string, userId: string | null, proof: SignInProof): AuditEvent {
  return {
    projectId,
    userId,
    type: 'signin.succeeded',
    data: {
      method: proof.method,
      ...(proof.deviceId ? { device_id: proof.deviceId } : {}),
      ...(proof.passkeyId ? { passkey_id: proof.passkeyId } : {}),
    },
  };
}

/** The event of an OTP sign-in that lifted the user's PIN lock (PinLocks, or the sign-in's statement). */
export function pinUnlockedEvent(projectId: string, userId: string): AuditEvent {
  return { projectId, userId, type: 'pin.unlocked', data: { by: 'OTP' } };
}

/** The event of a sign-in that created its user. */
function userCreatedEvent(
  projectId: string,
  user: Pick<User, 'id' | 'identifier_type'>,
  proof: SignInProof,
): AuditEvent {
  return {
    projectId,
    userId: user.id,
    type: 'user.created',
    data: { method: proof.method, identifier_type: user.identifier_type },
  };
}

/**
 * Device, PIN and passkey failures naming no user and no device stored per project and minute, on
 * each instance; past it they are counted by the metrics only.
 */
export const ANONYMOUS_FAILURES_PER_MINUTE = 60;

/** Why a sign-in was refused, as the `signin.failed` event records it (no secrets, no identifier). */
export interface SignInFailure {
  method: AuthMethod;
  reason: string;
  userId?: string | null;
  deviceId?: string | null;
}

/**
 * The one way every sign-in method ends: whatever the method verified, the user's sign-in time is
 * recorded, the post-sign-in rules run, the event is audited, and a session starts when tokens
 * were asked for. Failures are recorded through the same place.
 */
export class SignInService {
  /** Anonymous failures stored per project in `#minute`, the current minute (`recordFailure`). */
  readonly #anonymous = new Map<string, number>();
  #minute = -1;

  constructor(private readonly deps: SignInDeps) {}

  async complete(
    project: Project,
    user: User,
    proof: SignInProof,
    options: { getOAuthToken: boolean; userTouched?: boolean; userCreated?: boolean; extras?: SignInExtras },
  ): Promise<SignInResult> {
    const extras = options.extras ?? {};
    await this.#admit(project, user, proof);
    // Stored in the same statement as the sign-in's own writes where it can be (PostgreSQL).
    const created = options.userCreated
      ? await this.deps.audit.asWrites(userCreatedEvent(project.id, user, proof))
      : undefined;
    if (!options.userTouched) await this.deps.users.touchSignIn(user.id, this.deps.now());
    await this.#afterSignIn(project, user, proof, extras.pin);
    const event = signedInEvent(project.id, user.id, proof);
    const writes = [...(created?.writes ?? []), ...(extras.writes ?? [])];
    if (!options.getOAuthToken) {
      await this.deps.audit.recordWith(event, writes);
      created?.done();
      return { user_id: user.id, auth_method: proof.method };
    }
    const binding = { deviceId: proof.deviceId, passkeyId: proof.passkeyId };
    const oauthToken = await this.deps.sessions.start(project, user, proof.method, binding, {
      event,
      writes,
      ...(extras.claims ? { claims: extras.claims } : {}),
      ...(extras.sessionId ? { sessionId: extras.sessionId } : {}),
      ...(extras.network !== undefined ? { network: extras.network } : {}),
    });
    created?.done();
    return { oauth_token: oauthToken };
  }

  /**
   * A sign-in whose rows the method's own statement stores with the one that proves it (OTP's guess
   * statement on PostgreSQL), prepared before that statement runs: the stamps and data of its
   * events and, when tokens were asked for, its session (`SessionService.plan`). The statement
   * also applies the rules after the sign-in (`#afterSignIn`: an OTP sign-in lifts a PIN lock).
   * Undefined where the sign-in cannot be stored that way; the method then calls `complete` as
   * usual: on SQLite, when webhook endpoints take any of its events (their deliveries are queued
   * with it), and for methods other than OTP (a trusted device's rules, `#admit`, need the user
   * before anything is stored).
   */
  async prepareStored(
    project: Project,
    proof: SignInProof,
    options: { getOAuthToken: boolean; sessionId?: string; network?: ClientNetwork },
  ): Promise<StoredSignIn | undefined> {
    // A trusted device's rules need the user first; only an OTP sign-in lifts a PIN lock, which
    // the statement storing it must then do too.
    if (proof.method !== 'OTP') return undefined;
    const { audit, sessions } = this.deps;
    // Stamped in the order the events are recorded by `complete` (each stamp is taken as its call
    // starts); the webhook subscriptions they read are cached and read once for the three.
    const [created, unlocked, succeeded] = await Promise.all([
      audit.inlineStamp(project.id, 'user.created'),
      audit.inlineStamp(project.id, 'pin.unlocked'),
      audit.inlineStamp(project.id, 'signin.succeeded'),
    ]);
    if (!created || !unlocked || !succeeded) return undefined;
    const data = (event: AuditEvent) => JSON.stringify(event.data ?? {});
    const createdData = (identifierType: User['identifier_type']) =>
      data(userCreatedEvent(project.id, { id: '', identifier_type: identifierType }, proof));
    const binding = { deviceId: proof.deviceId, passkeyId: proof.passkeyId };
    return {
      proof,
      succeeded: { ...succeeded, data: data(signedInEvent(project.id, null, proof)) },
      created: { ...created, data: { email: createdData('email'), phone: createdData('phone') } },
      unlocked: { ...unlocked, data: data(pinUnlockedEvent(project.id, '')) },
      ...(options.getOAuthToken
        ? { session: sessions.plan(project, proof.method, binding, options.sessionId, options.network) }
        : {}),
    };
  }

  /**
   * The end of a sign-in that the method's statement stored as `prepareStored` gave it: its events
   * told to the subscribers (`user.created` only when `userCreated`, `pin.unlocked` only when
   * `pinUnlocked`), and its bundle. Nothing here writes: the sign-in is stored, its answer must go out.
   */
  async completeStored(
    project: Project,
    user: User,
    stored: StoredSignIn,
    options: { userCreated: boolean; pinUnlocked: boolean; claims?: Record<string, unknown> },
  ): Promise<SignInResult> {
    const { audit, sessions } = this.deps;
    const { proof } = stored;
    if (options.userCreated)
      audit.stored({ ...userCreatedEvent(project.id, user, proof), ...stamp(stored.created) });
    if (options.pinUnlocked)
      audit.stored({ ...pinUnlockedEvent(project.id, user.id), ...stamp(stored.unlocked) });
    audit.stored({ ...signedInEvent(project.id, user.id, proof), ...stamp(stored.succeeded) });
    if (!stored.session) return { user_id: user.id, auth_method: proof.method };
    return { oauth_token: await sessions.bundleOf(project, user, stored.session, options.claims) };
  }

  /**
   * Rules before a session starts. A trusted device alone must not get around the PIN: while the
   * user's PIN is locked (five wrong PINs) device sign-in is locked too, until an OTP sign-in lifts
   * the lock; and a project may require the PIN on every device sign-in.
   */
  async #admit(project: Project, user: User, proof: SignInProof): Promise<void> {
    if (proof.method !== 'TRUSTED DEVICE') return;
    const refuse = async (reason: string, error: TesseraError) => {
      await this.recordFailure(project, {
        method: proof.method,
        reason,
        userId: user.id,
        deviceId: proof.deviceId,
      });
      throw error;
    };
    if (project.device_requires_pin) {
      await refuse(
        ErrorCodes.pinRequired,
        new TesseraError(
          403,
          ErrorCodes.pinRequired,
          'this app requires the PIN with the device: use PIN sign-in',
        ),
      );
    }
    if ((await this.deps.pinLocks.state(user.id)) === 'locked') {
      await refuse(
        ErrorCodes.pinLocked,
        new TesseraError(
          423,
          ErrorCodes.pinLocked,
          'device sign-in is locked while the PIN is locked; sign in with a one-time code to unlock it',
        ),
      );
    }
  }

  /** Post-sign-in rules: an OTP sign-in lifts a PIN lock (the recovery path docs/FLOWS.md gives). */
  async #afterSignIn(
    project: Project,
    user: User,
    proof: SignInProof,
    pin?: PinStatus | null,
  ): Promise<void> {
    if (proof.method === 'OTP') await this.deps.pinLocks.unlock(project.id, user.id, pin);
  }

  /** Records a refused sign-in (`signin.failed`). */
  recordFailure(project: Project, failure: SignInFailure): Promise<void> {
    const event: AuditEvent = {
      projectId: project.id,
      userId: failure.userId ?? null,
      type: 'signin.failed',
      data: {
        method: failure.method,
        reason: failure.reason,
        ...(failure.deviceId ? { device_id: failure.deviceId } : {}),
      },
    };
    // A device, PIN or passkey failure that names no user and no device (an unknown device,
    // challenge or credential) can be sent at will by anyone: each stored one is kept a year and
    // sent to every webhook, so one address wrote thousands of events an hour. Past
    // ANONYMOUS_FAILURES_PER_MINUTE of them in a project's minute, they are counted by the
    // metrics only. OTP failures name no user either, but each is a guess at a real challenge,
    // bounded by the guess budgets: always stored.
    if (failure.method !== 'OTP' && !failure.userId && !failure.deviceId && !this.#admitAnonymous(project)) {
      this.deps.audit.observe(event);
      return Promise.resolve();
    }
    return this.deps.audit.record(event);
  }

  /** Counts an anonymous failure in its project's current minute: whether it may be stored. */
  #admitAnonymous(project: Project): boolean {
    const minute = Math.floor(this.deps.now() / 60_000);
    // Only the current minute's counts are kept: at most one entry per project with junk in it.
    if (minute !== this.#minute) {
      this.#anonymous.clear();
      this.#minute = minute;
    }
    const stored = (this.#anonymous.get(project.id) ?? 0) + 1;
    this.#anonymous.set(project.id, stored);
    return stored <= ANONYMOUS_FAILURES_PER_MINUTE;
  }
}

import { ErrorCodes } from '@tessera/core';
import { isTesseraAdminError } from '../errors.js';
import type { QueryParams, RequestBody, Result, Schema } from '../operation-types.js';
import { onePage, type Paginated } from '../paginate.js';
import type { CallOptions, Transport } from '../transport.js';

/** A user of the project (`GET /v1/users/{user_id}`). */
export type User = Schema<'User'>;
/** A session of a user: how it signed in, from where, when it was last refreshed. */
export type Session = Schema<'Session'>;
/** A trusted device of a user. */
export type Device = Schema<'Device'>;
/** A passkey of a user. */
export type Passkey = Schema<'Passkey'>;
/** A user's consent to a third-party OAuth client. */
export type Grant = Result<'listUserGrants'>['grants'][number];
/** A user's custom claims, merged into the access tokens issued afterwards. */
export type Claims = Record<string, unknown>;

/**
 * Users of the project: find, read, update, delete, sign out everywhere.
 *
 * @example
 * ```ts
 * const user = await admin.users.find('ada@example.com');
 * if (user) await admin.users.revokeSessions(user.user_id);
 * ```
 */
export class Users {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** The user with this id; refuses with `user_not_found` when there is none. */
  get(userId: string, options?: CallOptions): Promise<User> {
    return this.#t.call('getUser', { path: { user_id: userId } }, options);
  }

  /**
   * Users whose identifier starts with `query`, or whose user id or `client_user_id` is `query`
   * (`limit` 1–100, 20 when absent).
   */
  list(query: QueryParams<'searchUsers'>, options?: CallOptions): Paginated<User, Result<'searchUsers'>> {
    return onePage(
      () => this.#t.call('searchUsers', { query }, options),
      (page) => page.users,
    );
  }

  /** The user with this e-mail address or phone number (E.164), or `undefined`. */
  async find(identifier: string, options?: CallOptions): Promise<User | undefined> {
    try {
      return await this.#t.call('findUser', { query: { identifier } }, options);
    } catch (error) {
      if (isTesseraAdminError(error, ErrorCodes.userNotFound)) return undefined;
      throw error;
    }
  }

  /** Sets (a string) or clears (`null`) the user's `client_user_id`. */
  update(userId: string, changes: RequestBody<'updateUser'>, options?: CallOptions): Promise<User> {
    return this.#t.call('updateUser', { path: { user_id: userId }, body: changes }, options);
  }

  /** Deletes the user and everything of theirs (sessions end at once). */
  async delete(userId: string, options?: CallOptions): Promise<void> {
    await this.#t.call('deleteUser', { path: { user_id: userId } }, options);
  }

  /**
   * Signs the user out everywhere: every session is revoked (their access tokens fail `/verify`
   * and introspection, their refresh tokens stop working). `forget_devices` also removes their
   * trusted devices; `session_id` revokes one session only.
   */
  revokeSessions(
    userId: string,
    what: RequestBody<'revokeSessions'> = {},
    options?: CallOptions,
  ): Promise<Result<'revokeSessions'>> {
    return this.#t.call('revokeSessions', { path: { user_id: userId }, body: what ?? {} }, options);
  }
}

/**
 * Custom claims of a user (reserved names refused, 1,000 bytes at most).
 *
 * @example
 * ```ts
 * await admin.claims.set(userId, { roles: ['editor'] });
 * ```
 */
export class ClaimsResource {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  async get(userId: string, options?: CallOptions): Promise<Claims> {
    return (await this.#t.call('getClaims', { path: { user_id: userId } }, options)).claims as Claims;
  }

  /** Replaces the user's claims; the next token issued (sign-in or refresh) carries them. */
  async set(userId: string, claims: Claims, options?: CallOptions): Promise<Claims> {
    const answer = await this.#t.call('putClaims', { path: { user_id: userId }, body: { claims } }, options);
    return answer.claims as Claims;
  }

  /** Removes every custom claim of the user. */
  async clear(userId: string, options?: CallOptions): Promise<void> {
    await this.#t.call('deleteClaims', { path: { user_id: userId } }, options);
  }
}

/**
 * A user's PIN: whether one is set and whether it is locked (five wrong PINs lock PIN sign-in).
 *
 * @example
 * ```ts
 * if ((await admin.pin.get(userId)).locked) await admin.pin.unlock(userId);
 * ```
 */
export class Pin {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  get(userId: string, options?: CallOptions): Promise<Result<'getUserPin'>> {
    return this.#t.call('getUserPin', { path: { user_id: userId } }, options);
  }

  /** Unlocks PIN sign-in (`unlocked: false` when it was not locked). */
  unlock(userId: string, options?: CallOptions): Promise<Result<'unlockUserPin'>> {
    return this.#t.call('unlockUserPin', { path: { user_id: userId } }, options);
  }
}

/** Sessions of a user. */
export class Sessions {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** The user's sessions (live ones; `include_revoked: 'true'` adds ended ones). */
  list(
    userId: string,
    query: QueryParams<'listSessions'> = {},
    options?: CallOptions,
  ): Paginated<Session, Result<'listSessions'>> {
    return onePage(
      () => this.#t.call('listSessions', { path: { user_id: userId }, query }, options),
      (page) => page.sessions,
    );
  }

  /** Revokes one session. */
  async revoke(userId: string, sessionId: string, options?: CallOptions): Promise<void> {
    await this.#t.call('deleteSession', { path: { user_id: userId, session_id: sessionId } }, options);
  }
}

/** Trusted devices of a user. */
export class Devices {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  list(userId: string, options?: CallOptions): Paginated<Device, Result<'listUserDevices'>> {
    return onePage(
      () => this.#t.call('listUserDevices', { path: { user_id: userId } }, options),
      (page) => page.devices,
    );
  }

  rename(userId: string, deviceId: string, name: string, options?: CallOptions): Promise<Device> {
    return this.#t.call(
      'renameUserDevice',
      { path: { user_id: userId, device_id: deviceId }, body: { name } },
      options,
    );
  }

  /** Removes the device: it can no longer sign in (device or PIN). */
  async remove(userId: string, deviceId: string, options?: CallOptions): Promise<void> {
    await this.#t.call('removeUserDevice', { path: { user_id: userId, device_id: deviceId } }, options);
  }
}

/** Passkeys of a user. */
export class Passkeys {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  list(userId: string, options?: CallOptions): Paginated<Passkey, Result<'listUserPasskeys'>> {
    return onePage(
      () => this.#t.call('listUserPasskeys', { path: { user_id: userId } }, options),
      (page) => page.passkeys,
    );
  }

  async remove(userId: string, passkeyId: string, options?: CallOptions): Promise<void> {
    await this.#t.call('removeUserPasskey', { path: { user_id: userId, passkey_id: passkeyId } }, options);
  }
}

/** A user's consents to third-party OAuth clients. */
export class Grants {
  readonly #t: Transport;
  constructor(transport: Transport) {
    this.#t = transport;
  }

  list(userId: string, options?: CallOptions): Paginated<Grant, Result<'listUserGrants'>> {
    return onePage(
      () => this.#t.call('listUserGrants', { path: { user_id: userId } }, options),
      (page) => page.grants,
    );
  }

  /** Withdraws the consent; that client's sessions of the user end. */
  async revoke(userId: string, clientId: string, options?: CallOptions): Promise<void> {
    await this.#t.call('revokeUserGrant', { path: { user_id: userId, client_id: clientId } }, options);
  }
}

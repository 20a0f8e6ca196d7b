import type { AccessTokenClaims, OAuthTokenBundle } from '@tessera/core';
import type { ServerClock } from '../clock.js';
import { readClaims, tokenTimes } from '../encoding/jwt.js';
import { ClientErrorCodes, isTesseraClientError } from '../errors.js';
import type { Transport } from '../http/transport.js';
import type { TokenLock } from '../lock/lock.js';
import type { TokenStorage } from '../storage/token-storage.js';
import { type ChannelLike, instanceId, post } from './channel.js';
import { AuthEvents, type AuthEventType } from './events.js';
import { isFresh, isUnexpired, readRecord, type SessionRecord, storageKeys, writeRecord } from './record.js';

export interface SessionDeps {
  apiKeyId: string;
  storage: TokenStorage;
  transport: Transport;
  clock: ServerClock;
  lock: TokenLock;
  channel: ChannelLike | undefined;
  marginMs: number;
}

interface SessionMessage {
  kind: 'tessera-session';
  apiKeyId: string;
  from: string;
  type: AuthEventType;
}

export interface FreshOptions {
  /** An access token the caller saw refused (HTTP 401): renew even if it looks fresh. */
  staleAccessToken?: string;
  /** The caller needs the ID token fresh too. */
  needIdToken?: boolean;
}

/**
 * The signed-in session: storage is the truth shared by every tab, memory a cache of it.
 * Renewal runs once at a time in this tab (single flight) and under the cross-tab lock, and
 * re-reads storage once the lock is held, since another tab may have renewed already.
 */
export class TokenSession {
  readonly events = new AuthEvents();
  #cache: SessionRecord | null | undefined;
  #renewing: Promise<SessionRecord | null> | undefined;
  #generation = 0;
  #initial: Promise<void> | undefined;
  readonly #id = instanceId();
  readonly #key: string;
  readonly #lockName: string;
  readonly #onMessage = (event: MessageEvent) => void this.#received(event.data).catch(() => {});

  constructor(private readonly deps: SessionDeps) {
    this.#key = storageKeys(deps.apiKeyId).session;
    this.#lockName = `tessera:${deps.apiKeyId}:session`;
    deps.channel?.addEventListener('message', this.#onMessage);
  }

  close(): void {
    this.deps.channel?.removeEventListener('message', this.#onMessage);
  }

  /** The session as last known: storage is read once, then kept in memory. */
  async current(): Promise<SessionRecord | null> {
    if (this.#cache === undefined) this.#cache = await this.#load();
    return this.#cache;
  }

  /**
   * Settles once the session found at load is known: storage read once, no network call (a
   * stored session whose refresh token has died shows as signed in until the next renewal says
   * otherwise). Never rejects.
   */
  initialised(): Promise<void> {
    this.#initial ??= this.current().then(
      () => {},
      () => {},
    );
    return this.#initial;
  }

  /** The session in memory right now (undefined before the first read of storage). */
  peek(): SessionRecord | null | undefined {
    return this.#cache;
  }

  claims(record: SessionRecord | null): AccessTokenClaims | null {
    return record ? (readClaims<AccessTokenClaims>(record.bundle.access_token) ?? null) : null;
  }

  /** A session whose tokens are fresh enough to use, renewed first if needed; null when signed out. */
  async fresh(options: FreshOptions = {}): Promise<SessionRecord | null> {
    const record = await this.current();
    if (!record) return null;
    if (this.#usable(record, options)) return record;
    this.#renewing ??= this.#renew(options.staleAccessToken).finally(() => {
      this.#renewing = undefined;
    });
    try {
      return await this.#renewing;
    } catch (error) {
      // Offline, or the lock busy: a token that has not expired yet still does its job.
      const latest = this.#cache;
      if (latest === null) return null;
      const now = this.deps.clock.now();
      const stillValid =
        latest !== undefined &&
        options.staleAccessToken === undefined &&
        isUnexpired(latest.bundle.access_token, now) &&
        (!options.needIdToken || isUnexpired(latest.bundle.id_token, now));
      if (stillValid) return latest;
      throw error;
    }
  }

  /** Stores the bundle of a sign-in. */
  async signIn(bundle: OAuthTokenBundle): Promise<SessionRecord> {
    return this.#locked(() => this.#save(bundle, 'signedIn'));
  }

  /** Revokes the session at the service (best effort), then forgets it here and in every tab. */
  async logout(revoke: (refreshToken: string) => Promise<void>): Promise<{ revoked: boolean }> {
    return this.#locked(async () => {
      const record = await this.#load();
      let revoked = false;
      if (record) {
        try {
          await revoke(record.bundle.refresh_token);
          revoked = true;
        } catch {}
      }
      await this.#end(record !== null || Boolean(this.#cache));
      return { revoked };
    });
  }

  #usable(record: SessionRecord, options: FreshOptions): boolean {
    if (options.staleAccessToken !== undefined && record.bundle.access_token === options.staleAccessToken)
      return false;
    const now = this.deps.clock.now();
    const { marginMs } = this.deps;
    return (
      isFresh(record.bundle.access_token, now, marginMs) &&
      (!options.needIdToken || isFresh(record.bundle.id_token, now, marginMs))
    );
  }

  async #renew(staleAccessToken: string | undefined): Promise<SessionRecord | null> {
    return this.deps.lock.run(this.#lockName, async () => {
      const stored = await this.#load();
      if (!stored) {
        // Another tab signed out meanwhile.
        await this.#end(Boolean(this.#cache));
        return null;
      }
      const options = { needIdToken: true, ...(staleAccessToken !== undefined && { staleAccessToken }) };
      if (this.#usable(stored, options)) {
        // Another tab renewed (or signed in anew) while we waited for the lock: take its tokens.
        const sameSession = this.claims(stored)?.sid === this.claims(this.#cache ?? null)?.sid;
        this.#adopt(stored, sameSession ? 'refreshed' : 'signedIn');
        return stored;
      }
      return this.#refresh(stored);
    });
  }

  async #refresh(stored: SessionRecord): Promise<SessionRecord | null> {
    let bundle: OAuthTokenBundle;
    try {
      bundle = await this.deps.transport.call<OAuthTokenBundle>('/oauth/token', {
        body: {
          grant_type: 'refresh_token',
          refresh_token: stored.bundle.refresh_token,
          client_id: this.deps.apiKeyId,
        },
      });
    } catch (error) {
      // Expired, revoked or reused refresh token: the session is over. Sign out, do not retry.
      if (isTesseraClientError(error) && error.oauthError === 'invalid_grant') {
        await this.#end(true);
        return null;
      }
      throw error;
    }
    return this.#save(bundle, 'refreshed');
  }

  async #save(bundle: OAuthTokenBundle, type: 'signedIn' | 'refreshed'): Promise<SessionRecord> {
    const { iat } = tokenTimes(bundle.access_token);
    if (iat !== undefined) this.deps.clock.observeIssuedAt(iat);
    const record: SessionRecord = { v: 1, bundle, skewMs: this.deps.clock.skewMs };
    await writeRecord(this.deps.storage, this.#key, record);
    this.#generation++;
    this.#cache = record;
    this.#broadcast(type);
    this.events.emit({ type, claims: this.claims(record) });
    return record;
  }

  async #end(emit: boolean): Promise<void> {
    await this.deps.storage.remove(this.#key);
    this.#generation++;
    this.#cache = null;
    this.#broadcast('signedOut');
    if (emit) this.events.emit({ type: 'signedOut', claims: null });
  }

  /** Takes a record found in storage; tells listeners when it differs from what they knew. */
  #adopt(record: SessionRecord | null, type: AuthEventType): void {
    const previous = this.#cache;
    this.#cache = record;
    if (record && record.bundle.access_token !== previous?.bundle.access_token)
      this.events.emit({ type, claims: this.claims(record) });
    else if (!record && previous) this.events.emit({ type: 'signedOut', claims: null });
  }

  async #load(): Promise<SessionRecord | null> {
    const record = await readRecord(this.deps.storage, this.#key);
    if (record) this.deps.clock.seed(record.skewMs);
    return record;
  }

  /** Sign-in and logout take the lock so they do not interleave with another tab's renewal. */
  async #locked<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await this.deps.lock.run(this.#lockName, fn);
    } catch (error) {
      if (isTesseraClientError(error, ClientErrorCodes.lockTimeout)) return fn();
      throw error;
    }
  }

  #broadcast(type: AuthEventType): void {
    if (!this.deps.channel) return;
    const message: SessionMessage = {
      kind: 'tessera-session',
      apiKeyId: this.deps.apiKeyId,
      from: this.#id,
      type,
    };
    post(this.deps.channel, message);
  }

  async #received(data: unknown): Promise<void> {
    const m = data as Partial<SessionMessage> | null;
    if (m?.kind !== 'tessera-session' || m.apiKeyId !== this.deps.apiKeyId || m.from === this.#id) return;
    if (m.type === 'signedOut') {
      this.#generation++;
      this.#adopt(null, 'signedOut');
      return;
    }
    const generation = this.#generation;
    const record = await this.#load();
    // A write of our own happened meanwhile: it is newer than what we just read.
    if (generation !== this.#generation) return;
    this.#adopt(record, m.type === 'signedIn' ? 'signedIn' : 'refreshed');
  }
}

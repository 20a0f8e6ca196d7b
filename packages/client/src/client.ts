import type { AccessTokenClaims, VerifyResponse } from '@tessera/core';
import { ServerClock } from './clock.js';
import { defaultChannel, defaultKeyStore, defaultLock, defaultStorage } from './defaults.js';
import { LocalDeviceStore } from './device/local-device.js';
import { authorizedFetch } from './http/authorized-fetch.js';
import { type FetchLike, Transport } from './http/transport.js';
import type { TokenLock } from './lock/lock.js';
import {
  getUser,
  type LogoutOptions,
  type LogoutResult,
  logout,
  type TesseraUser,
} from './methods/account.js';
import { type ClientContext, notSignedIn } from './methods/context.js';
import { type DeviceMethods, deviceMethods } from './methods/devices.js';
import { type OtpMethods, otpMethods } from './methods/otp.js';
import { type PasskeyMethods, passkeyMethods } from './methods/passkeys.js';
import { type PinMethods, pinMethods } from './methods/pin.js';
import type { ChannelLike } from './session/channel.js';
import type { AuthListener } from './session/events.js';
import { TokenSession } from './session/session.js';
import type { KeyStore } from './storage/key-store.js';
import type { TokenStorage } from './storage/token-storage.js';
import {
  conditionalMediationAvailable,
  credentialsAuthenticator,
  requireCredentials,
} from './webauthn/authenticator.js';
import type { CredentialsLike, PasskeyAuthenticator } from './webauthn/types.js';

/**
 * Options of {@link createTesseraClient}. Only `issuer` and `apiKeyId` are required; every other
 * option has a default that suits the platform.
 *
 * @example
 * ```ts
 * const options: TesseraClientOptions = {
 *   issuer: 'https://auth.example.com',
 *   apiKeyId: 'pk_live_…',
 *   refreshMarginSeconds: 120,
 * };
 * ```
 */
export interface TesseraClientOptions {
  /** The service's base URL (`TESSERA_ISSUER`), e.g. `https://auth.example.com`. */
  issuer: string;
  /** The project's public API key id; sent as `API_KEY_ID` and as `client_id`. */
  apiKeyId: string;
  /**
   * Where tokens and the trusted-device id are kept. Default: {@link browserStorage} (encrypted
   * localStorage) in browsers, {@link memoryStorage} elsewhere — on React Native pass an adapter
   * over the Keychain / Keystore.
   */
  storage?: TokenStorage;
  /** Where WebCrypto keys are kept (device key, storage key). Default IndexedDB, else memory. */
  keyStore?: KeyStore;
  /** Default the global `fetch`. */
  fetch?: FetchLike;
  /** The device's clock in ms (default `Date.now`); the SDK corrects it towards the server's. */
  now?: () => number;
  /** Cross-tab renewal lock. Default Web Locks, else a BroadcastChannel lock, else in-process. */
  lock?: TokenLock;
  /**
   * Channel to the other tabs (notices only, never tokens). Default a BroadcastChannel named
   * `tessera:<apiKeyId>` in browsers, none elsewhere; `null` for none.
   */
  channel?: ChannelLike | null;
  /** `navigator.credentials` or a look-alike (tests). */
  credentials?: CredentialsLike;
  /** A JSON-level passkey implementation (React Native libraries); takes precedence over `credentials`. */
  authenticator?: PasskeyAuthenticator;
  /** Renew when the access token has less than this left (capped at half its lifetime). Default 60. */
  refreshMarginSeconds?: number;
  /** Give up on a call to the service after this long (`network_error`). Default 15 000. */
  requestTimeoutMs?: number;
}

/**
 * The Tessera client. Create one per project and share it.
 *
 * @example
 * ```ts
 * const tessera = createTesseraClient({ issuer, apiKeyId });
 * tessera.onAuthStateChange(({ type }) => render(type));
 * const response = await tessera.fetch('https://api.example.com/me');
 * ```
 */
export interface TesseraClient {
  /** The service's base URL, as given (without a trailing slash). */
  readonly issuer: string;
  /** The project's public API key id. */
  readonly apiKeyId: string;
  otp: OtpMethods;
  devices: DeviceMethods;
  pin: PinMethods;
  passkeys: PasskeyMethods;
  /** A valid access token, renewed first when it is about to expire; null when signed out. */
  getAccessToken(): Promise<string | null>;
  /** A valid ID token, renewed first when it is about to expire; null when signed out. */
  getIdToken(): Promise<string | null>;
  /** The current access token's claims (decoded, NOT verified: for display, not for authorization). */
  getClaims(): Promise<AccessTokenClaims | null>;
  /** Whether a session is stored (no network call). */
  isSignedIn(): Promise<boolean>;
  /**
   * The signed-in user from the service's userinfo endpoint (`GET /oauth/userinfo`), or null when
   * signed out.
   */
  getUser(): Promise<TesseraUser | null>;
  /** `fetch` with the Bearer token; renews and retries once after a 401. For your own API only. */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** Asks the service's `POST /verify` about the current access token. */
  verify(): Promise<VerifyResponse>;
  /**
   * Revokes the session at the service, then removes the tokens here and in every tab. Never
   * throws; `revoked` says whether the service confirmed. A registered trusted device is kept.
   * `scope: 'global'` ends every session of the user (tokens removed here too); `'others'` every
   * session but this one (tokens kept).
   */
  logout(options?: LogoutOptions): Promise<LogoutResult>;
  /**
   * Calls `listener` with `initialSession` first — the session found at load, or `claims: null`
   * — as soon as it is known (right away, asynchronously, once the client has loaded), then on
   * sign-in, renewal and sign-out (from any tab). Returns an unsubscribe function.
   */
  onAuthStateChange(listener: AuthListener): () => void;
  /** Stops listening to other tabs (and closes the channel the client opened itself). */
  close(): void;
}

/**
 * Creates a client for one project.
 *
 * @example
 * ```ts
 * import { createTesseraClient } from '@tessera/client';
 *
 * const tessera = createTesseraClient({ issuer: 'https://auth.example.com', apiKeyId: 'pk_live_…' });
 * const { challengeId } = await tessera.otp.start('ada@example.com');
 * await tessera.otp.complete(challengeId, prompt('Code?') ?? '');
 * console.log(await tessera.getClaims());
 * ```
 */
export function createTesseraClient(options: TesseraClientOptions): TesseraClient {
  if (!options.issuer || !options.apiKeyId)
    throw new TypeError('createTesseraClient needs issuer and apiKeyId');
  const issuer = options.issuer.replace(/\/+$/, '');
  const { apiKeyId } = options;
  const fetchFn: FetchLike = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const clock = new ServerClock(options.now ?? Date.now);
  const ownChannel = options.channel === undefined ? defaultChannel(apiKeyId) : undefined;
  const channel = options.channel === null ? undefined : (options.channel ?? ownChannel);
  const keyStore = options.keyStore ?? defaultKeyStore();
  const storage = options.storage ?? defaultStorage(keyStore);
  const transport = new Transport(issuer, apiKeyId, fetchFn, clock, options.requestTimeoutMs ?? 15_000);
  const lock = options.lock ?? defaultLock(channel);
  const ownLock = options.lock ? undefined : (lock as ReturnType<typeof defaultLock>);
  const session = new TokenSession({
    apiKeyId,
    storage,
    transport,
    clock,
    lock,
    channel,
    marginMs: (options.refreshMarginSeconds ?? 60) * 1000,
  });
  const ctx: ClientContext = { apiKeyId, transport, session, storage, keyStore };
  const local = new LocalDeviceStore(apiKeyId, storage, keyStore);
  const authenticator = () =>
    options.authenticator ?? credentialsAuthenticator(requireCredentials(options.credentials));

  return {
    issuer,
    apiKeyId,
    otp: otpMethods(ctx),
    devices: deviceMethods(ctx, local),
    pin: pinMethods(ctx, local),
    passkeys: passkeyMethods(ctx, authenticator, async () =>
      options.authenticator ? false : conditionalMediationAvailable(),
    ),
    async getAccessToken() {
      return (await session.fresh())?.bundle.access_token ?? null;
    },
    async getIdToken() {
      return (await session.fresh({ needIdToken: true }))?.bundle.id_token ?? null;
    },
    async getClaims() {
      return session.claims(await session.fresh());
    },
    async isSignedIn() {
      return (await session.current()) !== null;
    },
    getUser: () => getUser(ctx),
    fetch: (input, init) => authorizedFetch(session, fetchFn, notSignedIn, input, init),
    async verify() {
      const record = await session.fresh();
      if (!record) throw notSignedIn();
      return transport.call<VerifyResponse>('/verify', {
        body: { oauth_token: { access_token: record.bundle.access_token } },
      });
    },
    logout: (logoutOptions) => logout(ctx, logoutOptions),
    onAuthStateChange: (listener) =>
      session.events.subscribe(listener, {
        ready: session.initialised(),
        snapshot: () => ({ type: 'initialSession', claims: session.claims(session.peek() ?? null) }),
      }),
    close() {
      session.close();
      ownLock?.close?.();
      ownChannel?.close();
    },
  };
}

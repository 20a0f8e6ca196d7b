import type { AuthMethod, SignInResult as WireSignInResult } from '@tessera/core';
import { ErrorCodes } from '@tessera/core';
import { readClaims } from '../encoding/jwt.js';
import { ClientErrorCodes, isTesseraClientError, TesseraClientError } from '../errors.js';
import type { CallOptions, Transport } from '../http/transport.js';
import type { TokenSession } from '../session/session.js';
import type { KeyStore } from '../storage/key-store.js';
import type { TokenStorage } from '../storage/token-storage.js';

/**
 * Options of every `…signIn` / `…complete` call.
 *
 * @example
 * ```ts
 * // Check who the user is without starting a session on this device:
 * const { userId } = await tessera.otp.complete(challengeId, code, { getOAuthToken: false });
 * ```
 */
export interface SignInOptions {
  /** Ask for the token bundle and store it (default true). With false nothing is stored. */
  getOAuthToken?: boolean;
}

/**
 * The outcome of a sign-in.
 *
 * @example
 * ```ts
 * const result = await tessera.pin.signIn('4829');
 * if (result.tokensStored) router.navigate('/home');
 * ```
 */
export interface SignInResult {
  userId: string;
  authMethod: AuthMethod;
  /** True when tokens were obtained and stored (getOAuthToken was not false). */
  tokensStored: boolean;
}

/** What the sign-in `complete` endpoints answer (the server's wire type, from @tessera/core). */
export type SignInAnswer = WireSignInResult;

/** What the sign-in method modules share. */
export interface ClientContext {
  apiKeyId: string;
  transport: Transport;
  session: TokenSession;
  storage: TokenStorage;
  keyStore: KeyStore;
}

export const notSignedIn = () =>
  new TesseraClientError(ClientErrorCodes.notSignedIn, 'sign in first: this call needs a signed-in user');

/** A refused access token; other 401s (a bad signature, say) are the answer itself. */
const isTokenRefused = (error: unknown) =>
  isTesseraClientError(error) &&
  error.status === 401 &&
  (error.code === ErrorCodes.invalidToken || error.code === ErrorCodes.unauthorized);

/** Calls the service as the signed-in user; renews the token and retries once if it is refused. */
export async function callAsUser<T>(ctx: ClientContext, path: string, options: CallOptions = {}): Promise<T> {
  const record = await ctx.session.fresh();
  if (!record) throw notSignedIn();
  try {
    return await ctx.transport.call<T>(path, { ...options, token: record.bundle.access_token });
  } catch (error) {
    if (!isTokenRefused(error)) throw error;
    const renewed = await ctx.session.fresh({ staleAccessToken: record.bundle.access_token });
    if (!renewed) throw notSignedIn();
    return ctx.transport.call<T>(path, { ...options, token: renewed.bundle.access_token });
  }
}

/** Ends a sign-in ceremony: stores the bundle when there is one, says who signed in. */
/** Posts a sign-in completion (`getOAuthToken` true unless the caller said false) and finishes it. */
export async function completeSignIn(
  ctx: ClientContext,
  path: string,
  body: Record<string, unknown>,
  options: SignInOptions,
): Promise<SignInResult> {
  const answer = await ctx.transport.call<SignInAnswer>(path, {
    body: { ...body, getOAuthToken: options.getOAuthToken !== false },
  });
  return finishSignIn(ctx, answer);
}

export async function finishSignIn(ctx: ClientContext, answer: SignInAnswer): Promise<SignInResult> {
  if ('oauth_token' in answer) {
    const bundle = answer.oauth_token;
    await ctx.session.signIn(bundle);
    const sub = readClaims<{ sub?: string }>(bundle.access_token)?.sub ?? '';
    return { userId: sub, authMethod: bundle.auth_method, tokensStored: true };
  }
  return { userId: answer.user_id, authMethod: answer.auth_method, tokensStored: false };
}

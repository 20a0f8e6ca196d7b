import { type ClientContext, callAsUser } from './context.js';

/**
 * The signed-in user, as the service's OpenID Connect userinfo endpoint describes them: fresh
 * from the service, unlike the token's claims.
 *
 * @example
 * ```ts
 * const user: TesseraUser | null = await tessera.getUser();
 * if (user?.email) greet(user.email);
 * ```
 */
export interface TesseraUser {
  /** Tessera's user id (`sub`). */
  userId: string;
  /** Your own id for the user when you set one, else `userId`. */
  clientUserId: string;
  /** The e-mail address or E.164 phone number the user signs in with. */
  identifier: string;
  identifierType: 'email' | 'phone';
  /** Set when the identifier is an e-mail address (verified by the sign-in code). */
  email?: string;
  /** Set when the identifier is a phone number (verified by the sign-in code). */
  phoneNumber?: string;
}

interface UserInfo {
  sub: string;
  client_user_id?: string;
  identifier: string;
  email?: string;
  phone_number?: string;
}

export async function getUser(ctx: ClientContext): Promise<TesseraUser | null> {
  if (!(await ctx.session.current())) return null;
  const info = await callAsUser<UserInfo>(ctx, '/oauth/userinfo', { method: 'GET' });
  return {
    userId: info.sub,
    clientUserId: info.client_user_id ?? info.sub,
    identifier: info.identifier,
    identifierType: info.email === undefined ? 'phone' : 'email',
    ...(info.email !== undefined && { email: info.email }),
    ...(info.phone_number !== undefined && { phoneNumber: info.phone_number }),
  };
}

/**
 * Options of {@link TesseraClient.logout}.
 *
 * @example
 * ```ts
 * await tessera.logout({ scope: 'global' }); // every session of the user, this one included
 * ```
 */
export interface LogoutOptions {
  /**
   * - `local` (default) — this session: revoked at the service, tokens removed here and in every tab
   * - `global` — every session of the user on every device; tokens removed here too
   * - `others` — every session but this one; the tokens here are kept
   */
  scope?: 'local' | 'global' | 'others';
}

/**
 * What {@link TesseraClient.logout} did.
 *
 * @example
 * ```ts
 * const { revoked, sessionsRevoked } = await tessera.logout({ scope: 'others' });
 * ```
 */
export interface LogoutResult {
  /** The service confirmed the revocation asked for (with `global`, of every session). */
  revoked: boolean;
  /** With `global` and `others`: how many sessions the service ended, when it confirmed. */
  sessionsRevoked?: number;
}

/** Every session of the user, or all but this one (`POST /v1/me/sessions/revoke`); null when that failed. */
async function revokeMany(ctx: ClientContext, scope: 'global' | 'others'): Promise<number | null> {
  try {
    const answer = await callAsUser<{ sessions_revoked: number }>(ctx, '/v1/me/sessions/revoke', {
      body: { scope },
    });
    return answer.sessions_revoked;
  } catch {
    return null;
  }
}

export async function logout(ctx: ClientContext, options: LogoutOptions = {}): Promise<LogoutResult> {
  const scope = options.scope ?? 'local';
  if (scope !== 'local' && scope !== 'global' && scope !== 'others')
    throw new TypeError("logout scope must be 'local', 'global' or 'others'");
  // Asked before the session's lock is taken: the call may renew the token, which takes it too.
  const many = scope === 'local' ? null : await revokeMany(ctx, scope);
  if (scope === 'others')
    return many === null ? { revoked: false } : { revoked: true, sessionsRevoked: many };
  const { revoked } = await ctx.session.logout(async (token) => {
    // Ended already when the global sign-out went through; else at least this session ends.
    if (many !== null) return;
    await ctx.transport.call('/oauth/revoke', { body: { token, client_id: ctx.apiKeyId } });
  });
  if (scope === 'local') return { revoked };
  return many === null ? { revoked: false } : { revoked: true, sessionsRevoked: many };
}

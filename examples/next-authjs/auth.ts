// auth.ts
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { headers } from 'next/headers';
import NextAuth from 'next-auth';
import { getToken, type JWT } from 'next-auth/jwt';

// .env.local: AUTH_SECRET (`npx auth secret`), AUTH_URL (this app's origin) and the client
// registered at Tessera with the redirect URI `${AUTH_URL}/api/auth/callback/tessera`.
const issuer = process.env.AUTH_TESSERA_ISSUER!; // https://auth.example.com
const clientId = process.env.AUTH_TESSERA_ID!; // tc_…
const clientSecret = process.env.AUTH_TESSERA_SECRET!; // tcs_…

declare module 'next-auth' {
  interface Session {
    error?: 'RefreshTokenError';
  }
}
declare module 'next-auth/jwt' {
  interface JWT {
    access_token?: string;
    id_token?: string;
    refresh_token?: string;
    expires_at?: number;
    error?: 'RefreshTokenError';
  }
}

interface Metadata {
  token_endpoint: string;
  userinfo_endpoint: string;
  end_session_endpoint: string;
  jwks_uri: string;
}
let metadata: Promise<Metadata> | undefined;

/** Tessera's endpoints, from its discovery document (fetched once). */
export async function tessera(): Promise<Metadata> {
  metadata ??= fetch(`${issuer}/.well-known/openid-configuration`).then((r) =>
    r.ok ? r.json() : Promise.reject(new Error(`Tessera's discovery answered ${r.status}`)),
  );
  try {
    return await metadata;
  } catch (error) {
    metadata = undefined;
    throw error;
  }
}

let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;

export const { handlers, auth, signIn, signOut } = NextAuth({
  providers: [
    {
      id: 'tessera',
      name: 'Tessera',
      type: 'oidc',
      issuer,
      clientId,
      clientSecret,
      checks: ['pkce', 'state', 'nonce'],
      // offline_access: a refresh token. Tessera's ID token names the user by `sub` only: with
      // `idToken: false` Auth.js reads the profile (the e-mail) from userinfo.
      authorization: { params: { scope: 'openid email offline_access' } },
      idToken: false,
      client: { id_token_signed_response_alg: 'ES256' },
    },
  ],
  callbacks: {
    async jwt({ token, account }) {
      if (account) {
        // Auth.js has checked the ID token's claims (iss, aud, exp, nonce); its signature too:
        jwks ??= createRemoteJWKSet(new URL((await tessera()).jwks_uri));
        await jwtVerify(account.id_token!, jwks, { issuer, audience: clientId, algorithms: ['ES256'] });
        return {
          ...token,
          access_token: account.access_token,
          id_token: account.id_token,
          refresh_token: account.refresh_token,
          expires_at: account.expires_at,
        };
      }
      if (Date.now() < (token.expires_at ?? 0) * 1000) return token;
      return refresh(token);
    },
    session({ session, token }) {
      session.error = token.error;
      return session;
    },
  },
});

/**
 * Auth.js's refresh-token rotation pattern (authjs.dev/guides/refresh-token-rotation): Tessera
 * answers a refresh with a new refresh token, and the one spent is dead from then on.
 */
async function refresh(token: JWT): Promise<JWT> {
  try {
    if (!token.refresh_token) throw new Error('no refresh token');
    const response = await fetch((await tessera()).token_endpoint, {
      method: 'POST',
      headers: {
        authorization: `Basic ${btoa(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`)}`,
      },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token.refresh_token }),
    });
    const tokens = await response.json();
    if (!response.ok) throw new Error(`Tessera refused the refresh: ${tokens.error}`);
    return {
      ...token,
      access_token: tokens.access_token,
      id_token: tokens.id_token ?? token.id_token,
      refresh_token: tokens.refresh_token ?? token.refresh_token,
      expires_at: Math.floor(Date.now() / 1000 + tokens.expires_in),
      error: undefined,
    };
  } catch (error) {
    console.error((error as Error).message);
    return { ...token, error: 'RefreshTokenError' };
  }
}

/**
 * The session's tokens, for server code (the page that calls an API, the sign-out): the session
 * Auth.js gives the browser (`/api/auth/session`) does not carry them.
 */
export async function sessionTokens(): Promise<JWT | null> {
  return getToken({
    req: { headers: await headers() },
    secret: process.env.AUTH_SECRET!,
    secureCookie: process.env.AUTH_URL?.startsWith('https:') ?? false,
  });
}

// What the OIDC figures' clients and servers agree on (bench/README.md, "The OIDC figures").

/** The redirect URI of both servers' bench clients: never fetched, its `code` parameter is read. */
export const REDIRECT_URI = 'https://rp.example/callback';

/** The scopes both clients ask for: an ID token with the e-mail, and a refresh token. */
export const SCOPE = 'openid email offline_access';

/** oidc-provider's client (oidc-provider-entry.ts) and the resource its JWT access tokens are for. */
export const PROVIDER_CLIENT = {
  client_id: 'bench-public',
  resource: 'https://api.bench.example/',
  /** The scope of that resource, asked for beside SCOPE so that its access token carries one. */
  resourceScope: 'api',
} as const;

// Child process: panva's oidc-provider, the reference of the OIDC figures (bench/README.md), in one
// process with its default in-memory adapter (see `store` below), signing with a fresh ES256 key, on BENCH_OP_PORT of
// 127.0.0.1 (its issuer must be known before it listens). One public client (PKCE S256, which
// oidc-provider requires of `none` clients). Users sign in through its development interactions
// (any login), as the bench's code minter does over HTTP.
// BENCH_OP_ACCESS_TOKEN=jwt (the default) makes its access tokens ES256 JWTs for a default
// resource, so that a code exchange issues what Tessera's does: an access token JWT with the
// user's claims, an ES256 ID token and a refresh token. `opaque` keeps oidc-provider's own default
// (an opaque access token kept in the adapter, for its userinfo endpoint).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';
import { PROVIDER_CLIENT, REDIRECT_URI } from './oidc-shared.js';
import { answerCpuQueries, type ReadyMessage } from './protocol.js';

const jwtAccessTokens = process.env.BENCH_OP_ACCESS_TOKEN !== 'opaque';
const port = Number(process.env.BENCH_OP_PORT);
if (!Number.isInteger(port) || port <= 0) throw new Error('BENCH_OP_PORT must be a free port');
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });

// The default adapter (its MemoryAdapter) keeps everything in one LRU of 1,000 entries per
// provider, and each sign-in leaves about five (session, grant, interactions, code): under load,
// codes minted ahead of a window were evicted before their exchange ("authorization code not
// found"). The same adapter class over the same LRU class, with room for the run.
const store = new LRU({ maxSize: 2_000_000 });

const provider = new Provider(issuer, {
  adapter: (model: string) => new MemoryAdapter(model, store),
  clients: [
    {
      client_id: PROVIDER_CLIENT.client_id,
      token_endpoint_auth_method: 'none',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      id_token_signed_response_alg: 'ES256',
    },
  ],
  jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg: 'ES256', use: 'sig' }] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  // A login of the development interactions is a user whose e-mail is that login.
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, email: sub, email_verified: true }) }),
  features: {
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => (jwtAccessTokens ? PROVIDER_CLIENT.resource : undefined),
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: PROVIDER_CLIENT.resourceScope,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
});

const server = createServer(provider.callback());
await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

const stop = () => {
  const force = setTimeout(() => process.exit(1), 3000);
  force.unref();
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.once('disconnect', stop);

answerCpuQueries();
const ready: ReadyMessage = { type: 'ready', url: issuer };
process.send?.(ready);

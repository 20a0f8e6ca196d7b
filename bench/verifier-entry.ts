// Child process: the "hand-written verifier" baseline — what an integrator would write in an
// afternoon with Fastify and node:crypto alone: POST /verify takes the same body as Tessera's,
// splits the JWT, checks the header (ES256, the one known kid), the signature against the
// issuer's public key (BENCH_VERIFIER_JWK, from Tessera's JWKS), then `iss`, `exp` and `nbf`, and
// answers {"success":true} or {"success":false}. No cache, no revocation list, no project check:
// Tessera's /verify does all of those on top, so this is the floor it is measured against.
import { createPublicKey, verify } from 'node:crypto';
import Fastify from 'fastify';
import { serveBaseline } from './baseline.js';

const jwk = JSON.parse(process.env.BENCH_VERIFIER_JWK ?? 'null') as { kid?: string } | null;
const issuer = process.env.BENCH_VERIFIER_ISSUER;
if (!jwk?.kid || !issuer) throw new Error('BENCH_VERIFIER_JWK and BENCH_VERIFIER_ISSUER are required');
const key = createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });

function check(token: unknown): boolean {
  if (typeof token !== 'string') return false;
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  if (first < 0 || second < 0 || token.indexOf('.', second + 1) >= 0) return false;
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, first), 'base64url').toString()) as {
      alg?: unknown;
      kid?: unknown;
    };
    if (header.alg !== 'ES256' || header.kid !== jwk!.kid) return false;
    const signature = Buffer.from(token.slice(second + 1), 'base64url');
    if (signature.length !== 64) return false;
    const input = Buffer.from(token.slice(0, second));
    if (!verify('sha256', input, { key, dsaEncoding: 'ieee-p1363' }, signature)) return false;
    const claims = JSON.parse(Buffer.from(token.slice(first + 1, second), 'base64url').toString()) as {
      iss?: unknown;
      exp?: unknown;
      nbf?: unknown;
    };
    const now = Math.floor(Date.now() / 1000);
    if (claims.iss !== issuer || typeof claims.exp !== 'number' || claims.exp <= now) return false;
    return typeof claims.nbf !== 'number' || claims.nbf <= now;
  } catch {
    return false;
  }
}

const app = Fastify({ logger: false });
app.post('/verify', async (request) => {
  const body = request.body as { oauth_token?: { access_token?: unknown } } | undefined;
  return { success: check(body?.oauth_token?.access_token) };
});
await serveBaseline(app);

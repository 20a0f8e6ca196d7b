// Child process: the "hand-written verifier" baseline — what an integrator would write in an
// afternoon with Fastify and node:crypto alone: POST /verify takes the same body as Tessera's,
// splits the JWT, checks the header (ES256, the one known kid), the signature against the
// issuer's public key (BENCH_VERIFIER_JWK, from Tessera's JWKS), then `iss`, `exp` and `nbf`, and
// answers {"success":true} or {"success":false}. No cache, no revocation list, no project check:
// Tessera's /verify does all of those on top, so this is the floor it is measured against.
//
// Two variants for side-by-side.ts (bench/README.md, "What a third look found"):
// - BENCH_VERIFIER_RAW=1: the same check, answered on node:http ahead of Fastify's routing, request
//   and reply objects, as Tessera's /verify fast path is (Fastify still serves nothing else).
// - BENCH_VERIFIER_LOAD_TESSERA=1: Tessera's compiled server modules are imported first and left
//   unused: what the code a process has loaded costs the same `/verify`.
import { createPublicKey, verify } from 'node:crypto';
import { createServer } from 'node:http';
import Fastify, { type FastifyServerFactory } from 'fastify';
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

if (process.env.BENCH_VERIFIER_LOAD_TESSERA === '1')
  for (const module of ['app.js', 'main.js'])
    await import(new URL(`../packages/server/dist/${module}`, import.meta.url).href);

/** `POST /verify` answered on node:http: the body read by hand, parsed and checked, the answer written. */
const raw: FastifyServerFactory = (handler) =>
  createServer((request, response) => {
    if (request.method !== 'POST' || request.url !== '/verify') return handler(request, response);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      let success = false;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          oauth_token?: { access_token?: unknown };
        } | null;
        success = check(body?.oauth_token?.access_token);
      } catch {}
      const payload = JSON.stringify({ success });
      response.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(payload),
      });
      response.end(payload);
    });
  });

const app = Fastify({
  logger: false,
  ...(process.env.BENCH_VERIFIER_RAW === '1' ? { serverFactory: raw } : {}),
});
app.post('/verify', async (request) => {
  const body = request.body as { oauth_token?: { access_token?: unknown } } | undefined;
  return { success: check(body?.oauth_token?.access_token) };
});
await serveBaseline(app);

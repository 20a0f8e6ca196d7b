import type autocannon from 'autocannon';
import { type Counter, headerOf, type Workload } from './load.js';
import { OTP_CODE_HEADER } from './protocol.js';

type Request = autocannon.Request;

const JSON_TYPE = 'application/json';
const SUCCESS = '{"success":true';

function counter(): Counter {
  return { ok: 0, failed: 0 };
}

function countSuccess(c: Counter) {
  return (status: number, body: string) => {
    if (status === 200 && body.startsWith(SUCCESS)) c.ok++;
    else c.failed++;
  };
}

/**
 * POST /verify (or the bare route) with the same body every time. The request is still rebuilt
 * per request, as in `verifyEach`, so the generator does the same work in every /verify workload.
 */
export function verifySame(url: string, apiKeyId: string, body: Buffer): Workload {
  const c = counter();
  const request: Request = {
    method: 'POST',
    path: '/verify',
    headers: { 'content-type': JSON_TYPE, api_key_id: apiKeyId },
    setupRequest: (req) => {
      req.body = body;
      return req;
    },
    onResponse: countSuccess(c),
  };
  return { url, requests: [request], counter: c };
}

/**
 * POST /verify taking the next body of `bodies` for every request, cycling when they run out.
 * `bodies` may grow between runs; `used()` says how many requests took one.
 */
export function verifyEach(url: string, apiKeyId: string, bodies: Buffer[]): Workload & { used(): number } {
  const c = counter();
  let used = 0;
  const request: Request = {
    method: 'POST',
    path: '/verify',
    headers: { 'content-type': JSON_TYPE, api_key_id: apiKeyId },
    setupRequest: (req) => {
      req.body = bodies[used++ % bodies.length];
      return req;
    },
    onResponse: countSuccess(c),
  };
  return { url, requests: [request], counter: c, used: () => used };
}

/**
 * Refresh grants. Tokens rotate, so each request takes a refresh token from a pool and each
 * answer puts its successor back: with pipelining 1 every connection follows its own chain.
 */
export function refreshGrants(url: string, apiKeyId: string, refreshTokens: string[]): Workload {
  const c = counter();
  const pool = [...refreshTokens];
  const request: Request = {
    method: 'POST',
    path: '/oauth/token',
    headers: { 'content-type': JSON_TYPE },
    setupRequest: (req) => {
      // An empty pool only happens after many failed grants; the request then fails visibly.
      const token = pool.pop() ?? 'tsr_pool_exhausted';
      req.body = JSON.stringify({ grant_type: 'refresh_token', refresh_token: token, client_id: apiKeyId });
      return req;
    },
    onResponse: (status, body) => {
      if (status === 200) {
        const next = (JSON.parse(body) as { refresh_token?: unknown }).refresh_token;
        if (typeof next === 'string') {
          pool.push(next);
          c.ok++;
          return;
        }
      }
      c.failed++;
    },
  };
  return { url, requests: [request], counter: c };
}

interface OtpContext {
  challenge?: string;
  code?: string | undefined;
}

/** OTP sign-ins of new users: start, then complete with getOAuthToken; counts completed sign-ins. */
export function otpSignIns(url: string, apiKeyId: string, prefix: string): Workload {
  const c = counter();
  const headers = { 'content-type': JSON_TYPE, api_key_id: apiKeyId };
  let n = 0;
  const start: Request = {
    method: 'POST',
    path: '/v1/auth/otp/start',
    headers,
    setupRequest: (req) => {
      req.body = JSON.stringify({ identifier: `${prefix}-${n++}@bench.example.com` });
      return req;
    },
    onResponse: (status, body, context, responseHeaders) => {
      const ctx = context as OtpContext;
      if (status !== 200) {
        c.failed++;
        return;
      }
      ctx.challenge = (JSON.parse(body) as { challenge_id: string }).challenge_id;
      ctx.code = headerOf(responseHeaders, OTP_CODE_HEADER);
    },
  };
  const complete: Request = {
    method: 'POST',
    path: '/v1/auth/otp/complete',
    headers,
    setupRequest: (req, context) => {
      const ctx = context as OtpContext;
      // No challenge (start failed): autocannon goes back to the first request.
      if (!ctx.challenge || !ctx.code) return null as unknown as Request;
      req.body = JSON.stringify({ challenge_id: ctx.challenge, code: ctx.code, getOAuthToken: true });
      return req;
    },
    onResponse: (status, body) => {
      if (status === 200 && body.includes('"access_token"')) c.ok++;
      else c.failed++;
    },
  };
  return { url, requests: [start, complete], counter: c };
}

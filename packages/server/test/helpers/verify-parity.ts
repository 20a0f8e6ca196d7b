// The /verify fast path's parity tests (test/http/verify-fast-path*.test.ts): a request sent over
// a socket (the fast path, or Fastify when it declines or replays) and through `app.inject`
// (Fastify's pipeline only), and the answers compared.
import { request as httpRequest } from 'node:http';
import type { onRequestHookHandler, onRouteHookHandler } from 'fastify';
import type { TestServer } from './harness.js';

export interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  /** Sent chunked (no Content-Length), split at this byte. */
  chunkedAt?: number;
  /** The Content-Length as written, when not the plain number (leading zeros). */
  lengthText?: string;
}

export interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  text: string;
}

/** The headers an answer is compared on (not Date, Connection, Keep-Alive: the hop's own). */
export const COMPARED = [
  'content-type',
  'content-length',
  'access-control-allow-origin',
  'retry-after',
  'cache-control',
  'vary',
];

export const pick = (headers: Record<string, unknown>): Record<string, string | undefined> =>
  Object.fromEntries(
    COMPARED.map((name) => [name, headers[name] === undefined ? undefined : String(headers[name])]),
  );

export function overSocket(url: string, sent: Sent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const headers: Record<string, string | number> = { ...sent.headers };
    const body = sent.body;
    // Chunked said outright: Node's client sends a GET's or DELETE's body unframed otherwise.
    if (body !== undefined) {
      if (sent.chunkedAt === undefined) headers['content-length'] = sent.lengthText ?? body.length;
      else headers['transfer-encoding'] = 'chunked';
    }
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: sent.path,
        method: sent.method,
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: pick(res.headers),
            text: Buffer.concat(chunks).toString(),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (body !== undefined && sent.chunkedAt !== undefined) {
      req.write(body.subarray(0, sent.chunkedAt));
      req.end(body.subarray(sent.chunkedAt));
    } else req.end(body);
  });
}

export async function injected(server: TestServer, sent: Sent): Promise<Answer> {
  const headers: Record<string, string> = { ...sent.headers };
  if (sent.body !== undefined && sent.chunkedAt === undefined)
    headers['content-length'] = sent.lengthText ?? String(sent.body.length);
  const answer = await server.app.inject({
    method: sent.method as 'POST',
    url: sent.path,
    headers,
    ...(sent.body === undefined ? {} : { payload: sent.body }),
  });
  // A HEAD answer has no content on the wire (RFC 9110, 9.3.2); inject shows what was written.
  const text = sent.method === 'HEAD' ? '' : answer.body;
  return { status: answer.statusCode, headers: pick(answer.headers), text };
}

/**
 * An `onRoute` hook counting the requests Fastify routes to POST /verify (an `onRequest` hook of
 * the route, so refusals before the handler count too): those its pipeline answered.
 */
export function countVerifyRequests(): { onRoute: onRouteHookHandler; readonly count: number } {
  let count = 0;
  return {
    onRoute: (route) => {
      if (route.url !== '/verify' || route.method !== 'POST') return;
      const counting: onRequestHookHandler = (_request, _reply, done) => {
        count++;
        done();
      };
      const own = route.onRequest;
      route.onRequest = own === undefined ? [counting] : [counting, ...(Array.isArray(own) ? own : [own])];
    },
    get count() {
      return count;
    },
  };
}

import assert from 'node:assert/strict';
import { OPERATIONS, type OperationId } from '../src/generated/operations.js';
import { TesseraAdminError } from '../src/index.js';

/** `METHOD /path/template` of an operation. */
export const routeOf = (id: OperationId) => `${OPERATIONS[id].method} ${OPERATIONS[id].path}`;

/**
 * A fetch that records which routes of the document (`METHOD /path/{template}`) it reached, by
 * matching each request against the templates given: the test's own account of what the client
 * sent, independent of the client's table.
 */
export function recordingFetch(templates: Array<{ method: string; path: string }>) {
  const patterns = templates.map((t) => ({
    route: `${t.method} ${t.path}`,
    method: t.method,
    regex: new RegExp(`^${t.path.replace(/\{\w+\}/g, '[^/]+')}$`),
  }));
  const reached = new Set<string>();
  const unmatched: string[] = [];
  const requests: Array<{ method: string; url: URL; headers: Headers }> = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    requests.push({ method: request.method, url, headers: request.headers });
    const response = await fetch(request);
    const match = patterns.find((p) => p.method === request.method && p.regex.test(url.pathname));
    if (match) reached.add(match.route);
    else unmatched.push(`${request.method} ${url.pathname}`);
    return response;
  };
  return { fetch: recording, reached, unmatched, requests };
}

/** The TesseraAdminError a call rejects with (fails the test if it resolves or throws anything else). */
export async function rejection(call: Promise<unknown>): Promise<TesseraAdminError> {
  const error = await call.then(
    () => assert.fail('the call was expected to be refused'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof TesseraAdminError, String(error));
  return error;
}

import type { TokenSession } from '../session/session.js';
import type { FetchLike } from './transport.js';

/**
 * `fetch` with `Authorization: Bearer <access token>`; after a 401 it renews the token and
 * retries once (the request is cloned up front, so its body can be sent again).
 */
export async function authorizedFetch(
  session: TokenSession,
  fetchFn: FetchLike,
  notSignedIn: () => Error,
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  const record = await session.fresh();
  if (!record) throw notSignedIn();
  const base = new Request(input, init);
  const send = (token: string) => {
    const request = base.clone();
    request.headers.set('authorization', `Bearer ${token}`);
    return fetchFn(request);
  };
  const token = record.bundle.access_token;
  const first = await send(token);
  if (first.status !== 401) return first;
  const renewed = await session.fresh({ staleAccessToken: token });
  if (!renewed || renewed.bundle.access_token === token) return first;
  await first.body?.cancel().catch(() => {});
  return send(renewed.bundle.access_token);
}

import type { IncomingHttpHeaders } from 'node:http';
import type { CookieAdapter } from './cookies.js';
import { cookieJar } from './cookies.js';

/** Web `Headers` from Node's header object (repeated headers joined as Node would send them). */
export function webHeaders(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) out.append(name, v);
    else out.set(name, value);
  }
  return out;
}

/** A Web `Request` for the auth handler: only the path, the headers and the body matter to it. */
export function webRequest(
  method: string,
  url: string,
  headers: IncomingHttpHeaders,
  body: string | undefined,
): Request {
  return new Request(new URL(url, 'http://app.invalid'), {
    method,
    headers: webHeaders(headers),
    ...(method === 'GET' || method === 'HEAD' || body === undefined ? {} : { body }),
  });
}

/** A cookie adapter over a Node request's `Cookie` header that hands `Set-Cookie` values to `append`. */
export function nodeCookies(
  cookieHeader: string | undefined,
  append: (setCookie: string) => void,
): CookieAdapter {
  const jar = cookieJar(cookieHeader);
  return {
    get: (name) => jar.get(name),
    set(name, value, options) {
      jar.set(name, value, options);
      const written = jar.setCookies().find((c) => c.startsWith(`${name}=`));
      if (written) append(written);
    },
  };
}

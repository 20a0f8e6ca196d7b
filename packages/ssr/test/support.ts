import { parseSetCookie } from 'cookie';
import { startServer, type TestServer } from '../../server/test/helpers/harness.js';
import { createTesseraSsr, type SsrOptions, type TesseraSsr } from '../src/index.js';

export const APP = 'https://app.test';

/** A real Tessera (SQLite) whose project lists the app's origin, and the SSR layer in front of it. */
export async function startTessera(env: Record<string, string> = {}): Promise<TestServer> {
  return startServer('sqlite', { env: { TESSERA_OTP_RESEND_INTERVAL: '0', ...env } });
}

/** Counts the calls the SSR layer makes to Tessera, by path. */
export function countingFetch(): { fetch: typeof fetch; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  return {
    calls,
    fetch: (input, init) => {
      const path = new URL(String(input instanceof Request ? input.url : input)).pathname;
      calls.set(path, (calls.get(path) ?? 0) + 1);
      return fetch(input, init);
    },
  };
}

export function ssrFor(server: TestServer, options: Partial<SsrOptions> = {}): TesseraSsr {
  return createTesseraSsr({
    issuer: server.url,
    apiKeyId: server.project.api_key_id,
    appOrigin: APP,
    ...options,
  });
}

/** A browser's cookie store, reduced to what the tests need: name → value, updated by Set-Cookie. */
export class Browser {
  readonly cookies = new Map<string, string>();
  readonly raw = new Map<string, string>();

  header(): string {
    return [...this.cookies].map(([n, v]) => `${n}=${encodeURIComponent(v)}`).join('; ');
  }

  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const cookie = parseSetCookie(line);
      this.raw.set(cookie.name, line);
      if (cookie.maxAge === 0 || !cookie.value) this.cookies.delete(cookie.name);
      else this.cookies.set(cookie.name, cookie.value);
    }
  }
}

/** POSTs JSON to an auth route as a same-origin page would (Origin, Sec-Fetch-Site, CSRF header). */
export async function post(
  ssr: TesseraSsr,
  browser: Browser,
  route: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  const csrf = browser.cookies.get(ssr.cookieNames.csrf);
  const response = await ssr.handle(
    new Request(`${APP}${ssr.paths.basePath}${route}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        origin: APP,
        'sec-fetch-site': 'same-origin',
        cookie: browser.header(),
        ...(csrf ? { 'x-csrf-token': csrf } : {}),
        ...headers,
      },
      body: JSON.stringify(body),
    }),
  );
  if (!response) throw new Error(`no auth route at ${route}`);
  browser.store(response);
  return response;
}

/** GET {basePath}/session: the CSRF cookie and the user. */
export async function getSession(ssr: TesseraSsr, browser: Browser): Promise<Response> {
  const response = await ssr.handle(
    new Request(`${APP}${ssr.paths.basePath}/session`, { headers: { cookie: browser.header() } }),
  );
  if (!response) throw new Error('no session route');
  browser.store(response);
  return response;
}

/** Signs `identifier` in through the proxy (OTP start and complete), as a browser would. */
export async function signIn(ssr: TesseraSsr, server: TestServer, browser: Browser, identifier: string) {
  await getSession(ssr, browser);
  const started = await post(ssr, browser, '/otp/start', { identifier });
  if (started.status !== 200) throw new Error(`otp/start: ${started.status} ${await started.text()}`);
  const { challenge_id } = (await started.json()) as { challenge_id: string };
  const done = await post(ssr, browser, '/otp/complete', { challenge_id, code: server.lastCode(identifier) });
  if (done.status !== 200) throw new Error(`otp/complete: ${done.status} ${await done.text()}`);
  return done;
}

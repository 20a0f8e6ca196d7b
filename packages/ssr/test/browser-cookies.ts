import assert from 'node:assert/strict';
import type { BrowserContext } from 'playwright-core';

/**
 * What every app on @tessera/ssr must give a real browser after sign-in (the example apps' tests):
 * both session cookies stored `HttpOnly; Secure; SameSite=Lax; Path=/`.
 */
export async function assertSessionCookies(context: BrowserContext, origin: string): Promise<void> {
  const cookies = await context.cookies(origin);
  for (const name of ['__Host-tessera-refresh', '__Host-tessera-access']) {
    const c = cookies.find((cookie) => cookie.name === name);
    assert.ok(c, `${name} is stored`);
    assert.equal(c.httpOnly, true, name);
    assert.equal(c.secure, true, name);
    assert.equal(c.sameSite, 'Lax', name);
    assert.equal(c.path, '/', name);
  }
}

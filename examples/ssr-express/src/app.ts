import { createTesseraSsr, type SsrOptions } from '@tessera/ssr';
import { requireSession, tesseraSsr } from '@tessera/ssr/express';
import express, { type Express, type Request } from 'express';

/** Escapes text for HTML (every value a page shows goes through it). */
const esc = (value: unknown) => String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)} — Tessera SSR example</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main>${body}</main></body></html>`;

const csrfField = (req: Request) =>
  `<input type="hidden" name="csrf_token" value="${esc(req.tesseraCsrfToken)}">`;

const errorNote = (req: Request) =>
  typeof req.query.error === 'string'
    ? `<p role="alert" data-testid="error">Error: ${esc(req.query.error)}</p>`
    : '';

/**
 * The example app: pages rendered on the server, sign-in by OTP through plain HTML forms posted to
 * `@tessera/ssr`'s auth routes (no JavaScript needed), a protected page, logout.
 */
export function createApp(options: SsrOptions): Express {
  const tessera = createTesseraSsr(options);
  const app = express();
  app.disable('x-powered-by');
  app.use(tesseraSsr(tessera));

  app.get('/', (req, res) => {
    const session = req.tesseraSession;
    res.send(
      page(
        'Home',
        session
          ? `<p data-testid="signed-in">Signed in as ${esc(session.user.identifier)}.</p><p><a href="/account">Account</a></p>`
          : `<p data-testid="signed-out">You are signed out.</p><p><a href="/signin">Sign in</a></p>`,
      ),
    );
  });

  app.get('/signin', (req, res) => {
    res.send(
      page(
        'Sign in',
        `<h1>Sign in</h1>${errorNote(req)}
<form method="post" action="/auth/otp/start">${csrfField(req)}
<input type="hidden" name="redirect_to" value="/signin/code">
<input type="hidden" name="error_to" value="/signin">
<label>E-mail or phone <input name="identifier" autocomplete="username" required></label>
<button type="submit">Send me a code</button></form>`,
      ),
    );
  });

  app.get('/signin/code', (req, res) => {
    const challenge = typeof req.query.challenge_id === 'string' ? req.query.challenge_id : '';
    res.send(
      page(
        'Enter your code',
        `<h1>Enter your code</h1>${errorNote(req)}
<form method="post" action="/auth/otp/complete">${csrfField(req)}
<input type="hidden" name="challenge_id" value="${esc(challenge)}">
<input type="hidden" name="redirect_to" value="/account">
<input type="hidden" name="error_to" value="/signin/code">
<label>Code <input name="code" inputmode="numeric" autocomplete="one-time-code" required></label>
<button type="submit">Sign in</button></form>
<p><a href="/signin">Use another address or get a new code</a></p>`,
      ),
    );
  });

  app.get('/account', requireSession('/signin'), (req, res) => {
    const { user, expiresAt } = req.tesseraSession!;
    res.send(
      page(
        'Account',
        `<h1>Account</h1>
<dl><dt>Identifier</dt><dd data-testid="identifier">${esc(user.identifier)}</dd>
<dt>User id</dt><dd data-testid="user-id">${esc(user.id)}</dd>
<dt>Signed in with</dt><dd data-testid="method">${esc(user.authMethod)}</dd>
<dt>Access token valid until</dt><dd data-testid="expires">${esc(new Date(expiresAt).toISOString())}</dd></dl>
<form method="post" action="/auth/logout">${csrfField(req)}<input type="hidden" name="redirect_to" value="/">
<button type="submit">Sign out</button></form>`,
      ),
    );
  });

  return app;
}

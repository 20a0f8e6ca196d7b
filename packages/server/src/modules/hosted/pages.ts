import { fill, type Locale, type Messages, messages } from './messages.js';

/** HTML-escapes a text or attribute value. */
export const esc = (value: string): string =>
  value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/**
 * The hosted pages' Content-Security-Policy: nothing from another origin, no inline script or
 * style, never framed (clickjacking), forms only to Tessera itself (and, for a form_post answer,
 * to the client's redirect URI's origin).
 */
export function contentSecurityPolicy(formTarget?: string, element = false): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    // <tessera-sign-in> styles its shadow root with <style> elements: the one inline allowance,
    // for styles only, and only on the page that renders it. Scripts stay same-origin files.
    element ? "style-src 'self' 'unsafe-inline'" : "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    `form-action 'self'${formTarget ? ` ${formTarget}` : ''}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** Headers every hosted page carries. */
export function pageHeaders(formTarget?: string, element = false): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': contentSecurityPolicy(formTarget, element),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

/** What every page shows of the project and client (per-project branding: its name). */
export interface Branding {
  project: string;
  client: string;
  /** The project's colours, as a stylesheet of Tessera's (`brandCss`). */
  css?: string;
}

/** The stylesheet of a project's button colours (each `#rrggbb`, checked when it was set). */
export function brandCss(light: string | undefined, dark: string | undefined): string {
  const valid = (c: string | undefined) => (c && /^#[0-9a-fA-F]{6}$/.test(c) ? c : undefined);
  const l = valid(light);
  const d = valid(dark);
  return `${l ? `:root{--accent:${l}}\n` : ''}${d ? `@media (prefers-color-scheme:dark){:root{--accent:${d}}}\n` : ''}`;
}

/** A page: `script` a classic deferred script, `modules` module scripts, `css` the project's colours. */
function shell(
  locale: Locale,
  title: string,
  body: string,
  { script, modules = [], css }: { script?: string; modules?: string[]; css?: string } = {},
): string {
  return `<!doctype html>
<html lang="${locale}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(title)}</title>
<link rel="stylesheet" href="/oauth/assets/hosted.css">
${css ? `<link rel="stylesheet" href="${esc(css)}">` : ''}
${script ? `<script src="${script}" defer></script>` : ''}
${modules.map((src) => `<script type="module" src="${src}"></script>`).join('\n')}
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

const hidden = (fields: Record<string, string>) =>
  Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`)
    .join('\n');

/** What the page needs to render `<tessera-sign-in>` in place of its form (when the bundle is built). */
export interface ElementMount {
  issuer: string;
  apiKeyId: string;
}

/**
 * The identifier step. With `element`, the page's script replaces the form with
 * `<tessera-sign-in>` (code, passkey, trusted device, PIN) and hands its result over; without
 * JavaScript the form signs in by code.
 */
export function identifierPage(
  locale: Locale,
  brand: Branding,
  form: Record<string, string>,
  loginHint: string | undefined,
  error?: string,
  element?: ElementMount,
): string {
  const t = messages(locale);
  const mount = element
    ? ` data-issuer="${esc(element.issuer)}" data-api-key-id="${esc(element.apiKeyId)}" data-locale="${locale}"`
    : '';
  const handover = element
    ? `<form id="handover" method="post" action="/oauth/authorize/continue" hidden>
${hidden({ request_id: form.request_id ?? '', csrf: form.csrf ?? '' })}
<input type="hidden" name="access_token" value="">
</form>`
    : '';
  return shell(
    locale,
    fill(t.signInTo, { client: brand.client }),
    `<h1>${esc(fill(t.signInTo, { client: brand.client }))}</h1>
<p class="via">${esc(fill(t.via, { project: brand.project }))}</p>
<div id="tessera-sign-in"${mount}>
<form method="post" action="/oauth/sign-in/start">
${hidden(form)}
<label for="identifier">${esc(t.identifier)}</label>
<input id="identifier" name="identifier" type="text" inputmode="email" autocomplete="username" required maxlength="320" value="${esc(loginHint ?? '')}"${error ? ' aria-describedby="error" aria-invalid="true"' : ''} autofocus>
${error ? `<p id="error" role="alert" class="error">${esc(error)}</p>` : ''}
<button type="submit">${esc(t.sendCode)}</button>
</form>
</div>
${handover}`,
    { modules: element ? ['/oauth/assets/sign-in.js', '/oauth/assets/hosted.js'] : [], css: brand.css },
  );
}

/** The code step. */
export function codePage(
  locale: Locale,
  brand: Branding,
  form: Record<string, string>,
  to: string,
  error?: string,
): string {
  const t = messages(locale);
  return shell(
    locale,
    fill(t.signInTo, { client: brand.client }),
    `<h1>${esc(fill(t.signInTo, { client: brand.client }))}</h1>
<p class="via">${esc(fill(t.codeSentTo, { to }))}</p>
<form method="post" action="/oauth/sign-in/complete">
${hidden(form)}
<label for="code">${esc(t.code)}</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]*" required maxlength="32"${error ? ' aria-describedby="error" aria-invalid="true"' : ''} autofocus>
${error ? `<p id="error" role="alert" class="error">${esc(error)}</p>` : ''}
<button type="submit">${esc(t.signIn)}</button>
</form>
<form method="get" action="/oauth/sign-in">
<input type="hidden" name="request_id" value="${esc(form.request_id ?? '')}">
<button type="submit" class="secondary">${esc(t.useAnother)}</button>
</form>`,
    { css: brand.css },
  );
}

/** The consent screen of a third-party client. */
export function consentPage(
  locale: Locale,
  brand: Branding,
  form: Record<string, string>,
  redirectHost: string,
  scopes: readonly string[],
  /** A Client ID Metadata Document's client: the host of its client id URL, which vouches for it. */
  publisherHost?: string,
): string {
  const t = messages(locale);
  const title = fill(t.consentTitle, { client: brand.client });
  const items = scopes
    .map((s) => `<li>${esc((t as Record<string, string>)[`scope_${s}`] ?? s)}</li>`)
    .join('\n');
  return shell(
    locale,
    title,
    `<h1>${esc(title)}</h1>
<p class="via">${esc(fill(t.via, { project: brand.project }))}</p>
<p>${esc(t.consentAsks)}</p>
<ul>
${items}
</ul>
<p>${esc(fill(t.consentHost, { host: redirectHost }))}</p>
${publisherHost ? `<p class="publisher">${esc(fill(t.consentPublisher, { host: publisherHost }))}</p>\n` : ''}<form method="post" action="/oauth/consent">
${hidden(form)}
<button type="submit" name="decision" value="allow">${esc(t.allow)}</button>
<button type="submit" name="decision" value="deny" class="secondary">${esc(t.deny)}</button>
</form>`,
    { css: brand.css },
  );
}

/** Tessera's own error page: shown where redirecting could send a user to an attacker. */
export function errorPage(locale: Locale, description: string): string {
  const t: Messages = messages(locale);
  return shell(
    locale,
    t.errorTitle,
    `<h1>${esc(t.errorTitle)}</h1>
<p role="alert">${esc(description)}</p>
<p>${esc(t.errorBack)}</p>`,
  );
}

/** A plain notice (signed out). */
export function noticePage(locale: Locale, text: string): string {
  return shell(locale, text, `<h1>${esc(text)}</h1>`);
}

/** response_mode=form_post (OAuth 2.0 Form Post Response Mode): a form the page's script submits. */
export function formPostPage(locale: Locale, action: string, fields: Record<string, string>): string {
  const t = messages(locale);
  return shell(
    locale,
    t.redirecting,
    `<h1>${esc(t.redirecting)}</h1>
<form method="post" action="${esc(action)}" id="form-post">
${hidden(fields)}
<button type="submit">${esc(t.continue)}</button>
</form>`,
    { script: '/oauth/assets/form-post.js' },
  );
}

export const HOSTED_CSS = `:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--accent:#0b5cad;--muted:#4a535c;--err:#a4161a}
@media (prefers-color-scheme:dark){:root{--fg:#e8eaed;--bg:#15181c;--accent:#8ab4f8;--muted:#b4bac1;--err:#ffb4ab}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:26rem;margin:0 auto;padding:2rem 1rem}
h1{font-size:1.5rem;line-height:1.25}
.via{color:var(--muted)}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input[type=text]{width:100%;min-height:44px;padding:.5rem;font:inherit;color:inherit;background:transparent;border:1px solid var(--muted);border-radius:6px}
button{min-height:44px;min-width:44px;margin:1rem .5rem 0 0;padding:.5rem 1rem;font:inherit;border-radius:6px;border:2px solid var(--accent);background:var(--accent);color:var(--bg);cursor:pointer}
button.secondary{background:transparent;color:var(--accent)}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.error{color:var(--err)}
@media (prefers-reduced-motion:reduce){*{transition:none!important}}
`;

export const FORM_POST_JS = `document.getElementById('form-post').submit();\n`;

import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Where `npm run build` puts the sign-in element's browser bundle (scripts/bundle-hosted.mjs). */
const BUNDLE = fileURLToPath(new URL('../../../dist/hosted/sign-in.js', import.meta.url));

/**
 * The `<tessera-sign-in>` bundle (packages/ui with @tessera/client), read once; undefined when it
 * was not built: the hosted pages then sign in by code with their server-rendered forms alone.
 */
export function signInBundle(path = BUNDLE): string | undefined {
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

/**
 * The hosted sign-in page's own script: replaces the server-rendered form with the element and,
 * once it has signed the user in, hands the access token to /oauth/authorize/continue through
 * the page's hand-over form (same origin, with the form's CSRF token).
 */
export const HOSTED_JS = `const mount = document.getElementById('tessera-sign-in');
const handover = document.getElementById('handover');
if (mount && handover && customElements.get('tessera-sign-in')) {
  const element = document.createElement('tessera-sign-in');
  for (const name of ['issuer', 'api-key-id', 'locale']) element.setAttribute(name, mount.dataset[name.replace(/-(\\w)/g, (_, c) => c.toUpperCase())] ?? '');
  element.setAttribute('storage', 'memory');
  element.addEventListener('signed-in', (event) => {
    const token = event.detail && event.detail.accessToken;
    if (!token) return;
    handover.elements.namedItem('access_token').value = token;
    handover.submit();
  });
  mount.replaceChildren(element);
}
`;

import { createTesseraClient, isTesseraClientError } from './tessera-client.js';

const $ = (id) => document.getElementById(id);
const config = await fetch('/demo/config.json')
  .then((r) => (r.ok ? r.json() : {}))
  .catch(() => ({}));
// The page is served by the service itself, so its own origin is the API's (no CORS needed).
const issuer = location.origin;
const sampleApi = config.sample_api ?? 'http://127.0.0.1:3001';
if (config.api_key_id && !$('apiKeyId').value) $('apiKeyId').value = config.api_key_id;

let client = null;
let renewals = 0;
const signIn = $('signIn');

function status(text, kind = '') {
  $('status').textContent = text;
  $('status').className = kind;
}

function log(text) {
  const item = document.createElement('li');
  item.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  $('log').prepend(item);
}

function explain(error) {
  if (isTesseraClientError(error)) return `${error.detail} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}

/** Runs an action (a click, or a form's submit) with its button disabled and errors shown. */
function action(id, fn) {
  const element = $(id);
  const button = element.tagName === 'FORM' ? element.querySelector('button') : element;
  element.addEventListener(element.tagName === 'FORM' ? 'submit' : 'click', async (event) => {
    event.preventDefault();
    button.disabled = true;
    try {
      await fn();
    } catch (error) {
      status(explain(error), 'error');
    } finally {
      button.disabled = false;
    }
  });
}

const el = (tag, text, attributes = {}) => {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
  return node;
};

/** A definition list from [term, value, testid?] rows. */
function fill(list, rows) {
  list.replaceChildren(
    ...rows.flatMap(([k, v, testid]) => {
      const dd = el('dd', v ?? '—');
      if (testid) dd.dataset.testid = testid;
      return [el('dt', k), dd];
    }),
  );
}

/**
 * Why a call to the sample backend failed: a browser reports a refused CORS check and a server
 * that is not there alike (a TypeError). A request the page cannot read (`no-cors`) still tells
 * them apart: it succeeds when the backend answered.
 */
async function unreachable(api) {
  const answered = await fetch(`${api}/api/greeting`, { mode: 'no-cors' }).then(
    () => true,
    () => false,
  );
  return answered
    ? `The sample backend at ${api} answered but refused this page's origin (CORS): start it with ALLOWED_ORIGIN=${location.origin}.`
    : `The sample backend is not running at ${api} (npm start -w examples/express-api).`;
}

const time = (iso) => (iso ? new Date(iso).toLocaleString() : 'never');

/** The payload of a JWT, decoded here WITHOUT checking its signature: for display only. */
function decode(jwt) {
  try {
    const part = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const bytes = Uint8Array.from(atob(part), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

function showClaims(claims) {
  fill($('claims'), [
    ['identifier', claims.identifier, 'claim-identifier'],
    ['method', claims.authentication_method, 'claim-method'],
    ['user', claims.sub, 'claim-user'],
    ['session', claims.sid, 'claim-session'],
    ['expires', new Date(claims.exp * 1000).toLocaleTimeString(), 'claim-expires'],
  ]);
}

async function showTokens() {
  const [access, id] = await Promise.all([client.getAccessToken(), client.getIdToken()]);
  $('accessClaims').textContent = access ? JSON.stringify(decode(access), null, 2) : '';
  $('idClaims').textContent = id ? JSON.stringify(decode(id), null, 2) : '';
}

/** Lists the SDK's localStorage entries, values shortened: they are ciphertext, never tokens. */
function showStored() {
  const rows = [];
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (key?.startsWith('tessera.')) rows.push([key, localStorage.getItem(key) ?? '']);
  }
  rows.sort(([a], [b]) => a.localeCompare(b));
  fill(
    $('stored'),
    rows.length === 0
      ? [['', 'nothing']]
      : rows.map(([k, v]) => [k, v.length > 48 ? `${v.slice(0, 48)}…` : v]),
  );
}

/** An item of a list with a remove button. */
function item(label, detail, onRemove, testid) {
  const li = el('li');
  li.dataset.testid = testid;
  const text = el('span');
  text.append(el('strong', label), el('span', ` · ${detail}`, { class: 'muted' }));
  const remove = el('button', 'Remove', {
    type: 'button',
    class: 'secondary small',
    'data-testid': `${testid}-remove`,
  });
  remove.addEventListener('click', async () => {
    remove.disabled = true;
    try {
      await onRemove();
      // Removing what started this session ends it: the SDK then reports the sign-out.
      await showSetup().catch(() => {});
    } catch (error) {
      status(explain(error), 'error');
      remove.disabled = false;
    }
  });
  li.append(text, remove);
  return li;
}

/** What is set up for faster sign-in: this device, the PIN, the passkeys (from the service). */
async function showSetup() {
  const [devices, thisDevice, pin, passkeys] = await Promise.all([
    client.devices.list(),
    client.devices.currentId(),
    client.pin.status(),
    client.passkeys.list(),
  ]);
  const trusted = devices.some((d) => d.deviceId === thisDevice);
  $('deviceState').textContent = trusted ? 'trusted' : 'not trusted';
  $('deviceState').className = `badge ${trusted ? 'on' : ''}`;
  $('registerDevice').hidden = trusted;
  $('devices').replaceChildren(
    ...devices.map((d) =>
      item(
        d.deviceId === thisDevice ? `${d.name} (this browser)` : d.name,
        `added ${time(d.createdAt)}, last used ${time(d.lastUsedAt)}`,
        async () => {
          await client.devices.remove(d.deviceId);
          status(`Device ${d.name} removed.`, 'ok');
        },
        'device',
      ),
    ),
  );
  $('pinState').textContent = pin.locked ? 'locked' : pin.pinSet ? 'set' : 'not set';
  $('pinState').className = `badge ${pin.pinSet && !pin.locked ? 'on' : ''}`;
  $('setPin').textContent = pin.pinSet ? 'Change PIN' : 'Set PIN';
  $('pinNeedsDevice').hidden = trusted;
  $('passkeyState').textContent = passkeys.length === 0 ? 'none' : `${passkeys.length}`;
  $('passkeyState').className = `badge ${passkeys.length > 0 ? 'on' : ''}`;
  $('passkeys').replaceChildren(
    ...passkeys.map((p) =>
      item(
        p.name,
        `${p.backedUp ? 'synced' : 'this authenticator only'}, last used ${time(p.lastUsedAt)}`,
        async () => {
          await client.passkeys.remove(p.passkeyId);
          status(`Passkey ${p.name} removed.`, 'ok');
        },
        'passkey',
      ),
    ),
  );
}

async function showUser() {
  const user = await client.getUser();
  if (!user) return;
  fill($('user'), [
    ['identifier', user.identifier, 'user-identifier'],
    ['type', user.identifierType],
    ['user id', user.userId],
    ['your id', user.clientUserId],
  ]);
}

/** Shows the signed-in or signed-out state; `full` also asks the service what is set up. */
async function render(claims, full) {
  $('signedIn').hidden = !claims;
  $('signedOut').hidden = Boolean(claims);
  showStored();
  if (claims) {
    showClaims(claims);
    if (full)
      await Promise.all([showSetup(), showUser(), showTokens()]).catch((e) => status(explain(e), 'error'));
    return;
  }
  // Signed out: the element starts over (a trusted device, the PIN, or the identifier).
  signIn.reset();
}

function connect() {
  const apiKeyId = $('apiKeyId').value.trim();
  if (!apiKeyId) return;
  client?.close();
  client = createTesseraClient({ issuer, apiKeyId });
  signIn.client = client;
  // initialSession first (what storage holds at load), then every change, from any tab.
  client.onAuthStateChange(async (event) => {
    if (event.type === 'refreshed') $('renewals').textContent = String(++renewals);
    log(event.claims ? `${event.type} (${event.claims.authentication_method})` : `${event.type}: signed out`);
    await render(event.claims, event.type !== 'refreshed');
  });
}
$('apiKeyId').addEventListener('change', connect);
const autofillAttribute = () =>
  $('autofillOn').checked ? signIn.removeAttribute('autofill') : signIn.setAttribute('autofill', 'off');
$('autofillOn').addEventListener('change', autofillAttribute);
autofillAttribute();

// What the element does, in the page's status line and event log.
const SIGNED_IN = {
  OTP: 'Signed in with a one-time code.',
  'TRUSTED DEVICE': 'Signed in with this trusted device.',
  PIN: 'Signed in with the device and the PIN.',
  BIOMETRIC: 'Signed in with a passkey.',
};
signIn.addEventListener('step', (event) => {
  if (event.detail.step === 'code') status('Code sent; see the development outbox.', 'ok');
});
signIn.addEventListener('signed-in', (event) =>
  status(SIGNED_IN[event.detail.authMethod] ?? 'Signed in.', 'ok'),
);
// The element shows the message; the page adds the code and the SDK's detail, for developers.
signIn.addEventListener('error', (event) => {
  const { message, code, detail } = event.detail;
  status(`${message} (${code}: ${detail})`, 'error');
});
connect();
// The current client, for the browser console and the end-to-end tests.
globalThis.tesseraDemo = {
  get client() {
    return client;
  },
};

// Keep the session warm: asking for the token is what renews it when it is about to expire.
setInterval(async () => {
  showStored();
  if (client && $('keepWarm').checked && (await client.isSignedIn()))
    await client.getAccessToken().catch(() => {});
}, 2000);

action('verifyBtn', async () => {
  const answer = await client.verify();
  status(
    answer.success ? 'POST /verify: the access token is valid.' : `POST /verify: ${answer.reason}`,
    answer.success ? 'ok' : 'error',
  );
});

action('apiBtn', async () => {
  const response = await client.fetch(`${sampleApi}/api/greeting`).catch(() => null);
  if (!response) {
    status(await unreachable(sampleApi), 'error');
    return;
  }
  const body = await response.json().catch(() => ({}));
  status(
    response.ok ? body.message : `The backend answered ${response.status}.`,
    response.ok ? 'ok' : 'error',
  );
});

action('logoutBtn', async () => {
  const { revoked } = await client.logout();
  status(revoked ? 'Signed out; the session is revoked and the tokens are gone.' : 'Signed out locally.');
});

action('logoutOthers', async () => {
  const { revoked, sessionsRevoked } = await client.logout({ scope: 'others' });
  status(
    revoked
      ? `Signed out on the other devices (${sessionsRevoked} sessions ended); still signed in here.`
      : 'The service could not be reached.',
    revoked ? 'ok' : 'error',
  );
});

action('logoutGlobal', async () => {
  const { revoked, sessionsRevoked } = await client.logout({ scope: 'global' });
  status(
    revoked
      ? `Signed out everywhere (${sessionsRevoked} sessions ended).`
      : 'Signed out here; the service could not be reached to sign out the other devices.',
  );
});

action('registerDevice', async () => {
  // register() returns the existing registration when this browser is already trusted.
  const device = await client.devices.register('Demo browser');
  status(`This browser is a trusted device (${device.deviceId}).`, 'ok');
  await showSetup();
});

action('pinForm', async () => {
  await client.pin.set($('pinValue').value.trim());
  $('pinValue').value = '';
  status('PIN set. Sign out, then sign in with the device and the PIN.', 'ok');
  await showSetup();
});

action('registerPasskey', async () => {
  const passkey = await client.passkeys.register('Demo passkey');
  status(`Passkey added (${passkey.name}).`, 'ok');
  await showSetup();
});

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
let challengeId = null;
/** Cancels the passkey offer in the identifier's autofill (conditional UI) once signed in. */
let autofill = null;

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

/** Offers passkeys in the identifier's autofill while signed out, where the browser can. */
async function offerAutofill() {
  if (autofill || !$('autofillOn').checked || !(await client.passkeys.browserSupportsAutofill())) return;
  $('autofillHint').hidden = false;
  const controller = new AbortController();
  autofill = controller;
  try {
    await client.passkeys.signInWithAutofill({ signal: controller.signal });
    status('Signed in with a passkey from the autofill.', 'ok');
  } catch (error) {
    // Cancelled: signed in another way, or a modal passkey prompt took over.
    if (!isTesseraClientError(error, 'webauthn_cancelled')) status(explain(error), 'error');
  } finally {
    if (autofill === controller) autofill = null;
  }
}

/** Shows the signed-in or signed-out state; `full` also asks the service what is set up. */
async function render(claims, full) {
  $('signedIn').hidden = !claims;
  $('signedOut').hidden = Boolean(claims);
  showStored();
  if (claims) {
    autofill?.abort();
    showClaims(claims);
    if (full)
      await Promise.all([showSetup(), showUser(), showTokens()]).catch((e) => status(explain(e), 'error'));
    return;
  }
  const deviceId = await client.devices.currentId();
  $('deviceSignIn').hidden = !deviceId;
  $('pinRow').hidden = !deviceId;
  void offerAutofill();
}

function connect() {
  const apiKeyId = $('apiKeyId').value.trim();
  if (!apiKeyId) return;
  autofill?.abort();
  client?.close();
  client = createTesseraClient({ issuer, apiKeyId });
  // initialSession first (what storage holds at load), then every change, from any tab.
  client.onAuthStateChange(async (event) => {
    if (event.type === 'refreshed') $('renewals').textContent = String(++renewals);
    log(event.claims ? `${event.type} (${event.claims.authentication_method})` : `${event.type}: signed out`);
    await render(event.claims, event.type !== 'refreshed');
  });
}
$('apiKeyId').addEventListener('change', connect);
$('autofillOn').addEventListener('change', async () => {
  if (!$('autofillOn').checked) autofill?.abort();
  else if (client && !(await client.isSignedIn())) void offerAutofill();
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

$('otpStart').addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    const started = await client.otp.start($('identifier').value);
    challengeId = started.challengeId;
    $('otpComplete').hidden = false;
    $('code').focus();
    status(`Code sent by ${started.channel}; see the development outbox.`, 'ok');
  } catch (error) {
    status(explain(error), 'error');
  }
});

$('otpComplete').addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    await client.otp.complete(challengeId, $('code').value.trim());
    $('otpComplete').hidden = true;
    $('code').value = '';
    status('Signed in with a one-time code.', 'ok');
  } catch (error) {
    status(explain(error), 'error');
  }
});

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
    status(`The sample backend is not running at ${sampleApi} (npm start -w examples/express-api).`, 'error');
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

action('deviceSignIn', async () => {
  await client.devices.signIn();
  status('Signed in with this trusted device.', 'ok');
});

action('pinRow', async () => {
  await client.pin.signIn($('pinSignInValue').value.trim());
  $('pinSignInValue').value = '';
  status('Signed in with the device and the PIN.', 'ok');
});

action('passkeySignIn', async () => {
  await client.passkeys.signIn();
  status('Signed in with a passkey.', 'ok');
});

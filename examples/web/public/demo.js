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

/** Runs an action with its button disabled and errors shown. */
function action(button, fn) {
  $(button).addEventListener('click', async (event) => {
    event.preventDefault();
    $(button).disabled = true;
    try {
      await fn();
    } catch (error) {
      status(explain(error), 'error');
    } finally {
      $(button).disabled = false;
    }
  });
}

function showClaims(claims) {
  const rows = [
    ['identifier', claims.identifier],
    ['method', claims.authentication_method],
    ['user', claims.sub],
    ['session', claims.sid],
    ['expires', new Date(claims.exp * 1000).toLocaleTimeString()],
  ];
  $('claims').replaceChildren(
    ...rows.flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      dd.dataset.testid = `claim-${k}`;
      return [dt, dd];
    }),
  );
}

/** Lists the SDK's localStorage entries, values shortened: they are ciphertext, never tokens. */
function showStored() {
  const rows = [];
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (key?.startsWith('tessera.')) rows.push([key, localStorage.getItem(key) ?? '']);
  }
  rows.sort(([a], [b]) => a.localeCompare(b));
  const empty = document.createElement('dd');
  empty.textContent = 'nothing';
  $('stored').replaceChildren(
    ...(rows.length === 0
      ? [empty]
      : rows.flatMap(([k, v]) => {
          const dt = document.createElement('dt');
          dt.textContent = k;
          const dd = document.createElement('dd');
          dd.textContent = v.length > 48 ? `${v.slice(0, 48)}…` : v;
          return [dt, dd];
        })),
  );
}

async function render() {
  const claims = await client.getClaims();
  $('signedIn').hidden = !claims;
  $('signedOut').hidden = Boolean(claims);
  if (claims) showClaims(claims);
  const deviceId = await client.devices.currentId();
  $('deviceSignIn').hidden = !deviceId;
  $('pinRow').hidden = !deviceId;
  showStored();
}

function connect() {
  const apiKeyId = $('apiKeyId').value.trim();
  if (!apiKeyId) return;
  client?.close();
  client = createTesseraClient({ issuer, apiKeyId });
  client.onAuthStateChange(async (event) => {
    if (event.type === 'refreshed') $('renewals').textContent = String(++renewals);
    log(event.type === 'signedOut' ? 'signed out' : `${event.type} (${event.claims?.authentication_method})`);
    await render();
  });
  render();
}
$('apiKeyId').addEventListener('change', connect);
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
  if (client && $('keepWarm').checked && (await client.isSignedIn())) {
    await client.getAccessToken().catch(() => {});
    await render();
  }
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

action('registerDevice', async () => {
  const device = await client.devices.register('Demo browser');
  status(`This browser is now a trusted device (${device.deviceId}).`, 'ok');
  await render();
});

action('setPin', async () => {
  await client.pin.set($('pinValue').value.trim());
  $('pinValue').value = '';
  status('PIN set. Sign out, then sign in with the device and the PIN.', 'ok');
});

action('registerPasskey', async () => {
  const passkey = await client.passkeys.register('Demo passkey');
  status(`Passkey added (${passkey.name}).`, 'ok');
});

action('deviceSignIn', async () => {
  await client.devices.signIn();
  status('Signed in with this trusted device.', 'ok');
});

action('pinSignIn', async () => {
  await client.pin.signIn($('pinSignInValue').value.trim());
  $('pinSignInValue').value = '';
  status('Signed in with the device and the PIN.', 'ok');
});

action('passkeySignIn', async () => {
  await client.passkeys.signIn();
  status('Signed in with a passkey.', 'ok');
});

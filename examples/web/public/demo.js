// The demo keeps tokens in memory only; the client SDK (packages/client) stores them protected.
const $ = (id) => document.getElementById(id);
let bundle = null;
let challengeId = null;

function status(text, kind = '') {
  $('status').textContent = text;
  $('status').className = kind;
}

async function call(path, body, headers = {}) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', API_KEY_ID: $('apiKeyId').value.trim(), ...headers },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok)
    throw new Error(data.detail || data.error_description || data.reason || `HTTP ${response.status}`);
  return data;
}

function claims(jwt) {
  const part = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
  return JSON.parse(atob(part));
}

function show() {
  const c = claims(bundle.access_token);
  const rows = [
    ['identifier', c.identifier],
    ['method', bundle.auth_method],
    ['user', c.sub],
    ['session', c.sid],
    ['expires', new Date(c.exp * 1000).toLocaleTimeString()],
  ];
  $('claims').replaceChildren(
    ...rows.flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      return [dt, dd];
    }),
  );
  $('session').hidden = false;
}

$('startForm').addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    const started = await call('/v1/auth/otp/start', { identifier: $('identifier').value });
    challengeId = started.challenge_id;
    $('completeForm').hidden = false;
    $('outboxHint').innerHTML =
      'Development mode: find the code in <a href="/dev/outbox" target="_blank">/dev/outbox</a>.';
    $('code').focus();
    status(`Code sent by ${started.channel}.`, 'ok');
  } catch (error) {
    status(error.message, 'error');
  }
});

$('completeForm').addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    const done = await call('/v1/auth/otp/complete', {
      challenge_id: challengeId,
      code: $('code').value.trim(),
      getOAuthToken: true,
    });
    bundle = done.oauth_token;
    $('completeForm').hidden = true;
    show();
    status('Signed in.', 'ok');
  } catch (error) {
    status(error.message, 'error');
  }
});

$('verifyBtn').addEventListener('click', async () => {
  const answer = await call('/verify', { oauth_token: bundle });
  status(
    answer.success ? 'The access token is valid.' : `Not valid: ${answer.reason}`,
    answer.success ? 'ok' : 'error',
  );
});

$('refreshBtn').addEventListener('click', async () => {
  try {
    bundle = await call('/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: bundle.refresh_token,
      client_id: $('apiKeyId').value.trim(),
    });
    show();
    status('Tokens renewed; the old refresh token is now spent.', 'ok');
  } catch (error) {
    status(error.message, 'error');
  }
});

$('logoutBtn').addEventListener('click', async () => {
  await call('/oauth/revoke', { token: bundle.refresh_token, client_id: $('apiKeyId').value.trim() }).catch(
    () => {},
  );
  bundle = null;
  $('session').hidden = true;
  status('Signed out; the session is revoked.');
});

fetch('/demo/config.json')
  .then((r) => (r.ok ? r.json() : {}))
  .then((config) => {
    if (config.api_key_id && !$('apiKeyId').value) $('apiKeyId').value = config.api_key_id;
  })
  .catch(() => {});

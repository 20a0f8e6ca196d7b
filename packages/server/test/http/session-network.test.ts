/**
 * The network each session was started from (issue 33): every sign-in method stores its client's
 * network widened to an IPv4 /24 or IPv6 /48 (`sessionNetwork`), and the integrator's sessions
 * listing shows it. An OAuth client's session shows the network of the browser that signed in at
 * the hosted page, not that of the client's backend exchanging the code.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OAuthTokenBundle } from '@tessera/core';
import { decodeJwt } from 'jose';
import {
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import { Browser, codeFlowTokens, registerClient } from '../helpers/oidc.js';
import {
  deviceSignIn,
  otpUser,
  passkeySignIn,
  registerDevice,
  registerPasskey,
  setPin,
} from '../helpers/sign-in-methods.js';

const sid = (token: string) => decodeJwt(token).sid as string;

eachDialect('the network a session was started from', (dialect) => {
  let server: TestServer;

  before(async () => {
    // Behind one trusted proxy: X-Forwarded-For names the client (docs/CONFIGURATION.md).
    server = await startServer(dialect, { env: { ...RELAXED_LIMITS, TESSERA_TRUST_PROXY: '1' } });
  });
  after(() => server.close());

  const sessionsOf = async (userId: string) => {
    const listed = await server.request('GET', `/v1/users/${userId}/sessions`, {
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(listed.status, 200, listed.text);
    return new Map(
      (listed.body.sessions as Array<{ session_id: string; ip_network: string | null }>).map((s) => [
        s.session_id,
        s.ip_network,
      ]),
    );
  };

  /** An OTP sign-in whose two requests come from `ip` (through the trusted proxy). */
  const otpFrom = async (email: string, ip: string): Promise<OAuthTokenBundle> => {
    const headers = { api_key_id: server.project.api_key_id, 'x-forwarded-for': ip };
    const started = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: email },
      headers,
    });
    assert.equal(started.status, 200, started.text);
    const done = await server.request('POST', '/v1/auth/otp/complete', {
      body: { challenge_id: started.body.challenge_id, code: server.lastCode(email), getOAuthToken: true },
      headers,
    });
    assert.equal(done.status, 200, done.text);
    return done.body.oauth_token;
  };

  test('OTP, trusted device, PIN and passkey sessions show their network, never the address', async () => {
    const user = await otpUser(server, uniqueEmail('network'));
    const device = await registerDevice(server, user);
    await setPin(server, user, '482913');
    const authenticator = await registerPasskey(server, user);
    const byDevice = await deviceSignIn(server, device);
    const byPin = await deviceSignIn(server, device, { pin: '482913' });
    const byPasskey = await passkeySignIn(server, authenticator);
    for (const answer of [byDevice, byPin, byPasskey]) assert.equal(answer.status, 200, answer.text);
    const fromV4 = await otpFrom(user.email, '198.51.100.73');
    const fromV6 = await otpFrom(user.email, '2001:db8:77:4a1:9::3');

    const networks = await sessionsOf(user.userId);
    assert.equal(networks.size, 6);
    for (const bundle of [
      user.bundle,
      byDevice.body.oauth_token,
      byPin.body.oauth_token,
      byPasskey.body.oauth_token,
    ])
      assert.equal(networks.get(sid(bundle.access_token)), '127.0.0.0/24');
    assert.equal(networks.get(sid(fromV4.access_token)), '198.51.100.0/24');
    assert.equal(networks.get(sid(fromV6.access_token)), '2001:db8:77::/48');
  });

  test('a client’s session shows the network of the browser that signed in, not the backend’s', async () => {
    const redirectUri = 'https://app.example/callback';
    const { client_id } = await registerClient(server, {
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const email = uniqueEmail('network-client');
    // The browser comes through the proxy from 203.0.113.9; the code exchange from loopback.
    const browser = new Browser(server.url, { 'x-forwarded-for': '203.0.113.9' });
    const tokens = await codeFlowTokens(server, browser, { clientId: client_id, redirectUri, email });
    const userId = decodeJwt(tokens.access_token).sub as string;
    const networks = await sessionsOf(userId);
    assert.equal(networks.get(sid(tokens.access_token)), '203.0.113.0/24');
  });

  test('an address that is no IP address leaves the network unknown (null), and the sign-in works', async () => {
    const email = uniqueEmail('network-unknown');
    const bundle = await otpFrom(email, 'unknown');
    const networks = await sessionsOf(decodeJwt(bundle.access_token).sub as string);
    assert.equal(networks.get(sid(bundle.access_token)), null);
  });
});

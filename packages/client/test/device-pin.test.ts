import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { memoryKeyStore, TesseraClientError } from '@tessera/client';
import { codeOf, type Setup, setup } from './helpers/setup.js';

describe('trusted device and PIN (WebCrypto in Node)', () => {
  let s: Setup;
  before(async () => {
    s = await setup({ env: { TESSERA_OTP_RESEND_INTERVAL: '0' } });
  });
  after(() => s.close());

  it('registers a device with a non-extractable key, then signs in with it', async () => {
    const keyStore = memoryKeyStore();
    const client = s.client({ keyStore });
    await s.signIn(client, 'device@example.com');
    const userId = (await client.getClaims())?.sub;
    const device = await client.devices.register('Laptop');
    assert.equal(device.name, 'Laptop');
    assert.match(device.deviceId, /.+/);
    assert.equal(await client.devices.currentId(), device.deviceId);
    const keyPair = await keyStore.get(`tessera.${s.server.project.api_key_id}.device-key`);
    assert.ok(keyPair && 'privateKey' in keyPair);
    assert.equal(keyPair.privateKey.extractable, false);
    assert.deepEqual(
      (await client.devices.list()).map((d) => d.deviceId),
      [device.deviceId],
    );

    await client.logout();
    const result = await client.devices.signIn();
    assert.equal(result.authMethod, 'TRUSTED DEVICE');
    assert.equal(result.userId, userId);
    assert.equal(result.tokensStored, true);
    assert.equal((await client.getClaims())?.authentication_method, 'TRUSTED_DEVICE');
    assert.equal((await client.verify()).success, true);
    const used = (await client.devices.list())[0];
    assert.ok(used?.lastUsedAt);
  });

  it('sets a PIN and signs in with PIN + device key; a wrong PIN is invalid_pin', async () => {
    const client = s.client();
    await s.signIn(client, 'pin@example.com');
    await client.devices.register();
    assert.equal(await codeOf(client.pin.set('1234')), 'weak_pin');
    await client.pin.set('4829');
    await client.logout();

    const wrong = await client.pin.signIn('4830').catch((e: unknown) => e);
    assert.ok(wrong instanceof TesseraClientError);
    assert.equal(wrong.code, 'invalid_pin');
    assert.equal(wrong.status, 401);
    assert.ok(!wrong.detail.includes('4830'));
    assert.equal(await client.isSignedIn(), false);

    const result = await client.pin.signIn('4829');
    assert.equal(result.authMethod, 'PIN');
    assert.equal((await client.getClaims())?.authentication_method, 'PIN');
    // Changing the PIN needs the current one once the sign-in is not recent; with it, it works.
    await client.pin.set('5931', '4829');
    await client.logout();
    assert.equal((await client.pin.signIn('5931', { getOAuthToken: false })).tokensStored, false);
    assert.equal(await client.isSignedIn(), false);
  });

  it('without a registered key: no_device_key, and no call to the service', async () => {
    const client = s.client();
    const before = s.calls.length;
    assert.equal(await codeOf(client.devices.signIn()), 'no_device_key');
    assert.equal(await codeOf(client.pin.signIn('4829')), 'no_device_key');
    assert.equal(s.calls.length, before);
    assert.equal(await client.devices.currentId(), null);
  });

  it('removing this device forgets its key; a device removed elsewhere is forgotten on first use', async () => {
    const client = s.client();
    await s.signIn(client, 'remove@example.com');
    const device = await client.devices.register();
    await client.devices.remove(device.deviceId);
    assert.equal(await client.devices.currentId(), null);
    assert.equal(await codeOf(client.devices.signIn()), 'no_device_key');

    const other = s.client();
    await s.signIn(other, 'remove2@example.com');
    const mine = await other.devices.register('phone');
    const admin = s.client();
    await s.signIn(admin, 'remove2@example.com');
    await admin.devices.remove(mine.deviceId);
    assert.equal(await codeOf(other.devices.signIn()), 'device_not_found');
    assert.equal(await other.devices.currentId(), null);
    assert.equal(await codeOf(admin.devices.remove(mine.deviceId)), 'device_not_found');
  });

  it('trusting the same device twice registers it once; current() says whether it is still listed', async () => {
    const client = s.client();
    await s.signIn(client, 'twice@example.com');
    assert.equal(await client.devices.current(), null);
    const first = await client.devices.register('Browser');
    const again = await client.devices.register('Browser');
    assert.equal(again.deviceId, first.deviceId, 'the existing registration');
    assert.deepEqual(
      (await client.devices.list()).map((d) => d.deviceId),
      [first.deviceId],
      'no duplicate for one browser',
    );
    assert.equal((await client.devices.current())?.deviceId, first.deviceId);

    // replace: a new key all the same; the earlier registration stays until removed.
    const replaced = await client.devices.register('Browser', { replace: true });
    assert.notEqual(replaced.deviceId, first.deviceId);
    assert.equal(await client.devices.currentId(), replaced.deviceId);
    assert.equal((await client.devices.list()).length, 2);

    // Another user signed in on this browser does not see it as theirs: a device of their own is made.
    await client.logout();
    await s.signIn(client, 'someone-else@example.com');
    assert.equal(await client.devices.current(), null);
    const theirs = await client.devices.register();
    assert.notEqual(theirs.deviceId, replaced.deviceId);
  });

  it('pin.status() says whether a PIN is set', async () => {
    const client = s.client();
    await s.signIn(client, 'pinstatus@example.com');
    assert.deepEqual(await client.pin.status(), { pinSet: false, locked: false, attemptsLeft: 5 });
    await client.devices.register();
    await client.pin.set('4829');
    assert.deepEqual(await client.pin.status(), { pinSet: true, locked: false, attemptsLeft: 5 });
    await client.logout();
    assert.equal(await codeOf(client.pin.status()), 'not_signed_in');
  });
});

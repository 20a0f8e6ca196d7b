// Issue 12: ECDSA verifies a signature (r, s) and its twin (r, n − s) alike, and so does jose.
// Tessera signs with the low s only; the verifier refuses the high twin of a valid token.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createVerifier, type Verifier } from '@tessera/verify';
import { compactVerify, importJWK } from 'jose';
import {
  API_KEY_ID,
  assertRejects,
  type FakeIssuer,
  highS,
  makeKey,
  mintAccessToken,
  NOW,
  otherS,
  type SigningKey,
  startIssuer,
} from './support.ts';

describe('createVerifier: one spelling per signature', () => {
  let key: SigningKey;
  let idp: FakeIssuer;
  let verifier: Verifier;

  before(async () => {
    key = await makeKey('key-1');
    idp = await startIssuer([key]);
    verifier = createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, now: () => NOW });
  });
  after(() => idp.close());

  it('refuses the high-S twin of a valid token, which jose alone accepts', async () => {
    const publicKey = await importJWK(key.publicJwk, 'ES256');
    for (let i = 0; i < 8; i++) {
      const token = await mintAccessToken(key, idp.issuer);
      assert.equal(highS(token), false, 'Tessera issues low-S tokens');
      const twin = otherS(token);
      assert.equal(highS(twin), true);
      await compactVerify(twin, publicKey); // a genuine signature: only the low-S rule refuses it
      const err = await assertRejects(verifier.verify(twin), 'invalid_token', twin);
      assert.equal(err.message, 'The token signature is invalid');
      assert.equal((await verifier.verify(token)).sub, 'usr_8d2f0c');
    }
  });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { counterWentBack, failureReason } from '../../src/modules/biometric/biometric.service.js';

test("passkey failures are told in fixed words: never the library's text, the request or stored state", () => {
  const cases: Array<[unknown, RegExp]> = [
    [
      new Error(
        'Unexpected authentication response origin "https://evil.test<b>", expected one of: https://app.test',
      ),
      /^it comes from an origin the project does not allow$/,
    ],
    [
      new Error('Unexpected registration response challenge "abc", expected "def"'),
      /^it does not answer the challenge/,
    ],
    [new Error('Unexpected RP ID hash'), /another relying party/],
    [new Error('User verification required, but user could not be verified'), /did not verify the user/],
    [new Error('User not present during authentication'), /present/],
    [new Error('Attestation statement did not contain alg (Packed)'), /attestation/],
    [new Error('Invalid signature component length 3, expected 32'), /^its signature is not valid$/],
    [new Error('Response counter value 1 was lower than expected 3'), /^the response is malformed$/],
    [new Error('Unexpected registration response type: webauthn.get<script>'), /^the response is malformed$/],
    // The library choking on a malformed response: a JavaScript error about its own code.
    [
      new TypeError("Cannot read properties of undefined (reading 'signature')"),
      /^the response is malformed$/,
    ],
    [new RangeError('Maximum call stack size exceeded'), /^the response is malformed$/],
    ['not an error', /^the response is malformed$/],
  ];
  for (const [error, expected] of cases) {
    const reason = failureReason(error);
    assert.match(reason, expected, String(error));
    assert.doesNotMatch(reason, /\d|evil|script|app\.test|"/, reason);
  }
});

test('the signature counter must grow unless both sides are zero (WebAuthn §6.1.1)', () => {
  assert.equal(counterWentBack(0, 0), false);
  assert.equal(counterWentBack(11, 10), false);
  assert.equal(counterWentBack(1, 0), false);
  assert.equal(counterWentBack(10, 10), true);
  assert.equal(counterWentBack(3, 10), true);
  assert.equal(counterWentBack(0, 10), true);
});

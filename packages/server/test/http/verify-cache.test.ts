import assert from 'node:assert/strict';
import { test } from 'node:test';
import { VerifyReasons } from '@tessera/core';
import { cachedTokenBytes } from '../../src/modules/verify/verified-tokens.js';
import { VerifyService } from '../../src/modules/verify/verify.service.js';
import { decodeJwt, signJwt } from '../../src/tokens/jwt.js';
import { startServer } from '../helpers/harness.js';

/** A user and a live session of theirs, as `TokenService.bundle` takes them. */
function fixtures(projectId: string, identifier: string, now: number) {
  const user = {
    id: 'u1',
    project_id: projectId,
    identifier,
    identifier_type: 'email' as const,
    client_user_id: null,
    created_at: now,
    last_sign_in_at: now,
  };
  const session = {
    id: 's1',
    project_id: projectId,
    user_id: user.id,
    auth_method: 'OTP',
    auth_time: now,
    device_id: null,
    passkey_id: null,
    created_at: now,
    expires_at: now + 3_600_000,
    last_refreshed_at: null,
    revoked_at: null,
    revoked_reason: null,
    client_id: null,
    scope: null,
    resource: null,
  };
  return { user, session };
}

/** A VerifyService on the server's own collaborators, with its own clock and cache budget. */
function serviceOf(server: Awaited<ReturnType<typeof startServer>>, now: () => number, maxBytes: number) {
  const { config, keys, projects, revocations } = server.ctx;
  return new VerifyService(config.issuer, 0, keys, projects, revocations, now, maxBytes);
}

test('the verified-token cache stays within TESSERA_VERIFY_CACHE_MB, evicting the oldest tokens', async () => {
  const server = await startServer('sqlite', { env: { TESSERA_VERIFY_CACHE_MB: '1' } });
  try {
    const project = (await server.ctx.projects.list())[0]!;
    const now = Date.now();
    const { user, session } = fixtures(project.id, 'cache@example.com', now);
    const tokens: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const bundle = await server.ctx.tokens.bundle(project, user, session, 'tsr_x', {});
      tokens.push(bundle.access_token);
      // Cached from its second verification on.
      assert.equal(typeof (await server.ctx.verify.authentic(bundle.access_token)), 'object');
      assert.equal(typeof (await server.ctx.verify.authentic(bundle.access_token)), 'object');
    }
    const { entries, bytes } = server.ctx.verify.cacheSize;
    assert.ok(bytes <= 1024 * 1024, `cache holds ${bytes} bytes`);
    assert.equal(entries, Math.floor((1024 * 1024) / cachedTokenBytes(tokens[0]!)));
    assert.ok(entries < tokens.length, 'nothing was evicted');
    // Evicted tokens still verify (by signature again); the cache keeps its bound.
    assert.equal(typeof (await server.ctx.verify.authentic(tokens[0]!)), 'object');
    assert.ok(server.ctx.verify.cacheSize.bytes <= 1024 * 1024);
  } finally {
    await server.close();
  }
});

test('an expired token leaves the cache with its bytes: expired tokens presented again do not shrink it', async () => {
  const server = await startServer('sqlite');
  try {
    const project = (await server.ctx.projects.list())[0]!;
    const now = Date.now();
    const { user, session } = fixtures(project.id, 'expired@example.com', now);
    const { access_token: token } = await server.ctx.tokens.bundle(project, user, session, 'tsr_x', {});
    let clock = now;
    // The server's own collaborators, with a clock this test moves; a 4 KB budget (two tokens).
    const verify = serviceOf(server, () => clock, 4096);
    const claims = await server.ctx.verify.authentic(token);
    assert.deepEqual(await verify.verify(token, project.api_key_id), { success: true, claims });
    assert.deepEqual(verify.cacheSize, { entries: 0, bytes: 0 }, 'cached on its first verification');
    assert.deepEqual(await verify.verify(token, project.api_key_id), { success: true, claims });
    assert.deepEqual(verify.cacheSize, { entries: 1, bytes: cachedTokenBytes(token) });
    clock = now + 2 * 3_600_000; // past its expiry
    for (let i = 0; i < 10; i++) {
      assert.deepEqual(await verify.verify(token, project.api_key_id), {
        success: false,
        reason: VerifyReasons.expired,
      });
      assert.deepEqual(verify.cacheSize, { entries: 0, bytes: 0 });
    }
  } finally {
    await server.close();
  }
});

test('a token is cached from its second verification, and a flood of tokens used once does not evict it', async () => {
  const server = await startServer('sqlite');
  try {
    const project = (await server.ctx.projects.list())[0]!;
    const now = Date.now();
    const { user, session } = fixtures(project.id, 'flood@example.com', now);
    const mint = async () =>
      (await server.ctx.tokens.bundle(project, user, session, 'tsr_x', {})).access_token;
    const hot = await mint();
    // A 64 KB budget: room for about 40 tokens.
    const verify = serviceOf(server, Date.now, 64 * 1024);
    assert.equal((await verify.verify(hot, project.api_key_id)).success, true);
    assert.equal(verify.cacheSize.entries, 0);
    assert.equal((await verify.verify(hot, project.api_key_id)).success, true);
    assert.equal(verify.cacheSize.entries, 1);
    assert.equal((await verify.verify(hot, project.api_key_id)).success, true);

    // 200 distinct tokens, each verified once: far more than the budget holds, none cached.
    for (let i = 0; i < 200; i++)
      assert.equal((await verify.verify(await mint(), project.api_key_id)).success, true);
    assert.deepEqual(
      verify.cacheSize,
      { entries: 1, bytes: cachedTokenBytes(hot) },
      'the token in use was evicted',
    );
    assert.equal((await verify.verify(hot, project.api_key_id)).success, true);
  } finally {
    await server.close();
  }
});

test('a forged token that ends like a cached one is checked in full and refused', async () => {
  const server = await startServer('sqlite');
  try {
    const project = (await server.ctx.projects.list())[0]!;
    const { user, session } = fixtures(project.id, 'forged@example.com', Date.now());
    const token = (await server.ctx.tokens.bundle(project, user, session, 'tsr_x', {})).access_token;
    const verify = server.ctx.verify;
    await verify.verify(token, project.api_key_id);
    await verify.verify(token, project.api_key_id);
    const before = verify.cacheSize;
    assert.equal(before.entries >= 1, true);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const forgedPayload = Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString(
      'base64url',
    );
    const forged = `${header}.${forgedPayload}.${signature}`;
    assert.deepEqual(await verify.verify(forged, project.api_key_id), {
      success: false,
      reason: VerifyReasons.invalid,
    });
    assert.deepEqual(verify.cacheSize, before);
    assert.equal((await verify.verify(token, project.api_key_id)).success, true);
  } finally {
    await server.close();
  }
});

test('an expired token is never cached: presenting it again and again evicts no live token', async () => {
  const server = await startServer('sqlite');
  try {
    const project = (await server.ctx.projects.list())[0]!;
    const now = Date.now();
    const { user, session } = fixtures(project.id, 'stale@example.com', now);
    const live = (await server.ctx.tokens.bundle(project, user, session, 'tsr_x', {})).access_token;
    // The same claims, signed by the server's key, expired an hour ago.
    const decoded = decodeJwt(live)!;
    const iat = Math.floor(now / 1000) - 7200;
    const expired = signJwt(
      decoded.header,
      { ...decoded.payload, iat, exp: iat + 3600 },
      server.ctx.keys.signingKey().privateKey,
    );
    // Room for one token: caching the expired one would evict the live one.
    const verify = serviceOf(server, Date.now, cachedTokenBytes(live) + 16);
    await verify.verify(live, project.api_key_id);
    await verify.verify(live, project.api_key_id);
    assert.deepEqual(verify.cacheSize, { entries: 1, bytes: cachedTokenBytes(live) });
    for (let i = 0; i < 6; i++) {
      assert.deepEqual(await verify.verify(expired, project.api_key_id), {
        success: false,
        reason: VerifyReasons.expired,
      });
      assert.deepEqual(verify.cacheSize, { entries: 1, bytes: cachedTokenBytes(live) }, `after ${i + 1}`);
    }
  } finally {
    await server.close();
  }
});

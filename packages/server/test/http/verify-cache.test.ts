import assert from 'node:assert/strict';
import { test } from 'node:test';
import { VerifyReasons } from '@tessera/core';
import { cachedTokenBytes, VerifyService } from '../../src/modules/verify/verify.service.js';
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
  };
  return { user, session };
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
    const verify = new VerifyService(
      server.ctx.config.issuer,
      0,
      server.ctx.keys,
      server.ctx.projects,
      server.ctx.revocations,
      () => clock,
      4096,
    );
    assert.deepEqual(await verify.verify(token, project.api_key_id), {
      success: true,
      claims: await server.ctx.verify.authentic(token),
    });
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

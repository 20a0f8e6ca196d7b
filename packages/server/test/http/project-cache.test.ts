import assert from 'node:assert/strict';
import { test } from 'node:test';
import { VerifyReasons } from '@tessera/core';
import { randomToken } from '../../src/crypto/random.js';
import { UNKNOWN_IDS_CACHED } from '../../src/modules/projects/project-cache.js';
import type { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { RELAXED_LIMITS, startServer } from '../helpers/harness.js';

test('a flood of random API_KEY_IDs is refused 401 unknown_api_key and does not push a real project out of memory', async () => {
  const now = Date.now();
  const server = await startServer('sqlite', { env: RELAXED_LIMITS, now: () => now });
  try {
    const bundle = await server.signIn('flood@example.com');
    const verify = (apiKeyId: string) =>
      server.app.inject({
        method: 'POST',
        url: '/verify',
        headers: { api_key_id: apiKeyId },
        payload: { oauth_token: { access_token: bundle.access_token } },
      });
    assert.equal((await verify(server.project.api_key_id)).json().success, true);

    // Count the project reads from here on.
    const repository = (server.ctx.projects as unknown as { repository: ProjectsRepository }).repository;
    const findByApiKeyId = repository.findByApiKeyId.bind(repository);
    let reads = 0;
    repository.findByApiKeyId = (apiKeyId) => {
      reads++;
      return findByApiKeyId(apiKeyId);
    };

    const flood = 12_000; // more than the old cache held before it emptied itself
    for (let i = 0; i < flood; i++) {
      const answer = await server.app.inject({
        method: 'POST',
        url: '/v1/auth/otp/start',
        headers: { api_key_id: `pk_${randomToken(16)}` },
        payload: { identifier: 'flood@example.com' },
      });
      if (answer.statusCode !== 401 || answer.json().code !== 'unknown_api_key')
        assert.fail(`answer ${i}: ${answer.statusCode} ${answer.body}`);
    }
    assert.equal(reads, flood, 'one read per unknown id');
    for (const malformed of ['pk_ bad', 'pk_<script>', 'pk_1;drop']) {
      const answer = await server.app.inject({
        method: 'POST',
        url: '/v1/auth/otp/start',
        headers: { api_key_id: malformed },
        payload: { identifier: 'flood@example.com' },
      });
      assert.equal(answer.statusCode, 401);
      assert.equal(answer.json().code, 'unknown_api_key');
    }
    assert.equal(reads, flood, 'a malformed id is refused without a read');
    // /verify compares API_KEY_ID with the token's audience: a random one is the wrong audience.
    const wrong = await verify(`pk_${randomToken(16)}`);
    assert.equal(wrong.statusCode, 200);
    assert.deepEqual(wrong.json(), { success: false, reason: VerifyReasons.wrongAudience });

    // The real project is still answered from memory, by /verify and by its app-facing routes.
    assert.equal((await verify(server.project.api_key_id)).json().success, true);
    const started = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: 'flood2@example.com' },
      headers: { api_key_id: server.project.api_key_id },
    });
    assert.equal(started.status, 200, started.text);
    assert.equal(reads, flood, 'the real project was not read again');
    assert.equal(server.ctx.projects.cacheSizes().unknown, UNKNOWN_IDS_CACHED);
  } finally {
    await server.close();
  }
});

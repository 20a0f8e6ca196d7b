import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sha256 } from '../../../src/crypto/hash.js';
import { connect } from '../../../src/db/connect.js';
import { assertOneLineError, cliDatabase, run } from '../../helpers/cli.js';
import { eachDialect } from '../../helpers/harness.js';

/** The client id in `clients create`'s text output. */
const spaId = (stdout: string) => /client id: +(\S+)/.exec(stdout)![1]!;

/** `tessera clients …`: a project's OAuth clients from the command line (issue 31). */
eachDialect('tessera clients', (dialect) => {
  test('create (secret shown once, hashed at rest), list, show, refusals naming the field, delete', async () => {
    const database = await cliDatabase(dialect);
    try {
      const { env } = database;
      const project = await run(['projects', 'create', '--name', 'acme', '--json'], env);
      assert.equal(project.code, 0, project.stderr);
      const created = await run(
        [
          'clients',
          'create',
          'acme',
          '--name',
          'Acme web',
          '--redirect-uri',
          'https://app.acme.example/cb',
          '--post-logout-redirect-uri',
          'https://app.acme.example/',
          '--json',
        ],
        env,
      );
      assert.equal(created.code, 0, created.stderr);
      const client = JSON.parse(created.stdout);
      assert.match(client.client_id, /^tc_/);
      assert.match(client.client_secret, /^tcs_/);
      const spa = await run(
        [
          'clients',
          'create',
          'acme',
          '--name',
          'SPA',
          '--public',
          '--first-party',
          '--redirect-uri',
          'http://127.0.0.1/cb',
          '--redirect-uri',
          'com.acme.app:/cb',
        ],
        env,
      );
      assert.equal(spa.code, 0, spa.stderr);
      assert.match(spa.stdout, /authentication: +none \(public, PKCE\)/);
      assert.doesNotMatch(spa.stdout, /client secret/);
      const list = await run(['clients', 'list', 'acme', '--json'], env);
      assert.equal(JSON.parse(list.stdout).clients.length, 2);
      assert.doesNotMatch(list.stdout, /tcs_/);
      const shown = await run(['clients', 'show', 'acme', client.client_id], env);
      assert.match(shown.stdout, /redirect URIs: +https:\/\/app\.acme\.example\/cb/);
      assert.doesNotMatch(shown.stdout, /tcs_/);
      assertOneLineError(
        await run(
          ['clients', 'create', 'acme', '--name', 'Bad', '--redirect-uri', 'http://evil.example/cb'],
          env,
        ),
        2,
        /redirect_uris\[0\]: an http redirect URI must be on loopback/,
      );
      assertOneLineError(
        await run(['clients', 'show', 'nope', client.client_id], env),
        2,
        /no project named nope/,
      );
      const db = await connect(env.TESSERA_DATABASE_URL!);
      try {
        const row = await db.kysely
          .selectFrom('oauth_clients')
          .select('secret_hash')
          .where('client_id', '=', client.client_id)
          .executeTakeFirstOrThrow();
        assert.equal(row.secret_hash, sha256(client.client_secret));
      } finally {
        await db.close();
      }
      const rotated = await run(['clients', 'rotate-secret', 'acme', client.client_id, '--json'], env);
      assert.equal(rotated.code, 0, rotated.stderr);
      const newSecret = JSON.parse(rotated.stdout).client_secret;
      assert.match(newSecret, /^tcs_/);
      assert.notEqual(newSecret, client.client_secret);
      assertOneLineError(
        await run(['clients', 'rotate-secret', 'acme', spaId(spa.stdout)], env),
        2,
        /a public client has no secret to rotate/,
      );
      const deleted = await run(['clients', 'delete', 'acme', client.client_id], env);
      assert.equal(deleted.code, 0, deleted.stderr);
      assertOneLineError(
        await run(['clients', 'show', 'acme', client.client_id], env),
        2,
        /no client with that client_id/,
      );
      // Each change is in the project's audit log (and so its webhooks), by the CLI.
      const audit = await connect(env.TESSERA_DATABASE_URL!);
      try {
        const rows = await audit.kysely
          .selectFrom('audit_events')
          .select(['type', 'data'])
          .where('type', 'like', 'client.%')
          .orderBy('created_at', 'asc')
          .orderBy('id', 'asc')
          .execute();
        const events = rows.map((r) => ({ type: r.type, data: JSON.parse(r.data) }));
        assert.deepEqual(
          events.filter((e) => e.data.client_id === client.client_id),
          [
            { type: 'client.created', data: { client_id: client.client_id, by: 'cli' } },
            { type: 'client.secret_rotated', data: { client_id: client.client_id, by: 'cli' } },
            { type: 'client.deleted', data: { client_id: client.client_id, by: 'cli' } },
          ],
        );
        assert.equal(events.filter((e) => e.type === 'client.created').length, 2);
      } finally {
        await audit.close();
      }
    } finally {
      await database.cleanup();
    }
  });
});

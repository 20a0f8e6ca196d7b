import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { MasterKey } from '../../src/crypto/master-key.js';
import { KeyStore } from '../../src/keys/key-store.js';
import { createLogger } from '../../src/logger.js';
import { DevOutbox } from '../../src/modules/otp/delivery/dev-outbox.js';
import { createStorage, eachDialect } from '../helpers/harness.js';

eachDialect('shutdown', (dialect) => {
  test('a request whose client went away during shutdown finishes before storage closes (regression: a 500 at shutdown)', async () => {
    const storage = await createStorage(dialect);
    try {
      const config = loadConfig({
        TESSERA_ENV: 'test',
        TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
        TESSERA_DATA_DIR: tmpdir(),
        TESSERA_LOG_LEVEL: 'silent',
      });
      const logger = createLogger(config.logLevel);
      const master = MasterKey.parse(config.masterKey!);
      const keys = new KeyStore(storage.db, master.derive('signing-key-encryption'));
      await keys.init();
      const { app } = await buildApp(config, {
        db: storage.db,
        keys,
        masterKey: master,
        delivery: new DevOutbox({}, logger),
        logger,
      });
      const { kysely } = storage.db;
      await sql`create table shutdown_probe (n integer not null)`.execute(kysely);
      // A handler's chain of statements, a few milliseconds apart: still going when the client
      // leaves and the server shuts down.
      let work: Promise<number> | undefined;
      let clientGone: Promise<unknown> | undefined;
      let started!: () => void;
      const handlerStarted = new Promise<void>((resolve) => {
        started = resolve;
      });
      app.get('/test/slow', async (_request, reply) => {
        clientGone = new Promise((resolve) => reply.raw.once('close', resolve));
        work = (async () => {
          for (let i = 0; i < 5; i++) {
            await sql`insert into shutdown_probe (n) values (${i})`.execute(kysely);
            await sleep(10);
          }
          const { rows } = await sql<{ n: number }>`select count(*) as n from shutdown_probe`.execute(kysely);
          return Number(rows[0]!.n);
        })();
        started();
        return { n: await work };
      });
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;

      // A client that goes away: its connection closes while the handler runs.
      const client = get({ host: '127.0.0.1', port, path: '/test/slow', agent: false });
      client.on('error', () => {});
      await handlerStarted;
      client.destroy();
      await clientGone; // the server saw the connection close
      // main.ts's shutdown: close the app, then storage.
      await app.close();
      await storage.db.close();
      assert.equal(await work, 5);
    } finally {
      await storage.cleanup();
    }
  });
});

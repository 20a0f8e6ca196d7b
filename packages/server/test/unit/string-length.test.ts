import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { codeUnitLengths } from '../../src/http/string-length.js';

async function appWith(plugins: Array<typeof codeUnitLengths>) {
  const app = Fastify({ ajv: { plugins } });
  app.post(
    '/',
    {
      schema: {
        body: {
          type: 'object',
          properties: { name: { type: 'string', minLength: 2, maxLength: 4 } },
          required: ['name'],
        },
      },
    },
    async () => ({ ok: true }),
  );
  await app.ready();
  return app;
}

const post = (app: Awaited<ReturnType<typeof appWith>>, name: string) =>
  app.inject({ method: 'POST', url: '/', payload: { name } });

test('maxLength and minLength count UTF-16 code units, with the messages Ajv gives', async () => {
  const app = await appWith([codeUnitLengths]);
  try {
    assert.equal((await post(app, 'abcd')).statusCode, 200);
    assert.equal((await post(app, 'ab')).statusCode, 200);
    const long = await post(app, 'abcde');
    assert.equal(long.statusCode, 400);
    assert.match(long.json().message, /body\/name must NOT have more than 4 characters/);
    const short = await post(app, 'a');
    assert.equal(short.statusCode, 400);
    assert.match(short.json().message, /body\/name must NOT have fewer than 2 characters/);
    // Three emoji: three code points, six code units.
    assert.equal((await post(app, '\u{1F600}'.repeat(3))).statusCode, 400);
    // One emoji: one code point, two code units.
    assert.equal((await post(app, '\u{1F600}')).statusCode, 200);
  } finally {
    await app.close();
  }
});

test('without the plugin Ajv counts code points (what the plugin changes)', async () => {
  const app = await appWith([]);
  try {
    assert.equal((await post(app, '\u{1F600}'.repeat(3))).statusCode, 200);
    assert.equal((await post(app, '\u{1F600}')).statusCode, 400);
  } finally {
    await app.close();
  }
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientIdUrl, MetadataDocumentError } from '../../src/modules/clients/metadata-document.js';
import {
  cacheLifetime,
  DEFAULT_CACHE_MS,
  FAILURE_CACHE_MS,
  MAX_CACHE_MS,
  MAX_FETCHES,
  MAX_FETCHES_PER_HOST,
  MetadataDocuments,
  MIN_CACHE_MS,
} from '../../src/modules/clients/metadata-documents.js';

const URL_ID = 'https://client.example/oauth/client.json';
const POLICY = { allowHttp: false, allowPrivate: false, timeoutMs: 5000, maxBytes: 5120 };
const document = (clientId = URL_ID) => ({
  client_id: clientId,
  redirect_uris: ['https://client.example/cb'],
});

test('Cache-Control is honoured within bounds', () => {
  assert.equal(cacheLifetime(undefined), DEFAULT_CACHE_MS);
  assert.equal(cacheLifetime('public'), DEFAULT_CACHE_MS);
  assert.equal(cacheLifetime('max-age=600'), 600_000);
  assert.equal(cacheLifetime('public, s-maxage=900'), 900_000);
  assert.equal(cacheLifetime('max-age=1'), MIN_CACHE_MS);
  assert.equal(cacheLifetime('max-age=0'), MIN_CACHE_MS);
  assert.equal(cacheLifetime('no-store'), MIN_CACHE_MS);
  assert.equal(cacheLifetime('No-Cache, max-age=600'), MIN_CACHE_MS);
  assert.equal(cacheLifetime('max-age=31536000'), MAX_CACHE_MS);
  assert.equal(cacheLifetime('max-age=abc'), DEFAULT_CACHE_MS);
});

test('a client id URL: https, a path, its normal form, no user-info or fragment', () => {
  assert.equal(clientIdUrl(URL_ID, false).href, URL_ID);
  for (const bad of [
    'http://client.example/client.json',
    'https://client.example',
    'https://client.example/',
    'https://client.example/a/../client.json',
    'https://Client.example/client.json',
    'https://client.example:443/client.json',
    'https://u:p@client.example/client.json',
    'https://client.example/client.json#x',
    `https://client.example/${'a'.repeat(2000)}`,
  ])
    assert.throws(() => clientIdUrl(bad, false), MetadataDocumentError, bad);
  assert.equal(clientIdUrl('http://127.0.0.1:9/c.json', true).port, '9');
});

test('documents are cached for their lifetime, refusals briefly, and one fetch serves concurrent requests', async () => {
  let now = 1_000_000;
  let fetches = 0;
  let answer: () => Promise<{ json: unknown; cacheControl: string | undefined }> = async () => ({
    json: document(),
    cacheControl: 'max-age=120',
  });
  const documents = new MetadataDocuments(
    POLICY,
    () => now,
    async () => {
      fetches++;
      return answer();
    },
  );
  const [a, b] = await Promise.all([documents.get(URL_ID), documents.get(URL_ID)]);
  assert.equal(fetches, 1);
  assert.deepEqual(a, b);
  assert.equal(a.name, 'client.example', 'client_name defaults to the host');
  assert.equal(a.first_party, false);
  now += 119_000;
  await documents.get(URL_ID);
  assert.equal(fetches, 1, 'still fresh');
  now += 2_000;
  answer = async () => ({ json: document('https://other.example/client.json'), cacheControl: undefined });
  await assert.rejects(documents.get(URL_ID), /its client_id is not the URL it was fetched from/);
  assert.equal(fetches, 2);
  answer = async () => ({ json: document(), cacheControl: undefined });
  await assert.rejects(documents.get(URL_ID), /its client_id is not the URL/, 'the refusal is remembered');
  assert.equal(fetches, 2);
  now += FAILURE_CACHE_MS;
  await documents.get(URL_ID);
  assert.equal(fetches, 3);
});

test('fetches at once are bounded per host and in all; past the bound a request is refused, not remembered', async () => {
  const pending: Array<() => void> = [];
  let fetches = 0;
  const documents = new MetadataDocuments(
    POLICY,
    () => 1_000_000,
    (url) => {
      fetches++;
      return new Promise((resolve) => {
        pending.push(() => resolve({ json: document(url.href), cacheControl: undefined }));
      });
    },
  );
  const ids = (host: string, n: number) => Array.from({ length: n }, (_, i) => `https://${host}/c/${i}.json`);
  // One host: MAX_FETCHES_PER_HOST at once, then refusals that fetch nothing.
  const first = ids('flood.example', MAX_FETCHES_PER_HOST).map((id) => documents.get(id));
  await assert.rejects(documents.get('https://flood.example/c/more.json'), /cannot be fetched now/);
  assert.equal(fetches, MAX_FETCHES_PER_HOST);
  // Another host still gets its own.
  const other = documents.get('https://other.example/c.json');
  assert.equal(fetches, MAX_FETCHES_PER_HOST + 1);
  // In all: many hosts together stop at MAX_FETCHES.
  const spread = Array.from({ length: MAX_FETCHES }, (_, i) =>
    documents.get(`https://h${i}.example/c.json`).catch((error: Error) => error),
  );
  assert.equal(fetches, MAX_FETCHES);
  for (const resolve of pending.splice(0)) resolve();
  assert.equal((await Promise.all(first)).length, MAX_FETCHES_PER_HOST);
  await other;
  const refused = (await Promise.all(spread)).filter((r) => r instanceof MetadataDocumentError);
  assert.equal(refused.length, MAX_FETCHES_PER_HOST + 1, 'what came past the bound was refused');
  // The refusal was not remembered: once fetches end, the same client id is fetched.
  const again = documents.get('https://flood.example/c/more.json');
  assert.equal(fetches, MAX_FETCHES + 1);
  pending.splice(0)[0]!();
  assert.equal((await again).name, 'flood.example');
});

import { createExampleServer } from './server.js';

const issuer = process.env.TESSERA_ISSUER ?? 'http://localhost:8080';
const apiKeyId = process.env.TESSERA_API_KEY_ID;
if (!apiKeyId) {
  console.error(
    'example-react: set TESSERA_API_KEY_ID (the project must list http://localhost:3003 as an origin)',
  );
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3003);
const server = await createExampleServer({ issuer, apiKeyId });
server.listen(port, '127.0.0.1', () => console.log(`React example on http://localhost:${port}`));
